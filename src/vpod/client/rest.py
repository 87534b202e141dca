"""Clients of the REST API: :class:`RestClient` (blocking) and :class:`AsyncRestClient`.

The REST API (``/api/v1``, port 8080 by default) serves what the user and
admin gRPC APIs serve, as JSON; these clients return the same records as
:class:`~.user.UserClient` and :class:`~.admin.AdminClient` (read by
:mod:`.rest_records`) and raise the same :mod:`.errors`. Credentials go in
the ``X-Vipu-User-Id`` and ``X-Vipu-Access-Key`` headers.

    >>> from vpod.client import RestClient
    >>> with RestClient.from_config(url="http://127.0.0.1:8080") as rest:
    ...     rest.create_partition("p1", 4).ready_state
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Unpack

from vpod.domain.topology import GwTopology, IldTopology

from . import fabric, user_calls
from . import rest_calls as calls
from .admin_calls import EventFilter
from .admin_records import (
    Agent,
    AgentFaults,
    Allocation,
    AuditEvent,
    Cluster,
    ClusterTestReport,
    CreatedUser,
    DiscoveredAgent,
    Fault,
    LinkTest,
    PartitionInfo,
    User,
)
from .config import load_settings, user_endpoint
from .errors import Timeout
from .http_transport import DEFAULT_TIMEOUT_S, AsyncHttpTransport, HttpSite, HttpTransport
from .records import IpuAttributes, Partition, PartitionStatus, Version
from .user_calls import PartitionOptions

DEFAULT_HTTP_PORT = 8080
USER_HEADER = "X-Vipu-User-Id"
KEY_HEADER = "X-Vipu-Access-Key"


@dataclass(frozen=True)
class RestSettings:
    """Where the REST API is and who calls it."""

    url: str
    """``http://host:8080`` (``https://`` when the controller serves TLS)."""
    user_id: str = ""
    access_key: str = field(default="", repr=False)
    tls_ca: str = ""
    tls_cert: str = ""
    tls_key: str = ""
    timeout_s: float = DEFAULT_TIMEOUT_S

    def site(self) -> HttpSite:
        headers = {}
        if self.user_id:
            headers[USER_HEADER] = self.user_id
        if self.access_key:
            headers[KEY_HEADER] = self.access_key
        return HttpSite(
            base_url=self.url,
            prefix=calls.API_PREFIX,
            headers=headers,
            timeout_s=self.timeout_s,
            ca_file=self.tls_ca,
            cert=(self.tls_cert, self.tls_key) if self.tls_cert and self.tls_key else None,
            name="the REST API",
            hint="is the V-IPU controller running there (its HTTP port, 8080 by default)?",
        )


def rest_settings(
    url: str | None = None,
    config: str | None = None,
    env: Mapping[str, str] | None = None,
    **overrides: str | int | float | None,
) -> RestSettings:
    """Credentials and TLS as ``vipu`` reads them; ``url`` defaults to the API host, port 8080."""
    options = {key.replace("_", "-"): value for key, value in overrides.items()}
    endpoint = user_endpoint(load_settings(options, env=env, config_path=config))
    scheme = "https" if endpoint.secure else "http"
    host = f"[{endpoint.host}]" if ":" in endpoint.host else endpoint.host
    return RestSettings(
        url=url or f"{scheme}://{host}:{DEFAULT_HTTP_PORT}",
        user_id=endpoint.user_id,
        access_key=endpoint.access_key,
        tls_ca=endpoint.tls_ca,
        tls_cert=endpoint.tls_cert,
        tls_key=endpoint.tls_key,
        timeout_s=endpoint.timeout_s,
    )


