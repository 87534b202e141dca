"""The files a server holds, in the local drivers' layout (what a Poplar server would have).

Layout under the cloud directory (``DATA_DIR/cloud``)::

    servers/<server-id>/state.json       status, image, host name (the driver's own record)
    servers/<server-id>/root             the server's file system: a link to its boot
                                         volume (VMs) or to servers/<server-id>/disk (bare metal)
    volumes/<volume-id>/meta.json        size, type, image
    volumes/<volume-id>/data/            the volume's contents
    mounts/<server-id>                   the server's dataset bucket (rclone mount), shown
                                         in its root as a link at the path the tenant chose

and inside a server's root::

    etc/image  etc/hostname  etc/hosts   what it runs, what it is called, its peers
    etc/environment                      IPUOF_VIPU_API_HOST/PORT, VIPU_CLI_CONFIG, ...
    etc/vipu/vipu-cli.hcl                api-host, api-port, api-user-id, api-access-key (0600)
    home/                                HOME of the shell, with a .bashrc that reads the env
    mnt/<volume-name>                    attached data volumes (links)
    tmp/                                 emptied by reboot
"""

from __future__ import annotations

import json
import os
import re
import shlex
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .base import VipuAccess


@dataclass(frozen=True)
class Layout:
    """Paths of the local drivers under one cloud directory.

    The base is made absolute: a server's root and its mounts are symbolic links, and a
    relative target would be read relative to the link's own directory (and dangle).
    """

    base: Path

    def __post_init__(self) -> None:
        object.__setattr__(self, "base", self.base.absolute())

    def server_dir(self, server_id: str) -> Path:
        return self.base / "servers" / server_id

    def server_root(self, server_id: str) -> Path:
        return self.server_dir(server_id) / "root"

    @property
    def mounts(self) -> Path:
        """Mount points of dataset buckets, outside every server's root (see rclone_mount)."""
        return self.base / "mounts"

    @property
    def gpu_stand_ins(self) -> Path:
        """Where emulated GPU hosts keep their stand-in device nodes (one directory per host):
        the only device sources besides NVIDIA's own ``/dev/nvidia*`` a server is given."""
        return self.base / "gpu-devices"

    def volume_dir(self, volume_id: str) -> Path:
        return self.base / "volumes" / volume_id

    def volume_data(self, volume_id: str) -> Path:
        return self.volume_dir(volume_id) / "data"


def _write_atomically(path: Path, text: str, mode: int) -> None:
    """Write a temp file of its own, then rename it over ``path``: a crash never leaves
    half a file, and two writers of one file never rename each other's temp file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json(path: Path, value: Any) -> None:
    """Write atomically, so a crash never leaves half a file."""
    _write_atomically(path, json.dumps(value, indent=2, sort_keys=True) + "\n", 0o644)


def read_json(path: Path) -> dict[str, Any] | None:
    try:
        loaded = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    return loaded if isinstance(loaded, dict) else None


def write_private(path: Path, text: str) -> None:
    """Write a secret-holding file readable by its owner only, atomically."""
    _write_atomically(path, text, 0o600)


# -- vipu-cli.hcl -----------------------------------------------------------------------------

_HCL_LINE = re.compile(r'^\s*([A-Za-z][A-Za-z0-9_-]*)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|(\S+))')


def render_hcl(values: Mapping[str, str | int]) -> str:
    lines = ["# written by the vpod cloud for this vPOD; vipu reads it via VIPU_CLI_CONFIG"]
    for key, value in values.items():
        if isinstance(value, int):
            lines.append(f"{key} = {value}")
        else:
            escaped = value.replace("\\", "\\\\").replace('"', '\\"')
            lines.append(f'{key} = "{escaped}"')
    return "\n".join(lines) + "\n"


def parse_hcl(text: str) -> dict[str, str]:
    values = {}
    for line in text.splitlines():
        match = _HCL_LINE.match(line)
        if match:
            quoted, bare = match[2], match[3]
            values[match[1]] = (
                quoted.replace('\\"', '"').replace("\\\\", "\\") if quoted is not None else bare
            )
    return values


def vipu_hcl(vipu: VipuAccess, old_hcl: str) -> tuple[str, bool]:
    """A server's ``vipu-cli.hcl`` for ``vipu`` and whether it holds an access key. A ``None``
    key keeps the one in the server's ``old_hcl``, but only for the same V-IPU user."""
    existing = parse_hcl(old_hcl)
    key = vipu.access_key or existing.get("api-access-key")
    has_key = bool(key) and (
        vipu.access_key is not None or existing.get("api-user-id") == vipu.user_id
    )
    values: dict[str, str | int] = {
        "api-host": vipu.host,
        "api-port": vipu.port,
        "api-user-id": vipu.user_id,
    }
    if has_key and key:
        values["api-access-key"] = key
    return render_hcl(values), has_key


def vipu_env(vipu: VipuAccess, hcl_path: str) -> dict[str, str]:
    """What tells ``vipu`` and Poplar on a server where the V-IPU controller is."""
    return {
        "VIPU_CLI_CONFIG": hcl_path,
        "IPUOF_VIPU_API_HOST": vipu.host,
        "IPUOF_VIPU_API_PORT": str(vipu.port),
    }


# -- environment ----------------------------------------------------------------------------


def render_env(env: Mapping[str, str]) -> str:
    """``KEY='value'`` lines, shell-quoted: ``set -a; . etc/environment`` exports them."""
    return "".join(f"{key}={shlex.quote(value)}\n" for key, value in sorted(env.items()))


def parse_env(text: str) -> dict[str, str]:
    env = {}
    for line in text.splitlines():
        if "=" not in line or line.lstrip().startswith("#"):
            continue
        key, _, value = line.partition("=")
        parts = shlex.split(value) if value else [""]
        env[key.strip()] = parts[0] if parts else ""
    return env


def render_bashrc(cluster_name: str, host_name: str, env_file: Path) -> str:
    return (
        "# written by the vpod cloud: the environment of this server\n"
        f"set -a; . {shlex.quote(str(env_file))}; set +a\n"
        f"PS1='[{cluster_name}] {host_name}:\\w\\$ '\n"
        'cd "$HOME"\n'
    )
