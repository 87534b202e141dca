"""OpenSSH configuration for a cluster's servers, and running OpenSSH through the tunnel.

:func:`render_config` writes one ``Host`` block per server, named as
``vpod cluster show`` names it (the cluster's own name is an alias of its
first server), each reaching the server's sshd through ``vpod cluster
ssh-proxy`` (the controller's tunnel), or at its direct SSH port where the
operator gives servers one (``--direct``), logging in as the server's user and
checking the host key strictly against a known_hosts file vpod writes from
what the API listed (:func:`known_host_entries`): nothing is trusted on
first use. Plain ``ssh``, ``scp``, ``sftp``, ``rsync -e ssh``, port
forwarding and IDE remotes then work unchanged.
"""

from __future__ import annotations

import shlex
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from .ssh_files import key_path

if TYPE_CHECKING:
    from vpod.client import ClusterSsh


def vpod_command() -> str:
    """This ``vpod``, as an absolute path (ssh runs the ProxyCommand from anywhere)."""
    found = Path(sys.argv[0])
    if found.name == "vpod" and found.exists():
        return str(found.resolve())
    return shutil.which("vpod") or str(Path(sys.executable).with_name("vpod"))


def proxy_command(cluster: str, server: str, connection: Sequence[str]) -> str:
    """The ProxyCommand line: ``%`` doubled (ssh expands ``%`` tokens), words shell-quoted."""
    words = [vpod_command(), "cluster", "ssh-proxy", *connection, cluster, server]
    return " ".join(shlex.quote(w) for w in words).replace("%", "%%")


def aliases(info: ClusterSsh) -> dict[str, list[str]]:
    """Server name -> the host names its block answers to (the cluster's name for the first)."""
    first = min(info.servers, key=lambda s: s.position, default=None)
    names: dict[str, list[str]] = {}
    for server in sorted(info.servers, key=lambda s: s.position):
        names[server.name] = [server.name]
        if server is first and info.cluster != server.name:
            names[server.name].append(info.cluster)
    return names


def identity_files(info: ClusterSsh, identities: Sequence[Path]) -> list[Path]:
    """``identities``, then the private keys vpod wrote for the cluster's keypairs."""
    found = [p.expanduser() for p in identities]
    for name in info.keypairs:
        path = key_path(name)
        if path.exists() and path not in found:
            found.append(path)
    return found


def known_host_entries(info: ClusterSsh) -> list[tuple[str, str]]:
    """(host name, ``TYPE BASE64``) of every host key the API listed."""
    return [(s.name, k.key) for s in info.servers for k in s.host_keys]


def render_config(
    info: ClusterSsh,
    *,
    known_hosts: Path,
    connection: Sequence[str] = (),
    identities: Sequence[Path] = (),
    direct: bool = False,
) -> str:
    """Host blocks reaching each server through the tunnel (``ProxyCommand``), or with
    ``direct`` at its direct SSH port (``HostName``/``Port``; a server without one keeps the
    tunnel). Either way the host key is checked against ``known_hosts`` under its name."""
    keys = identity_files(info, identities)
    names = aliases(info)
    how = "their direct SSH ports on the controller's host" if direct else "the controller's tunnel"
    blocks = [
        f"# vpod cluster ssh-config {info.cluster}: its servers' sshd through {how};\n"
        f"# host keys pinned in {known_hosts} (nothing is trusted on first use)\n"
    ]
    for server in sorted(info.servers, key=lambda s: s.position):
        port = server.direct_port if direct else None
        if port is not None:
            route = [f"    HostName {server.direct_host}", f"    Port {port}"]
        else:
            route = [
                *(["    # no direct SSH port: through the tunnel"] if direct else []),
                f"    HostName {server.name}",
                f"    ProxyCommand {proxy_command(info.cluster, server.name, connection)}",
            ]
        lines = [
            f"Host {' '.join(names[server.name])}",
            *route,
            f"    User {server.user}",
            f"    HostKeyAlias {server.name}",
            f"    UserKnownHostsFile {_quoted(known_hosts)}",
            "    StrictHostKeyChecking yes",
            "    CheckHostIP no",
            "    ServerAliveInterval 30",
            *(f"    IdentityFile {_quoted(key)}" for key in keys),
        ]
        blocks.append("\n".join(lines) + "\n")
    return "\n".join(blocks)


def _quoted(path: Path) -> str:
    text = str(path)
    return f'"{text}"' if " " in text else text


__all__ = [
    "aliases",
    "identity_files",
    "known_host_entries",
    "proxy_command",
    "render_config",
    "vpod_command",
]
