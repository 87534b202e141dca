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
    return settings


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
