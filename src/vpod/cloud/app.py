"""The cloud's composition root: :func:`build_cloud` wires a :class:`Cloud` onto a controller.

The cloud runs inside the controller's process and event loop (see
:mod:`.extension`): it calls the controller's tenancy use-cases in-process
(through :class:`.vipu.VipuPort`), shares its database (its own tables, reached
through :class:`.services.records.CloudRecords`) and adds its HTTP routes under ``/api/cloud/v1``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from vpod.controller.app import Controller
from vpod.controller.clock import Clock

from .drivers import ComputeDriver, VolumeDriver, build_drivers
from .ids import IdGenerator, RandomIds
from .metering import JsonlSink, MeteringSink, NoSink
from .model import errors
from .operations import all_operations
from .reservations import parse_terms
from .runner import TaskRunner
from .sealing import Sealer
from .server_setup import refresh_endpoints
from .services.billing import Billing
from .services.capacity import Capacity
from .services.cluster_views import ClusterViews
from .services.clusters import Clusters
from .services.context import CloudContext
from .services.datasets import Datasets
from .services.gpu_hosts import GpuHosts
from .services.health import check_gpu_clusters, check_vpods, serve_peer_ssh
from .services.hosts import Hosts
from .services.keypairs import Keypairs
from .services.projects import Projects
from .services.records import CloudRecords
from .services.reservations import Reservations
from .services.shells import Shells
from .services.ssh_access import SshAccess
from .services.ssh_ports import SshPorts
from .services.tasks import Tasks
from .services.volumes import Volumes
from .settings import CloudSettings
from .ssh_direct import DirectSsh
from .vipu import VipuPort

log = logging.getLogger("vpod.cloud")


@dataclass
class Cloud:
    ctx: CloudContext
    projects: Projects
    clusters: Clusters
    cluster_views: ClusterViews
    shells: Shells
    volumes: Volumes
    tasks: Tasks
    billing: Billing
    hosts: Hosts
    gpu_hosts: GpuHosts
    capacity: Capacity
    reservations: Reservations
    datasets: Datasets
    keypairs: Keypairs
    ssh: SshAccess
    ssh_ports: SshPorts
    direct_ssh: DirectSsh
    """The direct SSH ports' listeners (none unless ``ssh_direct_ports`` is set)."""
    runner: TaskRunner
    secure: bool
    """Whether the controller isolates V-IPU users (``--secure``)."""

    async def start(self) -> str | None:
        """Start running tasks; make the first admin token if there is none (returned)."""
        token = await self.projects.ensure_admin_token(self.ctx.settings.admin_token_path)
        if token is not None:
            log.warning(
                "cloud: first administrator token written to %s",
                self.ctx.settings.admin_token_path,
            )
        if await self.datasets.reseal_all():
            log.warning("cloud: dataset credentials sealed again under the newest key")
        await self.runner.start()
        if self.serves_tenants:
            await self.direct_ssh.start()
        if not self.serves_tenants:
            log.warning("cloud: %s", OPEN_MODE_REFUSAL)
        return token

    @property
    def serves_tenants(self) -> bool:
        """Tenants are served only when the controller authenticates every call: in the open
        V-IPU mode a vPOD's V-IPU user could see and use every other tenant's allocation."""
        return self.secure

    def require_tenancy(self) -> None:
        """Refuse a tenant's call when tenants could not be isolated (open mode)."""
        if not self.serves_tenants:
            raise errors.PermissionDenied(OPEN_MODE_REFUSAL)

    async def stop(self) -> None:
        await self.direct_ssh.stop()
        await self.runner.stop()
        await self.ctx.compute.close()
        self.ctx.records.close()


OPEN_MODE_REFUSAL = (
    "the controller runs without authentication (the open V-IPU mode), where tenants cannot be"
    " isolated, so the cloud serves no tenant: run vipu-server with --secure (vpod up without"
    " --open)"
)


def build_cloud(
    controller: Controller,
    settings: CloudSettings,
    *,
    clock: Clock | None = None,
    ids: IdGenerator | None = None,
    compute: ComputeDriver | None = None,
    volumes: VolumeDriver | None = None,
    sink: MeteringSink | None = None,
) -> Cloud:
    default_compute, default_volumes = build_drivers(
        settings.cloud_dir,
        compute=settings.compute_driver,
        volumes=settings.volume_driver,
        compute_options=settings.compute_options(),
        openstack=settings.openstack,
    )
    if sink is None:
        sink = (
            JsonlSink(settings.cloud_dir / "metering.jsonl")
            if settings.metering_sink == "jsonl"
            else NoSink()
        )
    vipu = VipuPort(controller.tenancy, settings.vipu_clusters)
    ctx = CloudContext(
        settings=settings,
        records=CloudRecords.of(controller.store),
        clock=clock or controller.clock,
        ids=ids or RandomIds(),
        compute=compute or default_compute,
        volumes=volumes or default_volumes,
        vipu=vipu,
        sealer=Sealer(settings.sealing_key_path),
        sink=sink,
    )
    holder = controller.settings.replica_id or "vpod-cloud"
    runner = TaskRunner(ctx, all_operations(), holder=holder)

    async def health() -> None:
        await refresh_endpoints(ctx)
        await check_vpods(ctx)
        await serve_peer_ssh(ctx)
        await check_gpu_clusters(ctx)

    runner.on_health_check(health)
    reservations = Reservations(ctx, parse_terms(settings.reservation_terms))
    capacity = Capacity(ctx, reservations)
    gpu_hosts = GpuHosts(ctx)
    ssh_ports = SshPorts(ctx)
    views = ClusterViews(ctx, gpu_hosts, ssh_ports)
    clusters = Clusters(ctx, capacity, views, ssh_ports)
    return Cloud(
        ctx=ctx,
        projects=Projects(ctx),
        clusters=clusters,
        cluster_views=views,
        shells=Shells(ctx, views),
        volumes=Volumes(ctx, views),
        tasks=Tasks(ctx, runner.wait),
        billing=Billing(ctx),
        hosts=Hosts(ctx),
        gpu_hosts=gpu_hosts,
        capacity=capacity,
        reservations=reservations,
        datasets=Datasets(ctx, views, clusters),
        keypairs=Keypairs(ctx, views),
        ssh=SshAccess(ctx, views),
        ssh_ports=ssh_ports,
        direct_ssh=DirectSsh(ssh_ports, settings.task_poll_s),
        runner=runner,
        secure=controller.settings.secure,
    )
