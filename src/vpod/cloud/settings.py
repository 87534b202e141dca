"""Cloud settings: one frozen value, read from ``DATA_DIR/cloud.toml`` when it exists.

Every key is optional::

    # DATA_DIR/cloud.toml (or the file named by VPOD_CLOUD_CONFIG)
    vipu_clusters = ["cloud"]     # V-IPU clusters vPODs are carved from (default: all)
    compute_driver = "local"      # "local" (embedded), or "openstack" (Nova, docs/openstack.md)
    volume_driver = "local"       # "local", or "cinder"
    metering_sink = "none"        # "none", or "jsonl" (DATA_DIR/cloud/metering.jsonl)
    user_api_host = ""            # address servers dial for the V-IPU user API
    task_poll_s = 1.0             # how often a runner looks for tasks another replica queued
    health_check_s = 2.0          # how often ACTIVE vPODs are checked for unreachable machines
    gpu_agent_silent_s = 30.0     # a GPU host whose agent said nothing for this long is unusable
    task_attempts = 3             # tries of a task whose failures are temporary, in all
    task_retry_s = 1.0            # wait before the second try; doubled before each next one
    sandbox_uid_first = 200000    # servers run as uids first .. first + count - 1 (docs/cloud.md)
    sandbox_uid_count = 100000
    bwrap_path = ""               # where bubblewrap is; empty: on PATH
    unsafe_shared_host = false    # UNSAFE: servers without a sandbox where the host has none
    unsafe_shared_network = false # UNSAFE: sandboxed servers on the host's network (no netns)
    tenant_network_pool = "169.254.64.0/18"  # vPODs' subnets (docs/security.md, tenant networks)
    tenant_network_prefix = 26    # each vPOD's subnet: /26 (up to 52 servers)
    tenant_outbound = true        # servers may reach addresses beyond this host (masqueraded)
    ssh_direct_ports = ""         # "20000-20999": a host port per server to its sshd (docs/ssh.md)
    ssh_direct_bind = "127.0.0.1" # where those ports listen ("0.0.0.0": every address)
    ssh_direct_host = ""          # the host name clients dial for them; empty: see docs/ssh.md

    [storage_endpoints.s3]        # S3-compatible services tenants may register buckets on
    url = "https://s3.example.net"
    region = "us-east-1"          # default us-east-1
    path_style = true             # URL/bucket rather than bucket.HOST (default false)

    [openstack]                   # the OpenStack drivers' cloud and names (docs/openstack.md)
    cloud = "vpod"                # a cloud of clouds.yaml
"""

from __future__ import annotations

import ipaddress
import os
import re
import tomllib
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from .dataset_rules import parse_endpoints
from .direct_ports import PortRange, parse_port_range
from .drivers import COMPUTE_DRIVERS, VOLUME_DRIVERS, OpenStackOptions, parse_openstack
from .drivers.sandbox import UidRange
from .drivers.tenant_network import DEFAULT_POOL, DEFAULT_PREFIX, NetworkSettings
from .model import errors
from .model.datasets import StorageEndpoint
from .reservations import DEFAULT_TERMS_TEXT, parse_terms

CONFIG_FILE = "cloud.toml"
CONFIG_ENV = "VPOD_CLOUD_CONFIG"
ADMIN_TOKEN_FILE = "cloud-admin.token"
SEALING_KEY_FILE = "dataset-storage.key"
DRIVERS = {"compute_driver": tuple(COMPUTE_DRIVERS), "volume_driver": tuple(VOLUME_DRIVERS)}
SINKS = ("none", "jsonl")
_HOST_NAME = re.compile(r"[A-Za-z0-9.:-]{0,253}")
"""A DNS name or an IP address (it lands in OpenSSH's configuration as ``HostName``)."""


