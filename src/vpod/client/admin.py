"""Clients of the admin API: :class:`AdminClient` (blocking) and :class:`AsyncAdminClient`.

Both run the call descriptions of :mod:`.admin_calls` on the admin endpoint
(port 8091 by default) and raise the :mod:`.errors` tree. With ``--secure``
controllers the credentials must be an administrator's.

    >>> from vpod.client import AdminClient
    >>> with AdminClient.from_config() as admin:        # vipu-cli.hcl, VIPU_CLI_*
    ...     [a.id for a in admin.list_agents()]
    ...     created = admin.create_user("alice", allocation_ids=["a1"])
    ...     created.access_key                           # shown once
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Unpack

from vpod.domain.topology import GwTopology, IldTopology

from . import admin_calls as calls
from . import user_calls
from .admin_calls import EventFilter
from .admin_records import (
    Agent,
    AgentFaults,
    AgentToken,
    Allocation,
    AuditEvent,
    Cluster,
    ClusterTestReport,
    CreatedUser,
    DiscoveredAgent,
    Fault,
    IssuedAgentToken,
    LinkTest,
    PartitionInfo,
    User,
)
from .config import Endpoint, admin_endpoint, load_settings
from .grpc_transport import (
    DEFAULT_CREDENTIALS_HINT,
    AsyncGrpcTransport,
    Diagnosis,
    GrpcTransport,
)
from .records import IpuAttributes, Version
from .retry import DEFAULT_RETRY, RetryPolicy
from .user import ADMIN_HINT


def _admin_endpoint(
    config: str | None,
    env: Mapping[str, str] | None,
    overrides: Mapping[str, str | int | float | None],
) -> Endpoint:
    options = {key.replace("_", "-"): value for key, value in overrides.items()}
    return admin_endpoint(load_settings(options, env=env, config_path=config))


class AdminClient:
    """The admin API of one controller, over blocking gRPC."""

    def __init__(
        self,
        endpoint: Endpoint,
        *,
        hint: str = ADMIN_HINT,
        credentials_hint: str = DEFAULT_CREDENTIALS_HINT,
        retry: RetryPolicy = DEFAULT_RETRY,
    ) -> None:
        self.endpoint = endpoint
        self._grpc = GrpcTransport(Diagnosis(endpoint, hint, credentials_hint), retry)

    @classmethod
    def from_config(
        cls,
        config: str | None = None,
        *,
        env: Mapping[str, str] | None = None,
        **overrides: str | int | float | None,
    ) -> AdminClient:
        """Settings as ``vipu-admin`` reads them: ``overrides`` (``admin_api_port=...``), env,
        config file."""
        return cls(_admin_endpoint(config, env, overrides))

    def __enter__(self) -> AdminClient:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._grpc.close()

    def version(self) -> Version:
        return Version(self._grpc.invoke(user_calls.version()), self.endpoint.target)

    # agents
    def create_agent(self, agent_id: str, host: str, port: int, *, key: str = "") -> Agent:
        """Add an agent by address; ``key`` is the one it answers to (``vipu-agent
        --key-file``; empty: the key it registered with)."""
        return self._grpc.invoke(calls.create_agent(agent_id, host, port, key))

    def list_agents(self, cluster: str | None = None) -> list[Agent]:
        return self._grpc.invoke(calls.list_agents(cluster))

    def remove_agent(self, agent_id: str, *, force: bool = False) -> None:
        self._grpc.invoke(calls.remove_agent(agent_id, force))

    def discover_agents(
        self, addresses: Sequence[str] = (), *, add: bool = False, key: str = ""
    ) -> list[DiscoveredAgent]:
        """Probe ``host:port`` addresses (none: the agents that registered themselves), with
        the agents' ``key`` (empty: the key each registered with)."""
        return self._grpc.invoke(calls.discover_agents(addresses, add, key))

    # clusters
    def create_cluster(
        self,
        cluster_id: str,
        agent_ids: Sequence[str],
        *,
        num_ilds: int | None = None,
        topology: IldTopology | None = None,
        cluster_topology: GwTopology | None = None,
    ) -> Cluster:
        rpc = calls.create_cluster(cluster_id, agent_ids, num_ilds, topology, cluster_topology)
        return self._grpc.invoke(rpc)

    def list_clusters(self) -> list[Cluster]:
        return self._grpc.invoke(calls.list_clusters())

    def remove_cluster(self, cluster_id: str, *, force: bool = False) -> None:
        self._grpc.invoke(calls.remove_cluster(cluster_id, force))

    def test_cluster(self, cluster_id: str, tests: Sequence[LinkTest] = ()) -> ClusterTestReport:
        """Run the link tests (all five when ``tests`` is empty) over every agent."""
        return self._grpc.invoke(calls.cluster_test(cluster_id, tests))

    # allocations
    def create_allocation(
        self,
        allocation_id: str,
        cluster_id: str,
        *,
        size: int | None = None,
        agent_ids: Sequence[str] = (),
        hosts: Sequence[str] = (),
    ) -> Allocation:
        """Grant machines of a cluster: ``size`` IPUs (the controller picks) or ``agent_ids``;
        ``hosts`` (addresses or CIDRs) may attach to its IPUs (none: the trusted hosts)."""
        return self._grpc.invoke(
            calls.create_allocation(allocation_id, cluster_id, size, agent_ids, hosts)
        )

    def set_allocation_hosts(self, allocation_id: str, hosts: Sequence[str]) -> Allocation:
        """Replace who may attach to the allocation's IPUs over IPUoF (none: the trusted
        hosts); the agents of its partitions get the change at once."""
        return self._grpc.invoke(calls.set_allocation_hosts(allocation_id, hosts))

    def list_allocations(self, cluster: str | None = None) -> list[Allocation]:
        return self._grpc.invoke(calls.list_allocations(cluster))

    def remove_allocation(self, allocation_id: str, *, force: bool = False) -> None:
        self._grpc.invoke(calls.remove_allocation(allocation_id, force))

    # users
    def create_user(
        self, user_id: str, *, allocation_ids: Sequence[str] = (), admin: bool = False
    ) -> CreatedUser:
        """Create a user; the reply carries its access key, which is shown only once."""
        return self._grpc.invoke(calls.create_user(user_id, allocation_ids, admin))

    def list_users(self) -> list[User]:
        return self._grpc.invoke(calls.list_users())

    def remove_user(self, user_id: str) -> None:
        self._grpc.invoke(calls.remove_user(user_id))

    def grant_allocation(self, allocation_id: str, user_id: str) -> User:
        """Let an existing user use the allocation too (its key is unchanged)."""
        return self._grpc.invoke(calls.grant_allocation(allocation_id, user_id))

    def revoke_allocation(self, allocation_id: str, user_id: str) -> User:
        """Take the allocation away from the user (at its next call)."""
        return self._grpc.invoke(calls.revoke_allocation(allocation_id, user_id))

    # partitions, faults, attributes, audit log
    def list_partitions(
        self, *, allocation: str | None = None, cluster: str | None = None
    ) -> list[PartitionInfo]:
        return self._grpc.invoke(calls.list_partitions(allocation, cluster))

    def inject_fault(self, agent_id: str, fault: Fault) -> AgentFaults:
        return self._grpc.invoke(calls.inject_fault(agent_id, fault))

    def clear_fault(self, agent_id: str, fault: Fault | None = None) -> AgentFaults:
        """Clear one fault (matched by kind and target), or all of the agent's when ``None``."""
        return self._grpc.invoke(calls.clear_fault(agent_id, fault))

    def list_ipu_attributes(self, agents: Sequence[str] = ()) -> list[IpuAttributes]:
        return self._grpc.invoke(calls.list_ipu_attributes(agents))

    def list_events(self, **filters: Unpack[EventFilter]) -> list[AuditEvent]:
        """The audit log, newest first."""
        return self._grpc.invoke(calls.list_events(filters))

    # agent registration tokens
    def create_agent_token(self, label: str = "") -> IssuedAgentToken:
        """A new agent registration token; its text is shown only once."""
        return self._grpc.invoke(calls.create_agent_token(label))

    def list_agent_tokens(self) -> list[AgentToken]:
        return self._grpc.invoke(calls.list_agent_tokens())

    def remove_agent_token(self, token_id: str) -> None:
        self._grpc.invoke(calls.remove_agent_token(token_id))


