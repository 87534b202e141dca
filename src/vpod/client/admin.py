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

from . import admin_calls as calls
from .api_methods import api_call
from .config import admin_endpoint
from .grpc_api import AsyncGrpcApi, BlockingGrpcApi, GrpcApi
from .user import ADMIN_HINT


class AdminMethods:
    """The admin API's methods that the admin clients and the REST clients share: one
    declaration naming the call over gRPC and over REST (the same signature and record)."""

    # agents
    create_agent = api_call(calls.create_agent, rest="create_agent")
    list_agents = api_call(calls.list_agents, rest="list_agents")
    remove_agent = api_call(calls.remove_agent, rest="remove_agent")
    discover_agents = api_call(calls.discover_agents, rest="discover_agents")
    inject_fault = api_call(calls.inject_fault, rest="inject_fault")
    clear_fault = api_call(calls.clear_fault, rest="clear_fault")

    # clusters
    create_cluster = api_call(calls.create_cluster, rest="create_cluster")
    list_clusters = api_call(calls.list_clusters, rest="list_clusters")
    remove_cluster = api_call(calls.remove_cluster, rest="remove_cluster")
    test_cluster = api_call(calls.cluster_test, rest="cluster_test")

    # allocations
    create_allocation = api_call(calls.create_allocation, rest="create_allocation")
    set_allocation_hosts = api_call(calls.set_allocation_hosts, rest="set_allocation_hosts")
    remove_allocation = api_call(calls.remove_allocation, rest="remove_allocation")

    # users, the audit log
    create_user = api_call(calls.create_user, rest="create_user")
    list_users = api_call(calls.list_users, rest="list_users")
    remove_user = api_call(calls.remove_user, rest="remove_user")
    rotate_user_key = api_call(calls.rotate_user_key, rest="rotate_user_key")
    list_events = api_call(calls.list_events, rest="list_events")


class _AdminApi(GrpcApi, AdminMethods):
    """The admin API's methods, the same for the blocking client and its asyncio twin."""

    default_hint = ADMIN_HINT
    endpoint_in = staticmethod(admin_endpoint)

    list_allocations = api_call(calls.list_allocations)
    grant_allocation = api_call(calls.grant_allocation)
    revoke_allocation = api_call(calls.revoke_allocation)
    list_partitions = api_call(calls.list_partitions)
    list_ipu_attributes = api_call(calls.list_ipu_attributes)

    # agent registration tokens
    create_agent_token = api_call(calls.create_agent_token)
    list_agent_tokens = api_call(calls.list_agent_tokens)
    remove_agent_token = api_call(calls.remove_agent_token)


class AdminClient(_AdminApi, BlockingGrpcApi):
    """The admin API of one controller, over blocking gRPC."""


class AsyncAdminClient(_AdminApi, AsyncGrpcApi):
    """The admin API over ``grpc.aio``; the same methods as :class:`AdminClient`."""