@dataclass(frozen=True)
class CloudSettings:
    data_dir: Path = field(default_factory=lambda: Path("vpod-data"))
    vipu_clusters: tuple[str, ...] = ()
    """V-IPU clusters vPOD allocations come from; empty: every cluster, by id."""
    compute_driver: str = "local"
    volume_driver: str = "local"
    metering_sink: str = "none"
    user_api_host: str = ""
    """Where servers reach the V-IPU user API; empty: the controller's own --host."""
    task_poll_s: float = 1.0
    health_check_s: float = 2.0
    gpu_agent_silent_s: float = 30.0
    """A GPU host whose agent sent no sample for this long: its GPUs leave placement and its
    clusters go DEGRADED (docs/gpu.md)."""
    task_attempts: int = 3
    """How many times a task runs when its failures are temporary (1: never again)."""
    task_retry_s: float = 1.0
    """The wait before a task's second attempt, doubled before each later one."""
    lease_ttl_s: float = 10.0
    """Only one controller replica runs cloud tasks: the holder of this lease."""
    reservation_terms: str = DEFAULT_TERMS_TEXT
    """Reservation terms, ``NAME:MONTHS:DISCOUNT`` separated by commas."""
    storage_endpoints: tuple[StorageEndpoint, ...] = ()
    """S3-compatible services projects may register dataset storage on."""
    sandbox_uid_first: int = 200_000
    """The first uid servers run as (each server gets one of its own)."""
    sandbox_uid_count: int = 100_000
    bwrap_path: str = ""
    """Where bubblewrap is; empty: found on PATH."""
    openstack: OpenStackOptions = field(default_factory=OpenStackOptions)
    """The ``[openstack]`` table: the cloud of clouds.yaml and the flavor and image names."""
    unsafe_shared_host: bool = False
    """UNSAFE: where the host cannot sandbox servers, run them anyway, on the host as the
    controller's user (every tenant can read the controller's files and each other's)."""
    unsafe_shared_network: bool = False
    """UNSAFE: where the host's kernel cannot give servers networks of their own (no network
    namespaces, veth, bridges or nftables), keep them sandboxed on the host's network: files,
    processes, uids and GPUs stay apart, but every server reaches every address the host
    does, another vPOD's servers and the agents' ports among them."""
    tenant_network_pool: str = DEFAULT_POOL
    """Where each vPOD's subnet comes from (link-local by default: never leaves the host)."""
    tenant_network_prefix: int = DEFAULT_PREFIX
    tenant_outbound: bool = True
    """Whether servers reach addresses beyond this host; false closes it."""
    ssh_direct_ports: str = ""
    """``FIRST-LAST``: each server gets a host port of this range forwarded to its sshd;
    empty (the default): servers are reached only through the controller's tunnel."""
    ssh_direct_bind: str = "127.0.0.1"
    """The address the direct SSH ports listen on."""
    ssh_direct_host: str = ""
    """The host name clients dial for the direct ports; empty: the bind address, or the API's
    host name when it binds every address."""

    @property
    def direct_ports(self) -> PortRange | None:
        """The direct SSH port range; None when the option is off."""
        return parse_port_range(self.ssh_direct_ports)

    def compute_options(self) -> dict[str, Any]:
        """What the local compute driver is built with."""
        return {
            "uids": UidRange(self.sandbox_uid_first, self.sandbox_uid_count),
            "unsafe_shared_host": self.unsafe_shared_host,
            "bwrap": self.bwrap_path,
            "isolate_network": not self.unsafe_shared_network,
            "network": NetworkSettings(
                pool=self.tenant_network_pool,
                prefix=self.tenant_network_prefix,
                outbound=self.tenant_outbound,
            ),
        }

    @property
    def cloud_dir(self) -> Path:
        """Where local drivers keep servers and volumes, and sinks write."""
        return self.data_dir / "cloud"

    @property
    def admin_token_path(self) -> Path:
        """Written once, when the first administrator token is made (mode 0600)."""
        return self.data_dir / ADMIN_TOKEN_FILE

    @property
    def sealing_key_path(self) -> Path:
        """Keys sealing dataset credentials (made on first use, mode 0600)."""
        return self.data_dir / SEALING_KEY_FILE


def load_settings(data_dir: Path, path: Path | None = None) -> CloudSettings:
    """Settings for a controller on ``data_dir``: from ``path``, ``$VPOD_CLOUD_CONFIG`` or
    ``DATA_DIR/cloud.toml`` (the first that is given), else the defaults."""
    if path is None and os.environ.get(CONFIG_ENV):
        path = Path(os.environ[CONFIG_ENV])
    if path is None:
        path = data_dir / CONFIG_FILE
        if not path.exists():
            return CloudSettings(data_dir=data_dir)
    try:
        raw = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise errors.InvalidArgument(f"cloud settings {path} cannot be read: {exc}") from None
    return parse_settings(raw, data_dir=data_dir, source=str(path))


