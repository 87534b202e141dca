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


class _AdminApi(GrpcApi):
    """The admin API's methods, the same for the blocking client and its asyncio twin."""

    default_hint = ADMIN_HINT
    endpoint_in = staticmethod(admin_endpoint)

    # agents
    create_agent = api_call(calls.create_agent)
    list_agents = api_call(calls.list_agents)
    remove_agent = api_call(calls.remove_agent)
    discover_agents = api_call(calls.discover_agents)

    # clusters
    create_cluster = api_call(calls.create_cluster)
    list_clusters = api_call(calls.list_clusters)
    remove_cluster = api_call(calls.remove_cluster)
    test_cluster = api_call(calls.cluster_test)

    # allocations
    create_allocation = api_call(calls.create_allocation)
    set_allocation_hosts = api_call(calls.set_allocation_hosts)
    list_allocations = api_call(calls.list_allocations)
    remove_allocation = api_call(calls.remove_allocation)

    # users
    create_user = api_call(calls.create_user)
    list_users = api_call(calls.list_users)
    remove_user = api_call(calls.remove_user)
    grant_allocation = api_call(calls.grant_allocation)
    revoke_allocation = api_call(calls.revoke_allocation)

    # partitions, faults, attributes, audit log
    list_partitions = api_call(calls.list_partitions)
    inject_fault = api_call(calls.inject_fault)
    clear_fault = api_call(calls.clear_fault)
    list_ipu_attributes = api_call(calls.list_ipu_attributes)
    list_events = api_call(calls.list_events)

    # agent registration tokens
    create_agent_token = api_call(calls.create_agent_token)
    list_agent_tokens = api_call(calls.list_agent_tokens)
    remove_agent_token = api_call(calls.remove_agent_token)


class AdminClient(_AdminApi, BlockingGrpcApi):
    """The admin API of one controller, over blocking gRPC."""


class AsyncAdminClient(_AdminApi, AsyncGrpcApi):
    """The admin API over ``grpc.aio``; the same methods as :class:`AdminClient`."""
