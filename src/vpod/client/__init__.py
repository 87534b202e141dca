"""vpod's public Python API: typed clients of the controller's APIs, sync and asyncio.

=====================  ===========================  =================================
API                    blocking                     asyncio
=====================  ===========================  =================================
V-IPU user gRPC        :class:`UserClient`          :class:`AsyncUserClient`
admin gRPC             :class:`AdminClient`         :class:`AsyncAdminClient`
REST (HTTP, JSON)      :class:`RestClient`          :class:`AsyncRestClient`
cloud (HTTP, JSON)     :class:`CloudClient`         :class:`AsyncCloudClient`
=====================  ===========================  =================================

Settings come from the same places as the CLIs': ``vipu-cli.hcl`` and
``VIPU_CLI_*`` for the gRPC APIs (:mod:`.config`), ``vpod-cli.toml`` and
``VPOD_URL``/``VPOD_TOKEN`` for the cloud (:mod:`.cloud_config`); highest
first: arguments, environment, config file, defaults. :func:`connect`,
:func:`connect_admin` and :func:`connect_cloud` are the one-line start in a
notebook::

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
        │   ├── OutOfRange          a number or time the API cannot carry (also a ValueError)
        │   └── ConfigError         a setting or config file cannot be used
        ├── NotConfigured           no cloud URL or token anywhere
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

import importlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .config import Endpoint, Settings, admin_endpoint, load_settings, user_endpoint
from .errors import (
    AlreadyExists,
    ConfigError,
    Conflict,
    DeadlineExceeded,
    FailedPrecondition,
    InvalidArgument,
    NoCapacity,
    NotConfigured,
    NotFound,
    OutOfRange,
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

if TYPE_CHECKING:
    from .admin import AdminClient, AsyncAdminClient
    from .admin_calls import AllocationOptions, ClusterLayout, EventFilter
    from .admin_records import (
        Agent,
        AgentFaults,
        AgentState,
        AgentToken,
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
        IssuedAgentToken,
        LinkTest,
        PartitionInfo,
        User,
    )
    from .cloud import AsyncCloudClient, CloudClient
    from .cloud_calls import ClusterOptions
    from .cloud_config import CloudSettings, resolve_cloud
    from .cloud_records import (
        CloudCluster,
        ClusterSsh,
        ClusterStorage,
        Console,
        DatasetStorage,
        Exceeded,
        Flavor,
        Host,
        Invoice,
        InvoiceDay,
        InvoiceDays,
        InvoiceLine,
        Keypair,
        Limits,
        MetadataUpdate,
        Phase,
        Project,
        ProjectCreated,
        Reservation,
        Server,
        ServerSsh,
        Shell,
        SshHostKey,
        StorageEndpoint,
        Task,
        TaskState,
        Token,
        Utilisation,
        VipuAccess,
        Volume,
    )
    from .cloud_ssh import SshTunnel
    from .fabric import Change, ClusterMap, Fragmentation, Identity
    from .partition_keys import MintedPartitionKey, PartitionKey
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
    from .rest import AsyncRestClient, RestClient, RestSettings
    from .retry import RetryPolicy
    from .user import AsyncUserClient, UserClient
    from .user_calls import PartitionOptions

_LAZY: dict[str, str] = {
    "RetryPolicy": ".retry",
    "AdminClient": ".admin",
    "Agent": ".admin_records",
    "AgentFaults": ".admin_records",
    "AgentState": ".admin_records",
    "AgentToken": ".admin_records",
    "Allocation": ".admin_records",
    "AsyncAdminClient": ".admin",
    "AsyncUserClient": ".user",
    "AuditEvent": ".admin_records",
    "Cluster": ".admin_records",
    "ClusterTestReport": ".admin_records",
    "ClusterTestResult": ".admin_records",
    "CreatedUser": ".admin_records",
    "DiscoveredAgent": ".admin_records",
    "AllocationOptions": ".admin_calls",
    "ClusterLayout": ".admin_calls",
    "EventFilter": ".admin_calls",
    "Fault": ".admin_records",
    "FaultKind": ".admin_records",
    "GcdConfig": ".records",
    "IpuAttributes": ".records",
    "IpuLocation": ".admin_records",
    "IpuofConfig": ".records",
    "IpuofDevice": ".records",
    "IssuedAgentToken": ".admin_records",
    "LinkTest": ".admin_records",
    "Partition": ".records",
    "PartitionKey": ".partition_keys",
    "MintedPartitionKey": ".partition_keys",
    "PartitionInfo": ".admin_records",
    "PartitionIpu": ".records",
    "PartitionOptions": ".user_calls",
    "PartitionStatus": ".records",
    "User": ".admin_records",
    "UserClient": ".user",
    "Version": ".records",
    "AsyncCloudClient": ".cloud",
    "AsyncRestClient": ".rest",
    "Change": ".fabric",
    "CloudClient": ".cloud",
    "CloudCluster": ".cloud_records",
    "CloudSettings": ".cloud_config",
    "DatasetStorage": ".cloud_records",
    "ClusterMap": ".fabric",
    "ClusterOptions": ".cloud_calls",
    "ClusterStorage": ".cloud_records",
    "ClusterSsh": ".cloud_records",
    "Console": ".cloud_records",
    "Keypair": ".cloud_records",
    "ServerSsh": ".cloud_records",
    "SshHostKey": ".cloud_records",
    "SshTunnel": ".cloud_ssh",
    "Exceeded": ".cloud_records",
    "Flavor": ".cloud_records",
    "Fragmentation": ".fabric",
    "Host": ".cloud_records",
    "Identity": ".fabric",
    "Invoice": ".cloud_records",
    "InvoiceDay": ".cloud_records",
    "InvoiceDays": ".cloud_records",
    "InvoiceLine": ".cloud_records",
    "Limits": ".cloud_records",
    "MetadataUpdate": ".cloud_records",
    "Phase": ".cloud_records",
    "Project": ".cloud_records",
    "ProjectCreated": ".cloud_records",
    "Reservation": ".cloud_records",
    "RestClient": ".rest",
    "RestSettings": ".rest",
    "Server": ".cloud_records",
    "Shell": ".cloud_records",
    "StorageEndpoint": ".cloud_records",
    "Task": ".cloud_records",
    "TaskState": ".cloud_records",
    "Token": ".cloud_records",
    "Utilisation": ".cloud_records",
    "VipuAccess": ".cloud_records",
    "Volume": ".cloud_records",
    "resolve_cloud": ".cloud_config",
}
"""Names served on first use: the gRPC clients import grpc and protobuf, the HTTP ones
httpx; a program using one API (an IPUoF application finding its partition, the cloud
CLI) should not pay for the others at start-up."""


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


__all__ = [
    "AdminClient",
    "Agent",
    "AgentFaults",
    "AgentState",
    "AgentToken",
    "Allocation",
    "AllocationOptions",
    "AlreadyExists",
    "AsyncAdminClient",
    "AsyncCloudClient",
    "AsyncRestClient",
    "AsyncUserClient",
    "AuditEvent",
    "Change",
    "CloudClient",
    "CloudCluster",
    "CloudSettings",
    "Cluster",
    "ClusterLayout",
    "ClusterMap",
    "ClusterOptions",
    "ClusterSsh",
    "ClusterStorage",
    "ClusterTestReport",
    "ClusterTestResult",
    "ConfigError",
    "Conflict",
    "Console",
    "CreatedUser",
    "DatasetStorage",
    "DeadlineExceeded",
    "DiscoveredAgent",
    "Endpoint",
    "EventFilter",
    "Exceeded",
    "FailedPrecondition",
    "Fault",
    "FaultKind",
    "Flavor",
    "Fragmentation",
    "GcdConfig",
    "Host",
    "Identity",
    "InvalidArgument",
    "Invoice",
    "InvoiceDay",
    "InvoiceDays",
    "InvoiceLine",
    "IpuAttributes",
    "IpuLocation",
    "IpuofConfig",
    "IpuofDevice",
    "IssuedAgentToken",
    "Keypair",
    "Limits",
    "LinkTest",
    "MetadataUpdate",
    "MintedPartitionKey",
    "NoCapacity",
    "NotConfigured",
    "NotFound",
    "OutOfRange",
    "Partition",
    "PartitionInfo",
    "PartitionIpu",
    "PartitionKey",
    "PartitionOptions",
    "PartitionStatus",
    "PermanentError",
    "PermissionDenied",
    "Phase",
    "Project",
    "ProjectCreated",
    "RateLimited",
    "Reservation",
    "RestClient",
    "RestSettings",
    "RetryPolicy",
    "RetryableError",
    "Server",
    "ServerError",
    "ServerSsh",
    "Settings",
    "Shell",
    "SshHostKey",
    "SshTunnel",
    "StorageEndpoint",
    "Task",
    "TaskFailed",
    "TaskState",
    "Timeout",
    "TlsError",
    "Token",
    "Unauthenticated",
    "Unavailable",
    "Unreachable",
    "User",
    "UserClient",
    "Utilisation",
    "Version",
    "VipuAccess",
    "Volume",
    "VpodError",
    "WrongEndpoint",
    "admin_endpoint",
    "connect",
    "connect_admin",
    "connect_cloud",
    "load_settings",
    "resolve_cloud",
    "user_endpoint",
]


def connect(
    config: str | None = None,
    *,
    env: Mapping[str, str] | None = None,
    **overrides: str | int | float | None,
) -> UserClient:
    """A :class:`UserClient` configured like ``vipu`` (``api_host="ctl"`` ... override)."""
    from .user import UserClient

    return UserClient.from_config(config, env=env, **overrides)


def connect_admin(
    config: str | None = None,
    *,
    env: Mapping[str, str] | None = None,
    **overrides: str | int | float | None,
) -> AdminClient:
    """An :class:`AdminClient` configured like ``vipu-admin``."""
    from .admin import AdminClient

    return AdminClient.from_config(config, env=env, **overrides)


def connect_cloud(
    config: str | None = None,
    *,
    url: str | None = None,
    token: str | None = None,
    env: Mapping[str, str] | None = None,
) -> CloudClient:
    """A :class:`CloudClient` configured like ``vpod`` (``vpod-cli.toml``, ``VPOD_*``)."""
    from .cloud import CloudClient

    return CloudClient.from_config(config, url=url, token=token, env=env)