def parse_settings(raw: dict[str, Any], *, data_dir: Path, source: str) -> CloudSettings:
    known = {f.name for f in fields(CloudSettings)} - {"data_dir"}
    unknown = sorted(set(raw) - known)
    if unknown:
        raise errors.InvalidArgument(
            f"{source}: unknown key {unknown[0]!r}; the keys are {', '.join(sorted(known))}"
        )
    settings = CloudSettings(data_dir=data_dir)
    values: dict[str, Any] = {}
    for key, value in raw.items():
        if key == "vipu_clusters":
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise errors.InvalidArgument(f"{source}: vipu_clusters is a list of cluster ids")
            values[key] = tuple(value)
        elif key in DRIVERS and value not in DRIVERS[key]:
            raise errors.InvalidArgument(
                f"{source}: {key} = {value!r} is not available here: use {', '.join(DRIVERS[key])}"
            )
        elif key == "storage_endpoints":
            values[key] = parse_endpoints(value, source=source)
        elif key == "openstack":
            values[key] = parse_openstack(value, source=source)
        elif key == "reservation_terms":
            if not isinstance(value, str):
                raise errors.InvalidArgument(f"{source}: reservation_terms is a string")
            parse_terms(value, source=source)
            values[key] = value
        elif key == "metering_sink" and value not in SINKS:
            raise errors.InvalidArgument(f"{source}: metering_sink is one of {', '.join(SINKS)}")
        else:
            expected = type(getattr(settings, key))
            if expected is int and isinstance(value, bool):
                value = str(value)  # TOML true is no uid: refused below
            if expected is float and isinstance(value, int):
                value = float(value)
            if not isinstance(value, expected):
                raise errors.InvalidArgument(
                    f"{source}: {key} must be a {expected.__name__}, not {value!r}"
                )
            if key == "sandbox_uid_first" and not 1000 <= value < 2**31:
                raise errors.InvalidArgument(f"{source}: sandbox_uid_first is a uid >= 1000")
            if key == "sandbox_uid_count" and not 1 <= value <= 2**31 - 1000:
                raise errors.InvalidArgument(f"{source}: sandbox_uid_count is at least 1")
            if key == "tenant_network_pool":
                _check_pool(value, source)
            if key == "ssh_direct_ports":
                parse_port_range(value, source=f"{source}: ssh_direct_ports")
            if key == "ssh_direct_bind":
                check_bind_address(value, source=f"{source}: ssh_direct_bind")
            if key == "ssh_direct_host" and not _HOST_NAME.fullmatch(value):
                raise errors.InvalidArgument(
                    f"{source}: ssh_direct_host is a host name or address clients dial, such as"
                    f" ssh.example.net or 192.0.2.10, not {value[:60]!r}"
                )
            if key == "tenant_network_prefix" and not 20 <= value <= 28:
                raise errors.InvalidArgument(
                    f"{source}: tenant_network_prefix is 20 to 28 (a subnet per vPOD)"
                )
            if key == "task_attempts" and value < 1:
                raise errors.InvalidArgument(f"{source}: task_attempts is at least 1 (no retry)")
            if expected is float and value < 0:
                raise errors.InvalidArgument(f"{source}: {key} cannot be negative")
            values[key] = value
    chosen = replace(settings, **values)
    if chosen.ssh_direct_ports and chosen.compute_driver != "local":
        raise errors.InvalidArgument(
            f"{source}: ssh_direct_ports forwards host ports to the local compute driver's"
            f" sshd; {chosen.compute_driver} servers are reached at their own addresses:"
            " leave ssh_direct_ports out"
        )
    return chosen


def check_bind_address(value: str, *, source: str = "ssh_direct_bind") -> None:
    """An IP address to listen on (``0.0.0.0`` or ``::`` for every address)."""
    try:
        ipaddress.ip_address(value)
    except ValueError:
        raise errors.InvalidArgument(
            f"{source} is an IP address to listen on, such as 127.0.0.1 or 0.0.0.0, not"
            f" {value[:60]!r}"
        ) from None


def _check_pool(value: str, source: str) -> None:
    try:
        pool = ipaddress.IPv4Network(value)
    except ValueError:
        raise errors.InvalidArgument(
            f"{source}: tenant_network_pool is an IPv4 network such as 169.254.64.0/18,"
            f" not {value[:60]!r}"
        ) from None
    if pool.prefixlen > 24:
        raise errors.InvalidArgument(f"{source}: tenant_network_pool is /24 or larger")


def render_settings(vipu_clusters: tuple[str, ...]) -> str:
    """A minimal ``cloud.toml`` (what ``vpod up`` writes)."""
    listed = ", ".join(f'"{c}"' for c in vipu_clusters)
    return (
        "# vpod cloud layer settings (see docs/cloud.md)\n"
        f"vipu_clusters = [{listed}]\n"
        'compute_driver = "local"\n'
        'volume_driver = "local"\n'
    )
