"""The user endpoints under ``/api/v1``: partitions, allocations, IPU attributes, version.

Each handler parses, calls the use-case the gRPC user API calls
(:mod:`.user_grpc`), and renders; errors go through :mod:`.rest_errors`.
The router is module-level: each handler takes the use-cases it calls as
FastAPI dependencies (:mod:`.rest_deps`) and its caller from :mod:`.rest_auth`.
"""

from typing import Annotated

from fastapi import APIRouter, Path, Query, Response

from vpod.wire.rest.allocations import AllocationList
from vpod.wire.rest.fields import MAX_IPUS
from vpod.wire.rest.ipu_attributes import IpuAttributeList
from vpod.wire.rest.ipuof import IpuofConfigFile, IpuofConfigSet
from vpod.wire.rest.partitions import CreatePartitionBody, Partition, PartitionList, PartitionStatus
from vpod.wire.rest.version import Version

from .rest_auth import AsUser
from .rest_convert import (
    allocations_out,
    attributes_out,
    ipuof_files,
    ipuof_set,
    partition_out,
    partitions_out,
    requirements_of,
    status_out,
)
from .rest_deps import InventoryDep, ListingsDep, PartitionsDep, SettingsDep, ViewsDep
from .rest_routes import Routes

API_PREFIX = "/api/v1"

PartitionIdPath = Annotated[str, Path(description="The partition's id.")]
ClusterQuery = Annotated[str | None, Query(description="Only this cluster's.")]
"""A listing's filter by cluster (the user API's and the admin API's)."""

router = APIRouter(prefix=API_PREFIX)
"""The user API (``create_http_app`` includes it)."""

partition_routes = Routes(router, "partitions")
allocation_routes = Routes(router, "allocations")


@router.get("/version", tags=["version"])
async def get_version(settings: SettingsDep) -> Version:
    """The V-IPU API version this controller serves (`vipu --server-version`)."""
    return Version(
        version=settings.api_version,
        ipuof_server_version=settings.ipuof_server_version,
    )


# -- partitions


@partition_routes.get("/partitions", 400, 401, 404, 503)
async def list_partitions(
    caller: AsUser,
    listings: ListingsDep,
    settings: SettingsDep,
    allocation: Annotated[
        str | None, Query(description="Only this allocation's partitions.")
    ] = None,
) -> PartitionList:
    """Partitions of every allocation the caller may use (`vipu list partitions`)."""
    rows = await listings.partitions(caller, allocation_id=allocation or None)
    return PartitionList(partitions=partitions_out(rows, settings.ipuof_server_version))


@partition_routes.creates("/partitions")
async def create_partition(
    caller: AsUser,
    body: CreatePartitionBody,
    response: Response,
    partitions: PartitionsDep,
    inventory: InventoryDep,
    settings: SettingsDep,
) -> Partition:
    """Create and configure a partition (`vipu create partition`).

    Repeating an identical request for a partition that is ACTIVE returns it again.
    """
    record = await partitions.create(
        caller,
        requirements_of(body),
        disable_auto_reset=body.disable_auto_reset,
        relocatable=body.relocatable,
    )
    cluster = await inventory.cluster(record.cluster_id)
    response.headers["Location"] = f"{API_PREFIX}/partitions/{record.id}"
    return partition_out(record, cluster, settings.ipuof_server_version)


@partition_routes.get("/partitions/{partition_id}", 401, 404, 503)
async def get_partition(
    caller: AsUser,
    partition_id: PartitionIdPath,
    partitions: PartitionsDep,
    inventory: InventoryDep,
    settings: SettingsDep,
    views: ViewsDep,
) -> Partition:
    """One partition: its spec, state and IPUs (`vipu get partition`)."""
    record = await views.status(await partitions.get(caller, partition_id))
    cluster = await inventory.cluster(record.cluster_id)
    return partition_out(record, cluster, settings.ipuof_server_version)


@partition_routes.no_content("delete", "/partitions/{partition_id}", 400, 401, 404, 409, 503)
async def remove_partition(
    caller: AsUser,
    partition_id: PartitionIdPath,
    partitions: PartitionsDep,
    force: Annotated[bool, Query(description="Ignore agent errors while removing.")] = False,
) -> None:
    """Remove a partition and free its IPUs (`vipu remove partition [--force]`)."""
    await partitions.remove(caller, partition_id, force=force)


@partition_routes.no_content("post", "/partitions/{partition_id}/reset", 400, 401, 404, 409, 503)
async def reset_partition(
    caller: AsUser,
    partition_id: PartitionIdPath,
    partitions: PartitionsDep,
    relocatable: Annotated[
        bool, Query(description="Make the partition relocatable from now on.")
    ] = False,
) -> None:
    """Put the partition's IPUs back into their initial state (`vipu reset partition`)."""
    await partitions.reset(caller, partition_id, relocatable=relocatable)


@partition_routes.get("/partitions/{partition_id}/status", 401, 404, 503)
async def get_partition_status(
    caller: AsUser, partition_id: PartitionIdPath, partitions: PartitionsDep, views: ViewsDep
) -> PartitionStatus:
    """Ready and operation state, errors (naming any agent that cannot be reached) and
    auto-reset counters."""
    return status_out(await views.status(await partitions.get(caller, partition_id)))


@partition_routes.get("/partitions/{partition_id}/ipuof-config", 400, 401, 404, 409, 503)
async def get_ipuof_config(
    caller: AsUser,
    partition_id: PartitionIdPath,
    response: Response,
    partitions: PartitionsDep,
    views: ViewsDep,
    gcd: Annotated[
        int | None,
        Query(ge=0, le=MAX_IPUS, description="One GCD: the body is that GCD's file."),
    ] = None,
) -> IpuofConfigFile | IpuofConfigSet:
    """IPUoF config files of an ACTIVE partition (`vipu get partition --ipuof-configs`).

    With `gcd=N` the body is exactly the file `<partition>_gcd<N>.conf` to put in
    `~/.ipuof.conf.d/`; without, every GCD's file by name.
    """
    record = await partitions.get(caller, partition_id)
    config = await views.ipuof_config(record, gcd)
    if gcd is None:
        return ipuof_set(record.id, config)
    ((name, content),) = ipuof_files(record.id, config).items()
    response.headers["Content-Disposition"] = f'inline; filename="{name}"'
    return content


# -- allocations and IPUs


@allocation_routes.get("/allocations", 400, 401, 503)
async def list_allocations(
    caller: AsUser, listings: ListingsDep, cluster: ClusterQuery = None
) -> AllocationList:
    """The allocations the caller may use (`vipu list allocations`)."""
    return allocations_out(await listings.allocations(caller, cluster or None))


@allocation_routes.get("/ipu-attributes", 400, 401, 404, 503)
async def list_ipu_attributes(
    caller: AsUser,
    views: ViewsDep,
    agent: Annotated[
        list[str] | None, Query(description="Only these agents (repeat the parameter).")
    ] = None,
) -> IpuAttributeList:
    """Attributes of every IPU the caller may see (`vipu list ipu-attrs`)."""
    return attributes_out(await views.ipu_attributes(caller, agent or []))
