"""Cluster use-cases: check a request, record it with its task, hand the task to the runner.

Every mutating call validates what it can without touching anything (name,
flavor, image, volumes, state), checks quotas and capacity, then records in
one transaction the cluster's new state and a NEW task that claims the
cluster; the runner does the work (see ``operations/``). The call returns
the task. A project sees only its own clusters: another project's cluster
is "not found", whether or not it exists.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from ..flavors import Flavor, check_image, find_flavor
from ..metering import cluster_entry
from ..model import errors
from ..model.records import Cluster, Server, Task, Volume
from ..model.results import ClusterChange
from ..model.task_params import (
    ClusterParams,
    CreateParams,
    DeleteParams,
    RebuildParams,
    ResizeParams,
    SetMetadataParams,
)
from ..quotas import (
    Exceeded,
    admit_within,
    check_limits,
    cluster_demand,
    server_demand,
)
from ..states import (
    ALLOWED_FROM,
    STATUS_DURING,
    ClusterStatus,
    Operation,
    ServerStatus,
    TaskState,
    VolumeStatus,
)
from ..states import check_operation as check_state
from ..validation import (
    BOOT_VOLUME_DEFAULT_GIB,
    check_distinct_volume_names,
    check_interfaces,
    check_metadata,
    check_name,
    check_server_count,
    check_volume_size,
    check_volume_type,
    network_cidr,
)
from .capacity import Capacity
from .cluster_views import ClusterViews
from .context import CloudContext
from .projects import Principal, in_project
from .ssh_ports import SshPorts, assign_ports, require_ports
from .tasks import new_task
from .volumes import new_volume


@dataclass(frozen=True)
class NewVolume:
    name: str
    size_gib: int
    volume_type: str = "standard"


@dataclass(frozen=True)
class ClusterRequest:
    name: str
    flavor: str
    image: str | None = None
    server_count: int | None = None
    interfaces: Sequence[Mapping[str, str]] | None = None
    new_volumes: Sequence[NewVolume] = ()
    attach_volumes: Sequence[str] = ()
    """Ids or names of the project's available volumes."""
    boot_volume_gib: int = BOOT_VOLUME_DEFAULT_GIB
    metadata: Mapping[str, str] = field(default_factory=dict)
    dataset_storage_id: str | None = None
    """The project's dataset storage to give the servers (checked by ``Datasets``)."""
    dataset_mount: str | None = None
    keypairs: Sequence[str] = ()
    """Ids or names of the project's keypairs that may log in to its servers."""


# Claim rules: the statuses the store accepts per operation (idempotent suspend/resume included).
_CLAIMABLE: dict[Operation, frozenset[ClusterStatus]] = {
    **ALLOWED_FROM,
    Operation.SUSPEND: ALLOWED_FROM[Operation.SUSPEND] | {ClusterStatus.SUSPENDED},
    Operation.RESUME: ALLOWED_FROM[Operation.RESUME]
    | {ClusterStatus.ACTIVE, ClusterStatus.DEGRADED},
}


def _statuses(operation: Operation) -> list[ClusterStatus]:
    return sorted(_CLAIMABLE[operation])


def server_name(cluster_name: str, flavor: Flavor, position: int) -> str:
    return f"{cluster_name[:48]}-{'poplar' if flavor.is_vpod else 'gpu'}-{position}"


