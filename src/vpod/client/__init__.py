"""vpod's public Python API: typed clients of the controller's APIs, sync and asyncio.

=====================  ===========================  =================================
API                    blocking                     asyncio
=====================  ===========================  =================================
V-IPU user gRPC        :class:`UserClient`          :class:`AsyncUserClient`
admin gRPC             :class:`AdminClient`         :class:`AsyncAdminClient`
=====================  ===========================  =================================

Settings come from the same places as the CLIs' (:mod:`.config`):
``vipu-cli.hcl`` and ``VIPU_CLI_*`` for the gRPC APIs, highest first:
arguments, environment, config file, defaults. :func:`connect` and
:func:`connect_admin` are the one-line start in a notebook::

    import vpod.client
    vipu = vpod.client.connect()                 # ./vipu-cli.hcl or $VIPU_CLI_CONFIG
    vipu.create_partition("p1", 4)
    vipu.ipuof_config("p1").files()

Every failure is one exception tree; ``str(error)`` is the sentence to show
(the server's own when it answered)::

    VpodError                       .message .code (gRPC status name) .status (HTTP) .endpoint
    ├── RetryableError              the same call may succeed later
    │   ├── Unreachable             no connection: refused, unresolvable, nothing in time
    │   ├── Unavailable             the server cannot serve it now (UNAVAILABLE, 502/503)
    │   ├── DeadlineExceeded        reached, but no answer before the deadline (504)
    │   ├── RateLimited             HTTP 429
    │   └── Timeout                 a wait helper gave up
    └── PermanentError              change the request or the setup first
        ├── InvalidArgument         bad request (INVALID_ARGUMENT, 400)
        │   └── ConfigError         a setting or config file cannot be used
        ├── NotFound                unknown id, or not yours (404)
        ├── Conflict                409
        │   ├── AlreadyExists       duplicate id
        │   ├── FailedPrecondition  the state forbids it now
        │   └── NoCapacity          no placement fits (RESOURCE_EXHAUSTED)
        ├── Unauthenticated         missing or wrong credentials (401)
        ├── PermissionDenied        not allowed, e.g. not an administrator (403)
        ├── TlsError                client and server TLS settings do not match
        ├── WrongEndpoint           the address serves another API (UNIMPLEMENTED)
        ├── ServerError             INTERNAL, UNKNOWN, 500: a bug, see the server's log
        └── TaskFailed              a cloud task ended in ERROR (.task)
"""

from __future__ import annotations

from collections.abc import Mapping

from .admin import AdminClient, AsyncAdminClient
from .admin_calls import EventFilter
from .admin_records import (
    Agent,
    AgentFaults,
    AgentState,
    Allocation,
    AuditEvent,
    Cluster,
    ClusterTestReport,
    ClusterTestResult,
    CreatedUser,
    DiscoveredAgent,
    Fault,
    FaultKind,
    IpuLocation,
    LinkTest,
    PartitionInfo,
    User,
)
from .config import Endpoint, Settings, admin_endpoint, load_settings, user_endpoint
from .errors import (
    AlreadyExists,
    ConfigError,
    Conflict,
    DeadlineExceeded,
    FailedPrecondition,
    InvalidArgument,
    NoCapacity,
    NotFound,
    PermanentError,
    PermissionDenied,
    RateLimited,
    RetryableError,
    ServerError,
    TaskFailed,
    Timeout,
    TlsError,
    Unauthenticated,
    Unavailable,
    Unreachable,
    VpodError,
    WrongEndpoint,
)
from .records import (
    GcdConfig,
    IpuAttributes,
    IpuofConfig,
    IpuofDevice,
    Partition,
    PartitionIpu,
    PartitionStatus,
    Version,
)
from .user import AsyncUserClient, UserClient
from .user_calls import PartitionOptions

__all__ = [
    "AdminClient",
    "Agent",
    "AgentFaults",
    "AgentState",
    "Allocation",
    "AlreadyExists",
    "AsyncAdminClient",
    "AsyncUserClient",
    "AuditEvent",
    "Cluster",
    "ClusterTestReport",
    "ClusterTestResult",
    "ConfigError",
    "Conflict",
    "CreatedUser",
    "DeadlineExceeded",
    "DiscoveredAgent",
    "Endpoint",
    "EventFilter",
    "FailedPrecondition",
    "Fault",
    "FaultKind",
    "GcdConfig",
    "InvalidArgument",
    "IpuAttributes",
    "IpuLocation",
    "IpuofConfig",
    "IpuofDevice",
    "LinkTest",
    "NoCapacity",
    "NotFound",
    "Partition",
    "PartitionInfo",
    "PartitionIpu",
    "PartitionOptions",
    "PartitionStatus",
    "PermanentError",
    "PermissionDenied",
    "RateLimited",
    "RetryableError",
    "ServerError",
    "Settings",
    "TaskFailed",
    "Timeout",
    "TlsError",
    "Unauthenticated",
    "Unavailable",
    "Unreachable",
    "User",
    "UserClient",
    "Version",
    "VpodError",
    "WrongEndpoint",
    "admin_endpoint",
    "connect",
    "connect_admin",
    "load_settings",
    "user_endpoint",
]


def connect(
    config: str | None = None,
    *,
    env: Mapping[str, str] | None = None,
    **overrides: str | int | None,
) -> UserClient:
    """A :class:`UserClient` configured like ``vipu`` (``api_host="ctl"`` ... override)."""
    return UserClient.from_config(config, env=env, **overrides)


def connect_admin(
    config: str | None = None,
    *,
    env: Mapping[str, str] | None = None,
    **overrides: str | int | None,
) -> AdminClient:
    """An :class:`AdminClient` configured like ``vipu-admin``."""
    return AdminClient.from_config(config, env=env, **overrides)
