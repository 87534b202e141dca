"""A tenant's server as a sandbox on this host: Linux namespaces through bubblewrap.

Each server's processes run under ``bwrap`` (Debian's ``bubblewrap``) as an
unprivileged uid of the server's own (:func:`server_uid`), in new user,
mount, PID, IPC and UTS namespaces, with the server's name as host name.
Their file system is the server's root (read-write), the host's system
directories read-only (``/usr`` and its ``/bin``, ``/lib``... links, this
installation's Python environment so that ``vipu`` works), a private
``/proc`` showing only the sandbox's processes, a minimal ``/dev``. Nothing
else of the host is there: not the controller's data directory (store,
keys, TLS material), not other servers. The arguments reach ``bwrap``
through a file descriptor (``--args``), so not even the sandbox's PID 1
shows host paths in its command line.

:func:`sandbox_problem` says, in one line, why a host cannot give that
(no ``bwrap``, not root so no uid of its own per server, user namespaces
disabled); the driver then refuses tenants' servers unless the operator
chose the documented unsafe mode.
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

UID_BASE = 200_000
UID_SPAN = 100_000
SYSTEM_DIRS = ("/usr",)
MERGED_USR_LINKS = {
    "/bin": "usr/bin",
    "/sbin": "usr/sbin",
    "/lib": "usr/lib",
    "/lib64": "usr/lib64",
}
ETC_FILES = ("/etc/ld.so.cache", "/etc/nsswitch.conf", "/etc/localtime", "/etc/alternatives")


def server_uid(server_id: str) -> int:
    """The uid (and gid) a server's processes run as: unprivileged, its own (derived from the
    id, so the same after a restart), in a range no login user has."""
    digest = int.from_bytes(hashlib.sha256(server_id.encode()).digest()[:8], "big")
    return UID_BASE + digest % UID_SPAN


@functools.cache
def sandbox_problem() -> str | None:
    """Why this host cannot sandbox servers, in one line; ``None`` when it can."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return "bubblewrap (bwrap) is not installed: apt-get install bubblewrap"
    if os.geteuid() != 0:
        return (
            "the controller does not run as root, so it cannot run each server as a uid of its own"
        )
    links = [
        arg
        for link, target in MERGED_USR_LINKS.items()
        if os.path.islink(link)
        for arg in ("--symlink", target, link)
    ]
    probe = subprocess.run(
        [bwrap, "--unshare-user", "--unshare-pid", "--ro-bind", "/usr", "/usr", *links, "true"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
        user=UID_BASE,
        group=UID_BASE,
        extra_groups=[],
    )
    if probe.returncode != 0:
        return f"user namespaces are not available: bwrap says {probe.stderr.strip()[:200]!r}"
    return None


def _python_dirs() -> list[str]:
    """This installation's Python environment (and its editable sources), read-only: the
    servers' ``vipu`` runs from it."""
    sources = Path(__file__).resolve().parents[3]  # .../src of an editable install
    dirs = {sys.prefix, sys.base_prefix, str(sources)}
    return sorted(d for d in dirs if d and not d.startswith("/usr") and reachable_by_all(d))


def reachable_by_all(path: str) -> bool:
    """Whether any uid may walk to ``path`` (search permission for others all the way);
    a Python installed in root's home is not, and servers then run without it."""
    current = Path(path).resolve()
    return all(os.stat(p).st_mode & 0o001 for p in [current, *current.parents])


@dataclass(frozen=True)
class Sandbox:
    """How to run a command inside one server."""

    root: Path
    hostname: str
    uid: int

    def bwrap_args(self, env: Mapping[str, str], cwd: str) -> list[str]:
        """Everything but the command (which follows ``--`` on bwrap's own command line).

        ``bwrap`` runs as the server's uid, which must be able to walk to the server's root
        (search permission on the data directory and its parents: ``chmod o+x``, no read);
        only ``bwrap`` itself ever runs as that uid outside the sandbox."""
        args = [
            "--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
            "--unshare-cgroup-try", "--hostname", self.hostname,
            "--uid", str(self.uid), "--gid", str(self.uid),
            "--die-with-parent", "--new-session", "--clearenv",
            "--bind", str(self.root), "/",
        ]  # fmt: skip
        for directory in SYSTEM_DIRS:
            args += ["--ro-bind", directory, directory]
        for link in MERGED_USR_LINKS:
            if os.path.isdir(link):  # a link to usr/... on merged-/usr hosts: bind its target
                args += ["--ro-bind", os.path.realpath(link), link]
        for path in ETC_FILES:
            if os.path.exists(path):
                args += ["--ro-bind", path, path]
        for directory in _python_dirs():
            args += ["--ro-bind", directory, directory]
        args += ["--proc", "/proc", "--dev", "/dev", "--chdir", cwd]
        for key, value in env.items():
            args += ["--setenv", key, value]
        return args

    def run(
        self,
        command: Sequence[str],
        *,
        env: Mapping[str, str],
        cwd: str = "/home",
        timeout: float = 60.0,
        stdin: str = "",
    ) -> subprocess.CompletedProcess[str]:
        """Run ``command`` in the sandbox as the server's uid; its output and exit status."""
        bwrap = shutil.which("bwrap") or "bwrap"
        read_end, write_end = os.pipe()
        payload = b"".join(a.encode() + b"\0" for a in self.bwrap_args(env, cwd))
        try:
            with os.fdopen(write_end, "wb") as pipe:
                pipe.write(payload)  # small: fits the pipe's buffer before bwrap reads it
            return subprocess.run(
                [bwrap, "--args", str(read_end), "--", *command],
                input=stdin,
                capture_output=True,
                text=True,
                timeout=timeout,
                check=False,
                pass_fds=(read_end,),
                user=self.uid,
                group=self.uid,
                extra_groups=[],
            )
        finally:
            os.close(read_end)


def own_tree(root: Path, uid: int) -> None:
    """Give a server's whole root to its uid (links themselves, never what they point to)."""
    for directory, dirs, files in os.walk(root):
        os.lchown(directory, uid, uid)
        for name in [*dirs, *files]:
            os.lchown(os.path.join(directory, name), uid, uid)


__all__ = ["Sandbox", "own_tree", "sandbox_problem", "server_uid"]
