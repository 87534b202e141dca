"""Where ``vpod`` keeps SSH files on the user's machine, and how it writes them.

``~/.config/vpod`` (``$XDG_CONFIG_HOME/vpod``; ``$VPOD_SSH_DIR`` moves the
whole of it): ``keys/NAME`` the private keys ``vpod keypair create``
wrote (0600, with ``NAME.pub``), ``known_hosts`` the host keys of the
servers ``vpod cluster ssh-config`` listed, ``ssh/CLUSTER.config`` the
configuration ``vpod cluster ssh`` hands to OpenSSH.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path


def vpod_dir() -> Path:
    if os.environ.get("VPOD_SSH_DIR"):
        return Path(os.environ["VPOD_SSH_DIR"])
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "vpod"


def key_path(name: str) -> Path:
    """Where ``vpod keypair create NAME`` writes the private key by default."""
    return vpod_dir() / "keys" / name


def known_hosts_path() -> Path:
    return vpod_dir() / "known_hosts"


def write_private(path: Path, text: str, mode: int = 0o600) -> None:
    """Create ``path`` (never replacing a file: FileExistsError) readable by its owner."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    with os.fdopen(fd, "w") as handle:
        os.fchmod(handle.fileno(), mode)
        handle.write(text)


def replace_file(path: Path, text: str, mode: int = 0o600) -> None:
    """Write ``path`` atomically (a temp file renamed over it)."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
    tmp.replace(path)


def update_known_hosts(path: Path, entries: Sequence[tuple[str, str]]) -> None:
    """Make ``entries`` ((host, ``TYPE BASE64``)) the keys of their hosts in ``path``: the
    lines of those hosts are replaced, every other line kept."""
    names = {host for host, _ in entries}
    kept: Iterable[str] = []
    if path.exists():
        kept = [
            line
            for line in path.read_text().splitlines()
            if not line.strip() or line.split()[0] not in names
        ]
    lines = [*kept, *(f"{host} {key}" for host, key in entries)]
    replace_file(path, "".join(line + "\n" for line in lines), 0o644)


__all__ = [
    "key_path",
    "known_hosts_path",
    "replace_file",
    "update_known_hosts",
    "vpod_dir",
    "write_private",
]
