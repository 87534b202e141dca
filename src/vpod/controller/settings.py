"""Controller settings: one frozen value, built by the command line and passed down."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from vpod.domain.host_networks import DEFAULT_TRUSTED_HOSTS
from vpod.store import sqlite_url

VIPU_API_VERSION = "1.18.0"
"""The V-IPU release whose user API this controller serves (``GetVersion``)."""

IPUOF_SERVER_VERSION = "2.6.0"


@dataclass(frozen=True)
class Settings:
    data_dir: Path = field(default_factory=lambda: Path("vpod-data"))
    database_url: str = ""
    """Empty: SQLite in ``data_dir``."""
    host: str = "127.0.0.1"
    user_port: int = 8090
    admin_host: str = "127.0.0.1"
    admin_port: int = 8091
    autodiscovery_addresses: tuple[str, ...] = ()
    """Further addresses on which agents may announce themselves (``-a``), on the admin port."""
    http_host: str = "127.0.0.1"
    http_port: int = 8080
    secure: bool = False
    agent_timeout_s: float = 5.0
    """Deadline for one call to one agent (configure, release, reset)."""
    max_auto_reset_retries: int = 3
    heartbeat_interval_s: float = 1.0
    unreachable_after_s: float = 3.0
    lease_ttl_s: float = 3.0
    """How long the leader's lease lasts unless renewed (each heartbeat round renews it)."""
    recovery_interval_s: float = 10.0
    """How often the leader reconciles agents and finishes abandoned operations."""
    operation_deadline_s: float = 30.0
    """An operation with no owner lease (older rows) counts as abandoned after this."""
    owner_lease_ttl_s: float = 10.0
    """How long a controller's owner lease outlives its last renewal (every heartbeat
    interval): its operations are recovered only once the lease has expired."""
    api_version: str = VIPU_API_VERSION
    ipuof_server_version: str = IPUOF_SERVER_VERSION
    max_connections: int = -1
    """Connections per listener; -1: shared out of the file-descriptor limit, 0: no cap
    (see :mod:`.listener_limits`)."""
    replica_id: str = ""
    """Names this controller in leases and logs; empty: host and process id."""
    trusted_hosts: tuple[str, ...] = DEFAULT_TRUSTED_HOSTS
    """CIDRs whose applications may attach over IPUoF to partitions of an allocation whose
    own hosts were never set (``--trusted-hosts``): the operator's trusted host network."""
    metrics_token_file: Path | None = None
    """A file holding the bearer token ``/metrics`` accepts besides an administrator's
    credentials (``--metrics-token-file``; ``vpod up`` writes ``DATA_DIR/metrics.token``)."""

    def store_url(self) -> str:
        if self.database_url:
            return self.database_url
        return sqlite_url(self.data_dir)
