"""The integration's settings: one TOML file shared by the bridge and the Slurm hooks.

The hooks (``vpod-slurm-prolog`` ...) run once per job, so this module
imports only the standard library. Where the file is, first found wins:
``--config``, ``VPOD_SLURM_CONFIG``, ``/etc/vpod/slurm.toml``.

```toml
vipu_config = "/etc/vpod/slurm.vipu-cli.hcl"  # endpoint + credentials; 0600, SlurmUser only
partition_prefix = "slurm_"
default_allocation = "default"                # V-IPU allocation for Slurm partitions not listed
socket = "/run/vpod-slurm/bridge.sock"
ipuof_api_host = "vipu.example.com"           # what jobs put in IPUOF_VIPU_API_HOST
ipuof_api_port = 8090
ipuof_timeout_s = 120
credentials_dir = "/run/vpod-slurm/jobs"     # each job's key file (on the compute nodes too)
mode = "dynamic"                              # or "static" / "reconfigurable" (docs/slurm.md)
static_partitions = "1:4,4:2"                 # static: <size>:<count>, made once, GRES vipu:<size>
shared_size = 16                              # reconfigurable: IPUs of the one shared partition

[allocations]                                 # Slurm partition -> V-IPU allocation
ipu = "default"
```
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DEFAULT_CONFIG_PATH = Path("/etc/vpod/slurm.toml")
CONFIG_ENV = "VPOD_SLURM_CONFIG"
DEFAULT_SOCKET = "/run/vpod-slurm/bridge.sock"
DEFAULT_CREDENTIALS_DIR = "/run/vpod-slurm/jobs"
MODES = ("dynamic", "static", "reconfigurable")
"""How jobs get IPUs: a partition each (made and removed per job), one of the static
partitions made once (GRES ``vipu:<size>``), or a sub-device of one shared reconfigurable
partition."""
SHARED_SUFFIX = "shared"


class SettingsError(Exception):
    """The settings file is missing or wrong; the message names the file, key and fix."""


@dataclass(frozen=True)
class SlurmSettings:
    """What the bridge, the hooks and the reconciler need to know."""

    vipu_config: str = ""
    """A vipu-cli.hcl with the controller's user endpoint and the integration's credentials."""
    partition_prefix: str = "slurm_"
    default_allocation: str = ""
    """Empty: let the controller choose among the allocations the user may use."""
    allocations: Mapping[str, str] = field(default_factory=dict)
    """Slurm partition -> V-IPU allocation; others use ``default_allocation``."""
    socket: str = DEFAULT_SOCKET
    ipuof_api_host: str = "localhost"
    ipuof_api_port: int = 8090
    ipuof_timeout_s: int = 120
    credentials_dir: str = DEFAULT_CREDENTIALS_DIR
    """Where each job's vipu-cli.hcl with its partition key is written (the compute nodes
    must see it: the same host, or a shared file system)."""
    create_timeout_s: float = 60.0
    """How long one create (or remove) may take before the job goes back to the queue."""
    retry_initial_s: float = 5.0
    """First delay before a job whose partition could not be made is eligible again."""
    retry_max_s: float = 300.0
    reconcile_interval_s: float = 30.0
    slurm_bin_dir: str = ""
    """Where squeue and scontrol are; empty: on PATH."""
    slurm_conf: str = ""
    """SLURM_CONF for the Slurm commands the integration runs; empty: Slurm's default."""
    mode: str = "dynamic"
    """One of :data:`MODES`."""
    static_partitions: str = ""
    """``static``: ``<size>:<count>,...`` (``1:4,4:2``), the partitions made once."""
    shared_size: int = 16
    """``reconfigurable``: IPUs of the shared partition (one IPU-Link domain: at most 64)."""

    def static_layout(self) -> list[tuple[int, int]]:
        """``static_partitions`` as (size, count) pairs, in the order written."""
        return parse_static_partitions(self.static_partitions)

    def static_partition_ids(self) -> dict[int, list[str]]:
        """Size -> the ids of the static partitions of that size (derived, so stable)."""
        return {
            size: [self.static_partition_id(size, n) for n in range(count)]
            for size, count in self.static_layout()
        }

    def static_partition_id(self, size: int, index: int) -> str:
        return f"{self.partition_prefix}static{size}_{index}"

    @property
    def shared_partition_id(self) -> str:
        return f"{self.partition_prefix}{SHARED_SUFFIX}"

    def allocation_for(self, slurm_partition: str) -> str:
        return self.allocations.get(slurm_partition, self.default_allocation)

    def partition_id(self, job_id: str) -> str:
        return f"{self.partition_prefix}{job_id}"

    def job_of(self, partition_id: str) -> str | None:
        """The Slurm job id a partition was made for, None when it is not ours."""
        if not partition_id.startswith(self.partition_prefix):
            return None
        rest = partition_id[len(self.partition_prefix) :]
        return rest if rest.isdigit() else None

    def slurm_env(self) -> dict[str, str]:
        """The environment for Slurm commands: ours plus SLURM_CONF when set."""
        env = dict(os.environ)
        if self.slurm_conf:
            env["SLURM_CONF"] = self.slurm_conf
        return env

    @property
    def hook_file(self) -> str:
        """Where the bridge writes ``PORT TOKEN`` for the shell hooks: beside its socket."""
        return self.socket + ".tcp"

    def slurm_command(self, name: str) -> str:
        return str(Path(self.slurm_bin_dir) / name) if self.slurm_bin_dir else name


