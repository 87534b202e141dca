"""Reading a project's clusters: find one by id or name, and view it whole.

A :class:`ClusterView` is a cluster with what the API shows beside it: its
servers and volumes, the dataset storage it holds, its GPUs with their last
samples, the keypairs that may log in, its servers' host keys and direct SSH
ports. A project sees only its own clusters: another project's cluster is
"not found", whether or not it exists.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from vpod.agent.gpu.model import GpuSample

from ..drivers import DriverError
from ..model.records import Cluster, Server, Volume
from ..ssh_keys import HostKey, host_key_of
from .context import CloudContext
from .gpu_hosts import GpuHosts, ServerGpu
from .projects import Principal, find_own
from .ssh_ports import SshPorts


@dataclass(frozen=True)
class ClusterView:
    cluster: Cluster
    servers: list[Server]
    volumes: list[Volume]
    dataset_storage: tuple[str, str | None] | None = None
    """(name, mount path) of the dataset storage it holds, if any."""
    gpus: Mapping[str, list[tuple[ServerGpu, GpuSample | None]]] = field(default_factory=dict)
    """Server id -> the GPUs it holds, with their last samples."""
    keypairs: tuple[str, ...] = ()
    """Names of the keypairs that may log in to its servers."""
    host_keys: Mapping[str, tuple[HostKey, ...]] = field(default_factory=dict)
    """Server id -> its sshd's public host keys (to pin in known_hosts)."""
    ssh_ports: Mapping[str, int] = field(default_factory=dict)
    """Server id -> its direct SSH port on the host (empty unless the operator set a range)."""

    @property
    def busy_with(self) -> str | None:
        return self.cluster.active_task_id


class ClusterViews:
    def __init__(
        self,
        ctx: CloudContext,
        gpu_hosts: GpuHosts | None = None,
        ssh_ports: SshPorts | None = None,
    ) -> None:
        self._ctx = ctx
        self._gpu_hosts = gpu_hosts
        self._ssh_ports = ssh_ports or SshPorts(ctx)

    async def find(self, principal: Principal, ref: str) -> Cluster:
        records = self._ctx.records
        return await find_own(principal, records.find_cluster, ref, "cluster", "vpod cluster list")

    async def view(self, cluster: Cluster) -> ClusterView:
        servers = await self._ctx.records.list_servers([cluster.id])
        volumes = await self._ctx.records.list_volumes(cluster_id=cluster.id)
        held = await self._ctx.records.storages_held_by([cluster.id])
        gpus = await self._gpus([s.id for s in servers])
        keys = await self._ctx.records.keypairs_of([cluster.id])
        return ClusterView(
            cluster,
            servers,
            volumes,
            held.get(cluster.id),
            gpus,
            tuple(k.name for k in keys.get(cluster.id, [])),
            await self._host_keys(servers),
            await self._ssh_ports.of_servers([s.id for s in servers]),
        )

    async def _gpus(
        self, server_ids: list[str]
    ) -> Mapping[str, list[tuple[ServerGpu, GpuSample | None]]]:
        return await self._gpu_hosts.of_servers(server_ids) if self._gpu_hosts else {}

    async def _host_keys(self, servers: Sequence[Server]) -> dict[str, tuple[HostKey, ...]]:
        found = {}
        for server in servers:
            try:
                lines = await self._ctx.compute.ssh_host_keys(server.id)
            except DriverError:
                continue  # not built (yet) on this back end: no keys to show
            found[server.id] = tuple(k for k in map(host_key_of, lines) if k is not None)
        return found

    async def get(self, principal: Principal, ref: str) -> ClusterView:
        return await self.view(await self.find(principal, ref))

    async def list_clusters(self, principal: Principal) -> list[ClusterView]:
        clusters = await self._ctx.records.list_clusters(principal.project())
        servers = await self._ctx.records.list_servers([c.id for c in clusters])
        volumes = await self._ctx.records.list_volumes(project_id=principal.project())
        held = await self._ctx.records.storages_held_by([c.id for c in clusters])
        gpus = await self._gpus([s.id for s in servers])
        keys = await self._ctx.records.keypairs_of([c.id for c in clusters])
        host_keys = await self._host_keys(servers)
        ssh_ports = await self._ssh_ports.of_servers([s.id for s in servers])
        return [
            ClusterView(
                c,
                [s for s in servers if s.cluster_id == c.id],
                [v for v in volumes if v.cluster_id == c.id],
                held.get(c.id),
                gpus,
                tuple(k.name for k in keys.get(c.id, [])),
                host_keys,
                ssh_ports,
            )
            for c in clusters
        ]