class RestClient:
    """The REST API of one controller, over blocking HTTP (``httpx``)."""

    def __init__(self, settings: RestSettings) -> None:
        self.settings = settings
        self._http = HttpTransport(settings.site())

    @classmethod
    def from_config(
        cls,
        config: str | None = None,
        *,
        url: str | None = None,
        env: Mapping[str, str] | None = None,
        **overrides: str | int | float | None,
    ) -> RestClient:
        return cls(rest_settings(url, config, env, **overrides))

    def __enter__(self) -> RestClient:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    # the user API
    def version(self) -> Version:
        return Version(self._http.invoke(calls.version()), self.settings.url)

    def list_partitions(self, allocation: str | None = None) -> list[Partition]:
        return self._http.invoke(calls.list_partitions(allocation))

    def get_partition(self, partition_id: str) -> Partition:
        return self._http.invoke(calls.get_partition(partition_id))

    def create_partition(
        self, partition_id: str, size: int, **options: Unpack[PartitionOptions]
    ) -> Partition:
        return self._http.invoke(calls.create_partition(partition_id, size, options))

    def remove_partition(self, partition_id: str, *, force: bool = False) -> None:
        self._http.invoke(calls.remove_partition(partition_id, force))

    def reset_partition(self, partition_id: str, *, relocatable: bool = False) -> None:
        self._http.invoke(calls.reset_partition(partition_id, relocatable))

    def partition_status(self, partition_id: str) -> PartitionStatus:
        return self._http.invoke(calls.partition_status(partition_id))

    def ipuof_files(self, partition_id: str) -> dict[str, dict[str, Any]]:
        """Every GCD's IPUoF file by name (``<partition>_gcd<N>.conf``)."""
        return self._http.invoke(calls.ipuof_files(partition_id))

    def ipuof_file(self, partition_id: str, gcd: int = 0) -> dict[str, Any]:
        return self._http.invoke(calls.ipuof_file(partition_id, gcd))

    def list_allocations(self, cluster: str | None = None) -> list[Allocation]:
        """The allocations the caller may use (every one, for an administrator)."""
        return self._http.invoke(calls.list_allocations(cluster))

    def list_ipu_attributes(self, agents: Sequence[str] = ()) -> list[IpuAttributes]:
        return self._http.invoke(calls.list_ipu_attributes(agents, admin=False))

    def wait_until_active(
        self,
        partition_id: str,
        *,
        timeout: float = user_calls.WAIT_TIMEOUT_S,
        poll: float = user_calls.POLL_S,
    ) -> PartitionStatus:
        deadline = time.monotonic() + timeout
        status: PartitionStatus | None = None
        while time.monotonic() < deadline:
            status = self.partition_status(partition_id)
            if user_calls.settled(status, partition_id):
                return status
            time.sleep(poll)
        raise Timeout(user_calls.not_active(partition_id, timeout, status))

    # the admin API
    def create_agent(self, agent_id: str, host: str, port: int, *, key: str = "") -> Agent:
        return self._http.invoke(calls.create_agent(agent_id, host, port, key))

    def list_agents(self, cluster: str | None = None) -> list[Agent]:
        return self._http.invoke(calls.list_agents(cluster))

    def remove_agent(self, agent_id: str, *, force: bool = False) -> None:
        self._http.invoke(calls.remove_agent(agent_id, force))

    def discover_agents(
        self, addresses: Sequence[str] = (), *, add: bool = False, key: str = ""
    ) -> list[DiscoveredAgent]:
        return self._http.invoke(calls.discover_agents(addresses, add, key))

    def inject_fault(self, agent_id: str, fault: Fault) -> AgentFaults:
        return self._http.invoke(calls.inject_fault(agent_id, fault))

    def clear_fault(self, agent_id: str, fault: Fault | None = None) -> AgentFaults:
        return self._http.invoke(calls.clear_fault(agent_id, fault))

    def create_cluster(
        self,
        cluster_id: str,
        agent_ids: Sequence[str],
        *,
        num_ilds: int | None = None,
        topology: IldTopology | None = None,
        cluster_topology: GwTopology | None = None,
    ) -> Cluster:
        call = calls.create_cluster(cluster_id, agent_ids, num_ilds, topology, cluster_topology)
        return self._http.invoke(call)

    def list_clusters(self) -> list[Cluster]:
        return self._http.invoke(calls.list_clusters())

    def remove_cluster(self, cluster_id: str, *, force: bool = False) -> None:
        self._http.invoke(calls.remove_cluster(cluster_id, force))

    def test_cluster(self, cluster_id: str, tests: Sequence[LinkTest] = ()) -> ClusterTestReport:
        return self._http.invoke(calls.cluster_test(cluster_id, tests))

    def create_allocation(
        self,
        allocation_id: str,
        cluster_id: str,
        *,
        size: int | None = None,
        agent_ids: Sequence[str] = (),
        hosts: Sequence[str] = (),
    ) -> Allocation:
        return self._http.invoke(
            calls.create_allocation(allocation_id, cluster_id, size, agent_ids, hosts)
        )

    def set_allocation_hosts(self, allocation_id: str, hosts: Sequence[str]) -> Allocation:
        return self._http.invoke(calls.set_allocation_hosts(allocation_id, hosts))

    def remove_allocation(self, allocation_id: str, *, force: bool = False) -> None:
        self._http.invoke(calls.remove_allocation(allocation_id, force))

    def create_user(
        self, user_id: str, *, allocation_ids: Sequence[str] = (), admin: bool = False
    ) -> CreatedUser:
        return self._http.invoke(calls.create_user(user_id, allocation_ids, admin))

    def list_users(self) -> list[User]:
        return self._http.invoke(calls.list_users())

    def remove_user(self, user_id: str) -> None:
        self._http.invoke(calls.remove_user(user_id))

    def list_partition_infos(
        self, *, allocation: str | None = None, cluster: str | None = None
    ) -> list[PartitionInfo]:
        """Every allocation's partitions with their status (administrators)."""
        return self._http.invoke(calls.list_partition_infos(allocation, cluster))

    def list_all_ipu_attributes(self, agents: Sequence[str] = ()) -> list[IpuAttributes]:
        """Every agent's IPU attributes (administrators)."""
        return self._http.invoke(calls.list_ipu_attributes(agents, admin=True))

    def list_events(self, **filters: Unpack[EventFilter]) -> list[AuditEvent]:
        return self._http.invoke(calls.list_events(filters))

    # the whole fabric
    def whoami(self) -> fabric.Identity:
        return self._http.invoke(fabric.whoami())

    def pod_map(self, cluster: str | None = None) -> list[fabric.ClusterMap]:
        """Every cluster (or one) as domains → machines in ladder order → IPUs."""
        return self._http.invoke(fabric.pod_map(cluster))

    def fragmentation(self, allocation_id: str) -> fabric.Fragmentation:
        return self._http.invoke(fabric.fragmentation(allocation_id))

    def changes(self) -> Iterator[fabric.Change]:
        """The admin change stream, as it happens (blocks; stop iterating to close it)."""
        return fabric.follow_changes(self.settings.site())