class AsyncAdminClient:
    """The admin API over ``grpc.aio``; the same methods as :class:`AdminClient`."""

    def __init__(
        self,
        endpoint: Endpoint,
        *,
        hint: str = ADMIN_HINT,
        credentials_hint: str = DEFAULT_CREDENTIALS_HINT,
        retry: RetryPolicy = DEFAULT_RETRY,
    ) -> None:
        self.endpoint = endpoint
        self._grpc = AsyncGrpcTransport(Diagnosis(endpoint, hint, credentials_hint), retry)

    @classmethod
    def from_config(
        cls,
        config: str | None = None,
        *,
        env: Mapping[str, str] | None = None,
        **overrides: str | int | float | None,
    ) -> AsyncAdminClient:
        return cls(_admin_endpoint(config, env, overrides))

    async def __aenter__(self) -> AsyncAdminClient:
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        await self._grpc.close()

    async def version(self) -> Version:
        return Version(await self._grpc.invoke(user_calls.version()), self.endpoint.target)

    async def create_agent(self, agent_id: str, host: str, port: int, *, key: str = "") -> Agent:
        """Add an agent by address; ``key`` is the one it answers to (``vipu-agent
        --key-file``; empty: the key it registered with)."""
        return await self._grpc.invoke(calls.create_agent(agent_id, host, port, key))

    async def list_agents(self, cluster: str | None = None) -> list[Agent]:
        return await self._grpc.invoke(calls.list_agents(cluster))

    async def remove_agent(self, agent_id: str, *, force: bool = False) -> None:
        await self._grpc.invoke(calls.remove_agent(agent_id, force))

    async def discover_agents(
        self, addresses: Sequence[str] = (), *, add: bool = False, key: str = ""
    ) -> list[DiscoveredAgent]:
        return await self._grpc.invoke(calls.discover_agents(addresses, add, key))

    async def create_cluster(
        self,
        cluster_id: str,
        agent_ids: Sequence[str],
        *,
        num_ilds: int | None = None,
        topology: IldTopology | None = None,
        cluster_topology: GwTopology | None = None,
    ) -> Cluster:
        rpc = calls.create_cluster(cluster_id, agent_ids, num_ilds, topology, cluster_topology)
        return await self._grpc.invoke(rpc)

    async def list_clusters(self) -> list[Cluster]:
        return await self._grpc.invoke(calls.list_clusters())

    async def remove_cluster(self, cluster_id: str, *, force: bool = False) -> None:
        await self._grpc.invoke(calls.remove_cluster(cluster_id, force))

    async def test_cluster(
        self, cluster_id: str, tests: Sequence[LinkTest] = ()
    ) -> ClusterTestReport:
        return await self._grpc.invoke(calls.cluster_test(cluster_id, tests))

    async def create_allocation(
        self,
        allocation_id: str,
        cluster_id: str,
        *,
        size: int | None = None,
        agent_ids: Sequence[str] = (),
        hosts: Sequence[str] = (),
    ) -> Allocation:
        rpc = calls.create_allocation(allocation_id, cluster_id, size, agent_ids, hosts)
        return await self._grpc.invoke(rpc)

    async def set_allocation_hosts(self, allocation_id: str, hosts: Sequence[str]) -> Allocation:
        return await self._grpc.invoke(calls.set_allocation_hosts(allocation_id, hosts))

    async def list_allocations(self, cluster: str | None = None) -> list[Allocation]:
        return await self._grpc.invoke(calls.list_allocations(cluster))

    async def remove_allocation(self, allocation_id: str, *, force: bool = False) -> None:
        await self._grpc.invoke(calls.remove_allocation(allocation_id, force))

    async def create_user(
        self, user_id: str, *, allocation_ids: Sequence[str] = (), admin: bool = False
    ) -> CreatedUser:
        return await self._grpc.invoke(calls.create_user(user_id, allocation_ids, admin))

    async def list_users(self) -> list[User]:
        return await self._grpc.invoke(calls.list_users())

    async def remove_user(self, user_id: str) -> None:
        await self._grpc.invoke(calls.remove_user(user_id))

    async def grant_allocation(self, allocation_id: str, user_id: str) -> User:
        return await self._grpc.invoke(calls.grant_allocation(allocation_id, user_id))

    async def revoke_allocation(self, allocation_id: str, user_id: str) -> User:
        return await self._grpc.invoke(calls.revoke_allocation(allocation_id, user_id))

    async def list_partitions(
        self, *, allocation: str | None = None, cluster: str | None = None
    ) -> list[PartitionInfo]:
        return await self._grpc.invoke(calls.list_partitions(allocation, cluster))

    async def inject_fault(self, agent_id: str, fault: Fault) -> AgentFaults:
        return await self._grpc.invoke(calls.inject_fault(agent_id, fault))

    async def clear_fault(self, agent_id: str, fault: Fault | None = None) -> AgentFaults:
        return await self._grpc.invoke(calls.clear_fault(agent_id, fault))

    async def list_ipu_attributes(self, agents: Sequence[str] = ()) -> list[IpuAttributes]:
        return await self._grpc.invoke(calls.list_ipu_attributes(agents))

    async def list_events(self, **filters: Unpack[EventFilter]) -> list[AuditEvent]:
        return await self._grpc.invoke(calls.list_events(filters))

    async def create_agent_token(self, label: str = "") -> IssuedAgentToken:
        return await self._grpc.invoke(calls.create_agent_token(label))

    async def list_agent_tokens(self) -> list[AgentToken]:
        return await self._grpc.invoke(calls.list_agent_tokens())

    async def remove_agent_token(self, token_id: str) -> None:
        await self._grpc.invoke(calls.remove_agent_token(token_id))