_FIELDS: dict[str, type] = {
    "vipu_config": str,
    "partition_prefix": str,
    "default_allocation": str,
    "socket": str,
    "ipuof_api_host": str,
    "ipuof_api_port": int,
    "ipuof_timeout_s": int,
    "credentials_dir": str,
    "create_timeout_s": float,
    "retry_initial_s": float,
    "retry_max_s": float,
    "reconcile_interval_s": float,
    "slurm_bin_dir": str,
    "slurm_conf": str,
    "mode": str,
    "static_partitions": str,
    "shared_size": int,
}


def config_path(explicit: str | None = None, env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    if explicit:
        return Path(explicit)
    if env.get(CONFIG_ENV):
        return Path(env[CONFIG_ENV])
    return DEFAULT_CONFIG_PATH


def parse_settings(data: Mapping[str, Any], source: str) -> SlurmSettings:
    """Check every key and type; an unknown key is an error (a typo would silently do nothing)."""
    values: dict[str, Any] = {}
    for key, value in data.items():
        if key == "allocations":
            if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
                raise SettingsError(
                    f"{source}: [allocations] maps Slurm partitions to V-IPU allocation names"
                )
            values[key] = dict(value)
            continue
        kind = _FIELDS.get(key)
        if kind is None:
            known = ", ".join(sorted([*_FIELDS, "allocations"]))
            raise SettingsError(f"{source}: unknown key {key!r}; known keys: {known}")
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if not isinstance(value, kind) or isinstance(value, bool):
            raise SettingsError(f"{source}: {key} must be a {kind.__name__}, not {value!r}")
        values[key] = value
    settings = SlurmSettings(**values)
    if (
        not settings.partition_prefix
        or not settings.partition_prefix.replace("_", "").replace("-", "").isalnum()
    ):
        raise SettingsError(
            f"{source}: partition_prefix must be letters, digits, '_' or '-', "
            f"not {settings.partition_prefix!r}"
        )
    check_mode(settings, source)
    return settings


def parse_static_partitions(text: str) -> list[tuple[int, int]]:
    """``"1:4,4:2"`` -> ``[(1, 4), (4, 2)]``; ValueError saying what is wrong."""
    layout: list[tuple[int, int]] = []
    for item in text.replace(" ", "").split(","):
        if not item:
            continue
        size, sep, count = item.partition(":")
        if not sep or not size.isdigit() or not count.isdigit():
            raise ValueError(f"{item!r} is not <size>:<count> (e.g. 4:2)")
        if int(size) not in STATIC_SIZES:
            sizes = ", ".join(str(s) for s in STATIC_SIZES)
            raise ValueError(f"{item!r}: {size} IPUs is not a partition size (use {sizes})")
        if int(count) < 1:
            raise ValueError(f"{item!r}: the count must be at least 1")
        if any(int(size) == seen for seen, _ in layout):
            raise ValueError(f"size {size} is listed twice: give each size once")
        layout.append((int(size), int(count)))
    if not layout:
        raise ValueError("no partitions listed: give <size>:<count>,... (e.g. 1:4,4:2)")
    return layout


STATIC_SIZES = (1, 2, 4, 8, 16, 64)
"""Sizes of static partitions: one IPU-Link domain each (so a GRES type is one size)."""
SHARED_SIZES = (1, 2, 4, 8, 16, 64)
"""A reconfigurable partition lives in one IPU-Link domain."""


def check_mode(settings: SlurmSettings, source: str) -> None:
    """The mode and its keys agree; the error names the key and the fix."""
    if settings.mode not in MODES:
        raise SettingsError(
            f"{source}: mode must be one of {', '.join(MODES)}, not {settings.mode!r}"
        )
    if settings.mode == "static":
        try:
            settings.static_layout()
        except ValueError as exc:
            raise SettingsError(
                f"{source}: static_partitions: {exc}; mode static needs e.g."
                ' static_partitions = "1:4,4:2"'
            ) from None
    elif settings.static_partitions:
        raise SettingsError(
            f"{source}: static_partitions is set but mode is {settings.mode}:"
            ' set mode = "static" or drop static_partitions'
        )
    if settings.shared_size not in SHARED_SIZES:
        sizes = ", ".join(str(s) for s in SHARED_SIZES)
        raise SettingsError(
            f"{source}: shared_size must be one of {sizes} (a reconfigurable partition lives"
            f" in one IPU-Link domain), not {settings.shared_size}"
        )


def load_settings(explicit: str | None = None) -> SlurmSettings:
    path = config_path(explicit)
    try:
        data = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise SettingsError(
            f"no settings file at {path}: write one (see docs/slurm.md) or set {CONFIG_ENV}"
        ) from None
    except OSError as exc:
        raise SettingsError(f"cannot read {path}: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise SettingsError(f"{path} is not valid TOML: {exc}") from None
    return parse_settings(data, str(path))


def render_settings(settings: SlurmSettings) -> str:
    """The TOML text of ``settings`` (what ``vpod slurm up`` writes)."""
    lines = []
    for key in _FIELDS:
        value = getattr(settings, key)
        if isinstance(value, str):
            lines.append(f"{key} = {_quote(value)}")
        else:
            lines.append(f"{key} = {value}")
    lines.append("")
    lines.append("[allocations]")
    for name, allocation in sorted(settings.allocations.items()):
        lines.append(f"{_quote(name)} = {_quote(allocation)}")
    return "\n".join(lines) + "\n"


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
