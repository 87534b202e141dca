"""Clients of the V-IPU user API: :class:`UserClient` (blocking) and :class:`AsyncUserClient`.

Both run the same call descriptions (:mod:`.user_calls`) and raise the same
:mod:`.errors`. The user API has no allocation call: ``list_allocations``
calls the admin service's ``ListAllocations``, which the controller serves on
the user endpoint too, with the user's own credentials; it shows a user only
the allocations granted to them. A user client never dials the admin
endpoint (a vPOD's server has no way to it).

    >>> from vpod.client import UserClient
    >>> with UserClient.from_config() as vipu:          # vipu-cli.hcl, VIPU_CLI_*
    ...     vipu.create_partition("p1", 4)
    ...     vipu.wait_until_active("p1")
    ...     files = vipu.ipuof_config("p1").files()
"""

from __future__ import annotations

from . import partition_keys as key_calls
from . import user_calls as calls
from .api_methods import api_call
from .config import user_endpoint
from .grpc_api import AsyncGrpcApi, BlockingGrpcApi, GrpcApi
from .grpc_transport import DEFAULT_HINT
from .partition_waits import WaitUntilActive

ADMIN_HINT = "admin-api-host/admin-api-port in vipu-cli.hcl or VIPU_CLI_ADMIN_API_PORT"


class UserMethods:
    """The user API's methods that the gRPC user clients and the REST clients share: one
    declaration naming the call over gRPC and over REST (the same signature and record)."""

    list_partitions = api_call(calls.list_partitions, rest="list_partitions")
    get_partition = api_call(calls.get_partition, rest="get_partition")
    remove_partition = api_call(calls.remove_partition, rest="remove_partition")
    reset_partition = api_call(calls.reset_partition, rest="reset_partition")
    partition_status = api_call(calls.partition_status, rest="partition_status")
    wait_until_active = api_call(WaitUntilActive(calls.partition_status), rest="wait_until_active")
    list_ipu_attributes = api_call(calls.list_ipu_attributes, rest="list_ipu_attributes")
    list_allocations = api_call(calls.list_allocations, rest="list_allocations")


class _UserApi(GrpcApi, UserMethods):
    """The user API's methods, the same for the blocking client and its asyncio twin.

    ``endpoint`` is the user endpoint (port 8090 by default).
    """

    default_hint = DEFAULT_HINT
    endpoint_in = staticmethod(user_endpoint)

    create_partition = api_call(calls.create_partition)
    ipuof_config = api_call(calls.ipuof_config)
    create_partition_key = api_call(key_calls.create_partition_key)
    list_partition_keys = api_call(key_calls.list_partition_keys)
    remove_partition_key = api_call(key_calls.remove_partition_key)


class UserClient(_UserApi, BlockingGrpcApi):
    """The user API of one controller, over blocking gRPC."""


class AsyncUserClient(_UserApi, AsyncGrpcApi):
    """The user API over ``grpc.aio``; the same methods as :class:`UserClient`."""
