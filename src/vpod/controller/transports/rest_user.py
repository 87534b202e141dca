"""The user endpoints under ``/api/v1``: partitions, allocations, IPU attributes, version.

Each handler parses, calls the use-case the gRPC user API calls
(:mod:`.user_grpc`), and renders; errors go through :mod:`.rest_errors`.

No ``from __future__ import annotations`` here or in :mod:`.rest_admin`:
FastAPI reads the handlers' annotations at run time, and the caller
dependency is a local alias it could not resolve from a string.
"""

from typing import Annotated

from fastapi import APIRouter, Depends, Path, Query, Response, status

from ..app import Controller
from ..caller import Caller
from .rest_auth import CallerDependency
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
from .rest_errors import error_responses
from .rest_models import (
    MAX_IPUS,
    AllocationList,
    AllocationOut,
    CreatePartitionBody,
    IpuAttributeList,
    IpuofConfigFile,
    IpuofConfigSet,
    Partition,
    PartitionList,
    PartitionStatus,
    Version,
)

API_PREFIX = "/api/v1"

PartitionIdPath = Annotated[str, Path(description="The partition's id.")]


def user_routes(controller: Controller, user: CallerDependency) -> APIRouter:
    """The user API of one controller; ``user`` authenticates a (non-admin) caller."""
    c = controller
    router = APIRouter(prefix=API_PREFIX)
    AsUser = Annotated[Caller, Depends(user)]  # noqa: N806 - a type alias

    @router.get("/version", tags=["version"], response_model=Version)
    async def get_version() -> Version:
        """The V-IPU API version this controller serves (`vipu --server-version`)."""
        return Version(
            version=c.settings.api_version,
            ipuof_server_version=c.settings.ipuof_server_version,
        )

    # -- partitions

    @router.get(
        "/partitions",
        tags=["partitions"],
        response_model=PartitionList,
        responses=error_responses(400, 401, 404, 503),
    )
    async def list_partitions(
        caller: AsUser,
        allocation: Annotated[
            str | None, Query(description="Only this allocation's partitions.")
        ] = None,
    ) -> PartitionList:
        """Partitions of every allocation the caller may use (`vipu list partitions`)."""
        records = await c.partitions.list_partitions(caller, allocation_id=allocation or None)
        clusters = await c.inventory.list_clusters()
        return PartitionList(
            partitions=partitions_out(records, clusters, c.settings.ipuof_server_version)
        )

    @router.post(
        "/partitions",
        tags=["partitions"],
        response_model=Partition,
        status_code=status.HTTP_201_CREATED,
        responses=error_responses(),
    )
    async def create_partition(
        caller: AsUser, body: CreatePartitionBody, response: Response
    ) -> Partition:
        """Create and configure a partition (`vipu create partition`).

        Repeating an identical request for a partition that is ACTIVE returns it again.
        """
        record = await c.partitions.create(
            caller,
            requirements_of(body),
            disable_auto_reset=body.disable_auto_reset,
            relocatable=body.relocatable,
        )
        cluster = await c.inventory.cluster(record.cluster_id)
        response.headers["Location"] = f"{API_PREFIX}/partitions/{record.id}"
        return partition_out(record, cluster, c.settings.ipuof_server_version)

    @router.get(
        "/partitions/{partition_id}",
        tags=["partitions"],
        response_model=Partition,
        responses=error_responses(401, 404, 503),
    )
    async def get_partition(caller: AsUser, partition_id: PartitionIdPath) -> Partition:
        """One partition: its spec, state and IPUs (`vipu get partition`)."""
        record = await c.partitions.get(caller, partition_id)
        cluster = await c.inventory.cluster(record.cluster_id)
        return partition_out(record, cluster, c.settings.ipuof_server_version)

    @router.delete(
        "/partitions/{partition_id}",
        tags=["partitions"],
        status_code=204,
        response_class=Response,
        responses=error_responses(400, 401, 404, 409, 503),
    )
    async def remove_partition(
        caller: AsUser,
        partition_id: PartitionIdPath,
        force: Annotated[bool, Query(description="Ignore agent errors while removing.")] = False,
    ) -> Response:
        """Remove a partition and free its IPUs (`vipu remove partition [--force]`)."""
        await c.partitions.remove(caller, partition_id, force=force)
        return Response(status_code=204)

    @router.post(
        "/partitions/{partition_id}/reset",
        tags=["partitions"],
        status_code=204,
        response_class=Response,
        responses=error_responses(400, 401, 404, 409, 503),
    )
    async def reset_partition(
        caller: AsUser,
        partition_id: PartitionIdPath,
        relocatable: Annotated[
            bool, Query(description="Make the partition relocatable from now on.")
        ] = False,
    ) -> Response:
        """Put the partition's IPUs back into their initial state (`vipu reset partition`)."""
        await c.partitions.reset(caller, partition_id, relocatable=relocatable)
        return Response(status_code=204)

    @router.get(
        "/partitions/{partition_id}/status",
        tags=["partitions"],
        response_model=PartitionStatus,
        responses=error_responses(401, 404, 503),
    )
    async def get_partition_status(
        caller: AsUser, partition_id: PartitionIdPath
    ) -> PartitionStatus:
        """Ready and operation state, errors and auto-reset counters."""
        return status_out(await c.partitions.get(caller, partition_id))

    @router.get(
        "/partitions/{partition_id}/ipuof-config",
        tags=["partitions"],
        response_model=IpuofConfigFile | IpuofConfigSet,
        responses=error_responses(400, 401, 404, 409, 503),
    )
    async def get_ipuof_config(
        caller: AsUser,
        partition_id: PartitionIdPath,
        response: Response,
        gcd: Annotated[
            int | None,
            Query(ge=0, le=MAX_IPUS, description="One GCD: the body is that GCD's file."),
        ] = None,
    ) -> IpuofConfigFile | IpuofConfigSet:
        """IPUoF config files of an ACTIVE partition (`vipu get partition --ipuof-configs`).

        With `gcd=N` the body is exactly the file `<partition>_gcd<N>.conf` to put in
        `~/.ipuof.conf.d/`; without, every GCD's file by name.
        """
        record = await c.partitions.get(caller, partition_id)
        config = await c.views.ipuof_config(record, gcd)
        if gcd is None:
            return ipuof_set(record.id, config)
        ((name, content),) = ipuof_files(record.id, config).items()
        response.headers["Content-Disposition"] = f'inline; filename="{name}"'
        return content

    # -- allocations and IPUs

    @router.get(
        "/allocations",
        tags=["allocations"],
        response_model=AllocationList,
        responses=error_responses(401, 503),
    )
    async def list_allocations(
        caller: AsUser,
        cluster: Annotated[str | None, Query(description="Only this cluster's.")] = None,
    ) -> AllocationList:
        """The allocations the caller may use (`vipu list allocations`)."""
        return AllocationList(allocations=await allocation_list(c, caller, cluster or None))

    @router.get(
        "/ipu-attributes",
        tags=["allocations"],
        response_model=IpuAttributeList,
        responses=error_responses(401, 404, 503),
    )
    async def list_ipu_attributes(
        caller: AsUser,
        agent: Annotated[
            list[str] | None, Query(description="Only these agents (repeat the parameter).")
        ] = None,
    ) -> IpuAttributeList:
        """Attributes of every IPU the caller may see (`vipu list ipu-attrs`)."""
        attributes = await c.views.ipu_attributes(caller, agent or [])
        return IpuAttributeList(agents=attributes_out(attributes))

    return router


async def allocation_list(
    c: Controller, caller: Caller, cluster_id: str | None
) -> list[AllocationOut]:
    """Allocations the caller may use, with users and partition counts (as gRPC shows them)."""
    allocations = [
        a for a in await c.inventory.list_allocations(cluster_id) if caller.may_use(a.id)
    ]
    clusters = await c.inventory.list_clusters()
    users = await c.inventory.list_users() if caller.admin or not c.settings.secure else []
    counts: dict[str, int] = {}
    for record in await c.partitions.list_partitions(caller):
        counts[record.allocation_id] = counts.get(record.allocation_id, 0) + 1
    return allocations_out(allocations, clusters, users, counts)