class Clusters:
    """The changing use-cases: create, the lifecycle operations, resize, metadata. Reading
    clusters is :class:`~.cluster_views.ClusterViews`'s."""

    def __init__(
        self,
        ctx: CloudContext,
        capacity: Capacity,
        views: ClusterViews,
        ssh_ports: SshPorts | None = None,
    ) -> None:
        self._ctx = ctx
        self._capacity = capacity
        self._views = views
        self._ssh_ports = ssh_ports or SshPorts(ctx)

    # -- create ---------------------------------------------------------------------------------

    async def check_limits(
        self, principal: Principal, request: ClusterRequest
    ) -> tuple[list[Exceeded], dict[str, int]]:
        """What the request would overrun (empty: it fits), and what the project uses now."""
        project_id = principal.project()
        flavor = find_flavor(request.flavor)
        count = self._server_count(flavor, request.server_count)
        sizes = [v.size_gib for v in request.new_volumes]
        if flavor.takes_volumes:
            sizes += [request.boot_volume_gib] * count
        for size in sizes:
            check_volume_size(size)
        project = await self._ctx.records.get_project(project_id)
        used = await self._ctx.records.project_usage(project_id)
        return check_limits(project.quotas, used, cluster_demand(flavor, count, sizes)), used

    def _server_count(self, flavor: Flavor, requested: int | None) -> int:
        if flavor.is_vpod:
            if requested not in (None, flavor.poplar_count):
                raise errors.InvalidArgument(
                    f"{flavor.name} comes with {flavor.poplar_count} Poplar server(s): leave"
                    " server_count out for vPODs"
                )
            return flavor.poplar_count
        return check_server_count(1 if requested is None else requested)

    def _refuse_unsandboxed(self) -> None:
        refused = self._ctx.compute.refusal()
        if refused is not None:
            raise errors.FailedPrecondition(refused)

    async def create(self, principal: Principal, request: ClusterRequest) -> Task:
        project_id = principal.project()
        self._refuse_unsandboxed()
        name = check_name("cluster", request.name)
        flavor = find_flavor(request.flavor)
        image = check_image(flavor, request.image)
        interfaces = check_interfaces(
            request.interfaces if request.interfaces is not None else [{"type": "external"}]
        )
        count = self._server_count(flavor, request.server_count)
        metadata = check_metadata(request.metadata)
        if not flavor.takes_volumes and (request.new_volumes or request.attach_volumes):
            raise errors.InvalidArgument(
                f"{flavor.name} is bare metal: it takes no external volumes (it boots from its"
                " local disk); leave volumes out, or pick a virtual flavor"
            )
        if flavor.takes_volumes:
            check_volume_size(request.boot_volume_gib)
        for volume in request.new_volumes:
            check_name("volume", volume.name)
            check_volume_size(volume.size_gib)
            check_volume_type(volume.volume_type)
        attach = [await self._available_volume(project_id, ref) for ref in request.attach_volumes]
        keypair_ids = [await self._keypair_id(project_id, ref) for ref in request.keypairs]
        async with self._capacity.admission():
            await self._capacity.require(flavor, count, project_id=project_id)
            await require_ports(self._ctx, count, f"cluster {name}")
            return await self._record_creation(
                principal,
                request,
                flavor,
                name,
                image,
                interfaces,
                count,
                metadata,
                attach,
                keypair_ids,
            )

    async def _record_creation(
        self,
        principal: Principal,
        request: ClusterRequest,
        flavor: Flavor,
        name: str,
        image: str,
        interfaces: list[dict[str, str]],
        count: int,
        metadata: dict[str, str],
        attach: list[Volume],
        keypair_ids: list[str],
    ) -> Task:
        ctx = self._ctx
        project_id = principal.project()
        now = ctx.clock.now()
        cluster_id = ctx.ids.new("cl")
        cidr = network_cidr(cluster_id)
        cluster = Cluster(
            id=cluster_id,
            project_id=project_id,
            name=name,
            flavor=flavor.name,
            kind=flavor.kind.value,
            status=ClusterStatus.NEW,
            image=image,
            server_count=count,
            ipus=flavor.ipus,
            gpu_family=flavor.gpu_family,
            gpus=count * flavor.gpus_per_server,
            created_at=now,
            updated_at=now,
            interfaces=interfaces,
            metadata=metadata,
        )
        servers = [self._server(cluster, flavor, n, cidr) for n in range(1, count + 1)]
        volumes = [
            new_volume(
                self._ctx, project_id, v.name, v.size_gib, v.volume_type, cluster_id=cluster_id
            )
            for v in request.new_volumes
        ]
        boot = (
            [self._boot_volume(cluster, s, request.boot_volume_gib) for s in servers]
            if flavor.takes_volumes
            else []
        )
        check_distinct_volume_names([v.name for v in volumes + boot])
        data_ids = [v.id for v in volumes] + [v.id for v in attach]
        task = new_task(
            ctx,
            Operation.CREATE,
            cluster,
            CreateParams(
                vpod=flavor.is_vpod,
                data_volume_ids=tuple(data_ids),
                new_volume_ids=tuple(v.id for v in volumes + boot),
                dataset_storage_id=request.dataset_storage_id or None,
                dataset_mount=request.dataset_mount if request.dataset_storage_id else None,
            ),
        )
        cluster = replace(cluster, active_task_id=task.id)  # the cluster is busy until created
        sizes = [v.size_gib for v in volumes + boot]
        demand = cluster_demand(flavor, count, sizes)
        claims = {
            v.id: (
                [VolumeStatus.AVAILABLE],
                {"status": VolumeStatus.ATTACHING, "cluster_id": cluster_id},
            )
            for v in attach
        }
        entry = cluster_entry(cluster, ClusterStatus.NEW, now)
        await ctx.records.create_cluster(
            cluster,
            servers,
            task,
            new_volumes=volumes + boot,
            attach=claims,
            meter=[entry],
            admit=admit_within(demand),
        )
        if keypair_ids:  # before the task runs: its setup writes them on the servers
            await ctx.records.give_keypairs(cluster_id, keypair_ids)
        await self._assign_ports(servers, f"cluster {name}")
        ctx.published([entry])
        ctx.submit(task.id)
        return task

    async def _keypair_id(self, project_id: str, ref: str) -> str:
        found = await self._ctx.records.find_keypair(project_id, ref)
        hint = " (`vpod keypair create` makes one)"
        return in_project(found, "keypair", ref, project_id, "vpod keypair list", hint).id

    def _server(self, cluster: Cluster, flavor: Flavor, position: int, cidr: str) -> Server:
        address = ipaddress.ip_network(cidr).network_address + 10 + position
        return Server(
            id=self._ctx.ids.new("sv"),
            cluster_id=cluster.id,
            position=position,
            name=server_name(cluster.name, flavor, position),
            status=ServerStatus.BUILD,
            image=cluster.image,
            created_at=cluster.created_at,
            updated_at=cluster.created_at,
            address=str(address),
        )

    def _boot_volume(self, cluster: Cluster, server: Server, size: int) -> Volume:
        check_volume_size(size)
        volume = new_volume(self._ctx, cluster.project_id, f"{server.name}-boot", size, "standard")
        return replace(
            volume,
            boot=True,
            image=cluster.image,
            cluster_id=cluster.id,
            server_id=server.id,
            delete_with_cluster=True,
        )

    async def _available_volume(self, project_id: str, ref: str) -> Volume:
        volume = await self._ctx.records.find_volume(project_id, ref)
        if volume is None:
            raise errors.NotFound(f"volume {ref} does not exist: `vpod volume list` shows yours")
        if volume.status != VolumeStatus.AVAILABLE or volume.active_task_id:
            raise errors.FailedPrecondition(
                f"volume {volume.name} is {volume.status}: only an available volume can be"
                " attached; detach it first"
            )
        return volume

    # -- operations on an existing cluster ------------------------------------------------------

    async def _start(
        self,
        principal: Principal,
        ref: str,
        operation: Operation,
        params: ClusterParams | None = None,
    ) -> Task:
        cluster = await self._views.find(principal, ref)
        flavor = find_flavor(cluster.flavor)
        check_state(operation, cluster.status, flavor, cluster.name)
        failed = operation is not Operation.DELETE and cluster.status == ClusterStatus.ERROR
        if failed and not await self._ctx.records.list_servers([cluster.id]):
            raise errors.FailedPrecondition(
                f"cluster {cluster.name} holds nothing (its creation failed: {cluster.error});"
                " delete it and create it again"
            )
        during = STATUS_DURING.get(operation)
        change = ClusterChange(during) if during is not None else None
        return await self._claim(cluster, operation, params or ClusterParams(), change=change)

    async def _claim(
        self,
        cluster: Cluster,
        operation: Operation,
        params: ClusterParams,
        *,
        change: ClusterChange | None = None,
        new_servers: Sequence[Server] = (),
        new_volumes: Sequence[Volume] = (),
        demand: Mapping[str, int] | None = None,
    ) -> Task:
        ctx = self._ctx
        is_vpod = find_flavor(cluster.flavor).is_vpod
        task = new_task(ctx, operation, cluster, replace(params, vpod=is_vpod))
        now = ctx.clock.now()
        meter = []
        if change is not None and change.status != cluster.status:
            meter.append(cluster_entry(cluster, change.status, now))
        wanted = dict(demand or {})
        await ctx.records.start_cluster_task(
            cluster.id,
            task,
            allowed=_statuses(operation),
            changes=change.fields(now) if change is not None else None,
            new_servers=new_servers,
            new_volumes=new_volumes,
            meter=meter,
            admit=admit_within(wanted) if wanted else None,
        )
        ctx.published(meter)
        ctx.submit(task.id)
        return task

    async def start_task(
        self, cluster: Cluster, operation: Operation, params: ClusterParams
    ) -> Task:
        """Claim ``cluster`` for a task of ``operation`` another use-case checked (datasets)."""
        return await self._claim(cluster, operation, params)

    async def suspend(self, principal: Principal, ref: str) -> Task:
        return await self._start(principal, ref, Operation.SUSPEND)

    async def resume(self, principal: Principal, ref: str) -> Task:
        """A suspended vPOD takes IPU-Machines again: admitted like a creation (its project's
        reservations, then capacity nobody else reserved), so resuming never takes what
        another project reserved."""
        cluster = await self._views.find(principal, ref)
        flavor = find_flavor(cluster.flavor)
        if not flavor.is_vpod or cluster.allocation_id is not None:
            return await self._start(principal, ref, Operation.RESUME)
        check_state(Operation.RESUME, cluster.status, flavor, cluster.name)
        async with self._capacity.admission():
            try:
                await self._capacity.require(
                    flavor, 1, project_id=cluster.project_id, resuming=True
                )
            except errors.NoCapacity as exc:
                # Refused before a task starts: said as the resume task would say it.
                raise errors.NoCapacity(
                    f"cannot resume cluster {cluster.name}: {exc}; it stays SUSPENDED, retry"
                    " `vpod cluster resume` later"
                ) from None
            return await self._start(principal, ref, Operation.RESUME)

    async def reboot(self, principal: Principal, ref: str) -> Task:
        return await self._start(principal, ref, Operation.REBOOT)

    async def rebuild(self, principal: Principal, ref: str, image: str | None) -> Task:
        cluster = await self._views.find(principal, ref)
        chosen = check_image(find_flavor(cluster.flavor), image)
        return await self._start(
            principal,
            ref,
            Operation.REBUILD,
            RebuildParams(image=chosen),
        )

    async def delete(self, principal: Principal, ref: str, *, delete_volumes: bool) -> Task:
        return await self._start(
            principal,
            ref,
            Operation.DELETE,
            DeleteParams(delete_volumes=delete_volumes),
        )

    async def resize(self, principal: Principal, ref: str, server_count: int) -> Task:
        cluster = await self._views.find(principal, ref)
        flavor = find_flavor(cluster.flavor)
        check_state(Operation.RESIZE, cluster.status, flavor, cluster.name)
        target = check_server_count(server_count)
        current = cluster.server_count
        if target > current:
            self._refuse_unsandboxed()
        if target == current:
            raise errors.InvalidArgument(
                f"cluster {cluster.name} has {current} servers already: give another count"
            )
        change = ClusterChange(
            STATUS_DURING[Operation.RESIZE],
            server_count=target,
            gpus=target * flavor.gpus_per_server,
        )
        params = ResizeParams(server_count=target, previous=current)
        servers = await self._ctx.records.list_servers([cluster.id])
        if target < current:
            leaving = tuple(s.id for s in servers if s.position > target)
            params = replace(params, remove_server_ids=leaving)
            return await self._claim(cluster, Operation.RESIZE, params, change=change)
        async with self._capacity.admission():
            await self._capacity.require(
                flavor, target - current, fabric=cluster.fabric, project_id=cluster.project_id
            )
            await require_ports(self._ctx, target - current, f"growing cluster {cluster.name}")
            return await self._grow(cluster, flavor, servers, target, change, params)

    async def _grow(
        self,
        cluster: Cluster,
        flavor: Flavor,
        servers: list[Server],
        target: int,
        change: ClusterChange,
        params: ResizeParams,
    ) -> Task:
        current = cluster.server_count
        cidr = cluster.network.get("cidr") or network_cidr(cluster.id)
        taken = max((s.position for s in servers), default=0)
        new = [
            self._server(cluster, flavor, n, cidr)
            for n in range(taken + 1, taken + 1 + target - current)
        ]
        boot = (
            [self._boot_volume(cluster, s, BOOT_VOLUME_DEFAULT_GIB) for s in new]
            if flavor.takes_volumes
            else []
        )
        params = replace(params, new_server_ids=tuple(s.id for s in new))
        demand = server_demand(flavor, target - current)
        if boot:
            demand.update(volumes=len(boot), volume_gib=sum(v.size_gib for v in boot))
        task = await self._claim(
            cluster,
            Operation.RESIZE,
            params,
            change=change,
            new_servers=new,
            new_volumes=boot,
            demand=demand,
        )
        await self._assign_ports(new, f"growing cluster {cluster.name}")
        return task

    async def _assign_ports(self, servers: Sequence[Server], what: str) -> None:
        """Record the new servers' direct SSH ports at once (shown before the task runs); one
        another controller took meanwhile is found again when the task builds the servers."""
        try:
            await assign_ports(self._ctx, [s.id for s in servers], what)
        except errors.CloudError:
            return  # the task's own assignment fails it with the reason

    async def set_metadata(
        self, principal: Principal, ref: str, metadata: Mapping[str, str], *, replace: bool
    ) -> tuple[Task, Cluster]:
        """Change metadata at once (no resource changes): the task is recorded FINISHED."""
        cluster = await self._views.find(principal, ref)
        check_state(
            Operation.SET_METADATA,
            cluster.status,
            find_flavor(cluster.flavor),
            cluster.name,
        )
        merged = dict(metadata) if replace else {**cluster.metadata, **metadata}
        checked = check_metadata(merged)
        updated = await self._ctx.records.update_cluster(
            cluster.id,
            metadata=checked,
            updated_at=self._ctx.clock.now(),
        )
        task = new_task(
            self._ctx,
            Operation.SET_METADATA,
            cluster,
            SetMetadataParams(metadata=checked),
            state=TaskState.FINISHED,
        )
        await self._ctx.records.add_task(task)
        return task, updated