class AsyncRestClient:
    """The REST API over ``httpx.AsyncClient``; the same methods as :class:`RestClient`."""

    def __init__(self, settings: RestSettings) -> None:
        self.settings = settings
        self._http = AsyncHttpTransport(settings.site())

    @classmethod
    def from_config(
        cls,
        config: str | None = None,
        *,
        url: str | None = None,
        env: Mapping[str, str] | None = None,
        **overrides: str | int | float | None,
    ) -> AsyncRestClient:
        return cls(rest_settings(url, config, env, **overrides))

    async def __aenter__(self) -> AsyncRestClient:
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        await self._http.close()

    async def version(self) -> Version:
        return Version(await self._http.invoke(calls.version()), self.settings.url)

    async def list_partitions(self, allocation: str | None = None) -> list[Partition]:
        return await self._http.invoke(calls.list_partitions(allocation))

    async def get_partition(self, partition_id: str) -> Partition:
        return await self._http.invoke(calls.get_partition(partition_id))

    async def create_partition(
        self, partition_id: str, size: int, **options: Unpack[PartitionOptions]
    ) -> Partition:
        return await self._http.invoke(calls.create_partition(partition_id, size, options))

    async def remove_partition(self, partition_id: str, *, force: bool = False) -> None:
        await self._http.invoke(calls.remove_partition(partition_id, force))

    async def reset_partition(self, partition_id: str, *, relocatable: bool = False) -> None:
        await self._http.invoke(calls.reset_partition(partition_id, relocatable))

    async def partition_status(self, partition_id: str) -> PartitionStatus:
        return await self._http.invoke(calls.partition_status(partition_id))

    async def ipuof_files(self, partition_id: str) -> dict[str, dict[str, Any]]:
        return await self._http.invoke(calls.ipuof_files(partition_id))

    async def ipuof_file(self, partition_id: str, gcd: int = 0) -> dict[str, Any]:
        return await self._http.invoke(calls.ipuof_file(partition_id, gcd))

    async def list_allocations(self, cluster: str | None = None) -> list[Allocation]:
        return await self._http.invoke(calls.list_allocations(cluster))

    async def list_ipu_attributes(self, agents: Sequence[str] = ()) -> list[IpuAttributes]:
        return await self._http.invoke(calls.list_ipu_attributes(agents, admin=False))

    async def wait_until_active(
        self,
        partition_id: str,
        *,
        timeout: float = user_calls.WAIT_TIMEOUT_S,
        poll: float = user_calls.POLL_S,
    ) -> PartitionStatus:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        status: PartitionStatus | None = None
        while loop.time() < deadline:
            status = await self.partition_status(partition_id)
            if user_calls.settled(status, partition_id):
                return status
            await asyncio.sleep(poll)
        raise Timeout(user_calls.not_active(partition_id, timeout, status))

    async def create_agent(self, agent_id: str, host: str, port: int, *, key: str = "") -> Agent:
        return await self._http.invoke(calls.create_agent(agent_id, host, port, key))

    async def list_agents(self, cluster: str | None = None) -> list[Agent]:
        return await self._http.invoke(calls.list_agents(cluster))

    async def remove_agent(self, agent_id: str, *, force: bool = False) -> None:
        await self._http.invoke(calls.remove_agent(agent_id, force))

    async def discover_agents(
        self, addresses: Sequence[str] = (), *, add: bool = False, key: str = ""
    ) -> list[DiscoveredAgent]:
        return await self._http.invoke(calls.discover_agents(addresses, add, key))

    async def inject_fault(self, agent_id: str, fault: Fault) -> AgentFaults:
        return await self._http.invoke(calls.inject_fault(agent_id, fault))

    async def clear_fault(self, agent_id: str, fault: Fault | None = None) -> AgentFaults:
        return await self._http.invoke(calls.clear_fault(agent_id, fault))

    async def create_cluster(
        self,
        cluster_id: str,
        agent_ids: Sequence[str],
        *,
        num_ilds: int | None = None,
        topology: IldTopology | None = None,
        cluster_topology: GwTopology | None = None,
    ) -> Cluster:
        call = calls.create_cluster(cluster_id, agent_ids, num_ilds, topology, cluster_topology)
        return await self._http.invoke(call)

    async def list_clusters(self) -> list[Cluster]:
        return await self._http.invoke(calls.list_clusters())

    async def remove_cluster(self, cluster_id: str, *, force: bool = False) -> None:
        await self._http.invoke(calls.remove_cluster(cluster_id, force))

    async def test_cluster(
        self, cluster_id: str, tests: Sequence[LinkTest] = ()
    ) -> ClusterTestReport:
        return await self._http.invoke(calls.cluster_test(cluster_id, tests))

    async def create_allocation(
        self,
        allocation_id: str,
        cluster_id: str,
        *,
        size: int | None = None,
        agent_ids: Sequence[str] = (),
        hosts: Sequence[str] = (),
    ) -> Allocation:
        call = calls.create_allocation(allocation_id, cluster_id, size, agent_ids, hosts)
        return await self._http.invoke(call)

    async def set_allocation_hosts(self, allocation_id: str, hosts: Sequence[str]) -> Allocation:
        return await self._http.invoke(calls.set_allocation_hosts(allocation_id, hosts))

    async def remove_allocation(self, allocation_id: str, *, force: bool = False) -> None:
        await self._http.invoke(calls.remove_allocation(allocation_id, force))

    async def create_user(
        self, user_id: str, *, allocation_ids: Sequence[str] = (), admin: bool = False
    ) -> CreatedUser:
        return await self._http.invoke(calls.create_user(user_id, allocation_ids, admin))

    async def list_users(self) -> list[User]:
        return await self._http.invoke(calls.list_users())

    async def remove_user(self, user_id: str) -> None:
        await self._http.invoke(calls.remove_user(user_id))

    async def list_partition_infos(
        self, *, allocation: str | None = None, cluster: str | None = None
    ) -> list[PartitionInfo]:
        return await self._http.invoke(calls.list_partition_infos(allocation, cluster))

    async def list_all_ipu_attributes(self, agents: Sequence[str] = ()) -> list[IpuAttributes]:
        return await self._http.invoke(calls.list_ipu_attributes(agents, admin=True))

    async def list_events(self, **filters: Unpack[EventFilter]) -> list[AuditEvent]:
        return await self._http.invoke(calls.list_events(filters))

    async def whoami(self) -> fabric.Identity:
        return await self._http.invoke(fabric.whoami())

    async def pod_map(self, cluster: str | None = None) -> list[fabric.ClusterMap]:
        return await self._http.invoke(fabric.pod_map(cluster))

    async def fragmentation(self, allocation_id: str) -> fabric.Fragmentation:
        return await self._http.invoke(fabric.fragmentation(allocation_id))

    def changes(self) -> AsyncIterator[fabric.Change]:
        return fabric.follow_changes_async(self.settings.site())
