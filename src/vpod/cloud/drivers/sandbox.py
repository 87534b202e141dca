"""A tenant's server as a sandbox on this host: Linux namespaces through bubblewrap.

Each process of a server (every ``vpod cluster ssh``) runs under ``bwrap``
(Debian's ``bubblewrap``) in new mount, PID, IPC, UTS and cgroup namespaces
with the server's name as host name, then drops to the server's own
unprivileged uid with ``setpriv`` (no capabilities, no new privileges)
before the tenant's command starts. What it sees:

- ``/`` is an empty tmpfs of bwrap's own; ``/usr`` (and the ``/bin``,
  ``/lib``... links of merged-/usr hosts), a few ``/etc`` files of the host
  (dynamic linker cache, nsswitch, time zone, alternatives) and this
  installation's Python environment, read-only;
- ``/etc/hosts``, ``/etc/environment``, ``/etc/vipu``... the server's own
  files (the controller writes them), read-only;
- ``/home`` and ``/tmp`` of the server's root, read-write, owned by its uid;
  every attached volume at ``/mnt/NAME``, read-write;
- a ``/proc`` of its own PID namespace (only the sandbox's processes), a
  minimal ``/dev``, and the device nodes of the GPUs the server holds
  (``devices``: ``/dev/nvidiaN`` of each, ``nvidiactl``, ``nvidia-uvm``,
  ``nvidia-uvm-tools``), bound with ``--dev-bind``; no other GPU of the host.

Nothing else of the host: not the controller's data directory (store,
keys, TLS material), not other servers, not other processes. bwrap runs as
root (so the data directory need not be reachable by other uids), which is
why everything a tenant controls reaches it as a **file descriptor** the
controller opened without following links (``--bind-fd``): a link a tenant
planted in its root can never make bwrap mount a host path. bwrap creates
its mount points on its own tmpfs, never in the tenant's tree.

:func:`sandbox_problem` says, in one line, why a host cannot give that (no
``bwrap`` or ``setpriv``, not root, namespaces refused); the driver then
refuses tenants' servers unless the operator chose the documented unsafe
mode (``--unsafe-shared-host``).
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from .tenant_network import enter as enter_netns

UID_FIRST = 200_000
UID_COUNT = 100_000
SERVER_USER = "tenant"
"""The user name a server's uid has inside it (``/etc/passwd`` of the server)."""
SYSTEM_DIRS = ("/usr",)
MERGED_USR_LINKS = {
    "/bin": "usr/bin",
    "/sbin": "usr/sbin",
    "/lib": "usr/lib",
    "/lib64": "usr/lib64",
}
HOST_ETC = (
    "/etc/ld.so.cache",
    "/etc/nsswitch.conf",
    "/etc/localtime",
    "/etc/alternatives",
    "/etc/ssl",
)
SERVER_DIRS = ("home", "tmp")
"""The parts of a server's root its tenant writes (bound read-write)."""
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK


@dataclass(frozen=True)
class UidRange:
    """The uids servers run as: ``first`` .. ``first + count - 1`` (no login user's)."""

    first: int = UID_FIRST
    count: int = UID_COUNT

    def __contains__(self, uid: object) -> bool:
        return isinstance(uid, int) and self.first <= uid < self.first + self.count


def allocate_uid(servers_dir: Path, uids: UidRange, in_use: set[int]) -> int:
    """The next uid of ``uids`` no server holds, handed out in order (a deleted server's
    uid comes back only once the range wrapped): the counter is kept in
    ``servers_dir/uids.json`` under a lock, so two creations never get the same one."""
    servers_dir.mkdir(parents=True, exist_ok=True)
    counter = servers_dir / "uids.json"
    with open(servers_dir / ".uids.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            state = json.loads(counter.read_text())
            start = int(state["next"])
        except (FileNotFoundError, ValueError, KeyError, TypeError):
            start = uids.first
        for step in range(uids.count):
            uid = uids.first + (start - uids.first + step) % uids.count
            if uid not in in_use:
                tmp = counter.with_suffix(".tmp")
                tmp.write_text(json.dumps({"next": uid + 1}) + "\n")
                os.replace(tmp, counter)
                return uid
    raise OSError(f"every uid of {uids.first}..{uids.first + uids.count - 1} is taken")


def _tools(bwrap: str = "") -> tuple[str | None, str | None]:
    return shutil.which(bwrap or "bwrap"), shutil.which("setpriv")


@functools.cache
def sandbox_problem(bwrap_path: str = "") -> str | None:
    """Why this host cannot sandbox servers, in one line; ``None`` when it can.
    ``bwrap_path``: where bubblewrap is (empty: on ``PATH``)."""
    bwrap, setpriv = _tools(bwrap_path)
    if bwrap is None:
        return f"bubblewrap ({bwrap_path or 'bwrap'}) is not installed: apt-get install bubblewrap"
    if setpriv is None:
        return "setpriv is not installed: apt-get install util-linux"
    if os.geteuid() != 0:
        return (
            "the controller does not run as root, so it cannot run each server as a uid of its own"
        )
    probe = subprocess.run(
        [bwrap, *_namespaces("probe"), *_system_binds(), setpriv, f"--reuid={UID_FIRST}",
         f"--regid={UID_FIRST}", "--clear-groups", "true"],
        capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip
    if probe.returncode != 0:
        return f"namespaces are not available: bwrap says {probe.stderr.strip()[:200]!r}"
    return None


def _namespaces(hostname: str) -> list[str]:
    return [
        "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
        "--hostname", hostname, "--die-with-parent",
    ]  # fmt: skip


def _system_binds() -> list[str]:
    args: list[str] = []
    for directory in SYSTEM_DIRS:
        args += ["--ro-bind", directory, directory]
    for link, target in MERGED_USR_LINKS.items():
        if os.path.islink(link):
            args += ["--symlink", target, link]
        elif os.path.isdir(link):
            args += ["--ro-bind", link, link]
    args += ["--dir", "/etc"]
    for path in HOST_ETC:
        if os.path.exists(path):
            args += ["--ro-bind", path, path]
    return [*args, "--proc", "/proc", "--dev", "/dev"]


def _sources_dir() -> str:
    return str(Path(__file__).resolve().parents[3])  # .../src of an editable install


def python_dirs() -> list[str]:
    """This installation's Python environment (and its editable sources), read-only: the
    servers' ``vipu`` runs from it. bwrap runs as root, so they may be where other uids
    cannot walk (a Python under ``/root``): the sandbox shows them at the same paths, or,
    where a server's own directory would hide them, under :data:`RELOCATED`."""
    dirs = {sys.prefix, sys.base_prefix, str(Path(sys.prefix).resolve()), _sources_dir()}
    return sorted(d for d in dirs if d and not d.startswith("/usr") and os.path.isdir(d))


RELOCATED = "/opt/vpod-install"
"""Where the sandbox shows parts of this installation that lie under a server's own
directory (a checkout or venv under ``/tmp``): the server's ``/tmp`` is bound over that
path, and binding the installation inside a directory the tenant writes would let the
tenant steer where bwrap (as root) makes its mount points."""
RELOCATED_BIN = f"{RELOCATED}/bin"
"""This installation's commands, with their ``#!`` naming the relocated interpreter."""


def _hidden(directory: str) -> bool:
    return any(Path(directory).is_relative_to(f"/{name}") for name in SERVER_DIRS)


@functools.cache
def relocated_python_dirs() -> tuple[tuple[str, str], ...]:
    """(host path, path in the sandbox) of every Python directory a server's own directories
    would hide; empty where the installation lies elsewhere (the usual case)."""
    hidden = [d for d in python_dirs() if _hidden(d)]
    return tuple((d, f"{RELOCATED}/{n}") for n, d in enumerate(hidden))


def _moved(path: str, moved: Sequence[tuple[str, str]]) -> str:
    """``path`` as the sandbox shows it (the longest relocated directory holding it)."""
    for source, dest in sorted(moved, key=lambda m: -len(m[0])):
        if path == source or Path(path).is_relative_to(source):
            return dest + path[len(source) :]
    return path


def _relocated_scripts(
    stack: contextlib.ExitStack, fds: list[int], moved: Sequence[tuple[str, str]]
) -> list[str]:
    """bwrap arguments making :data:`RELOCATED_BIN`: each console script of the environment,
    its ``#!`` line pointing at the relocated interpreter (a memfd each, read by bwrap)."""
    bin_dir = Path(sys.prefix) / "bin"
    args = ["--perms", "0755", "--dir", RELOCATED_BIN]
    for script in sorted(bin_dir.iterdir()) if bin_dir.is_dir() else []:
        try:
            head = script.read_bytes()[:65536]
        except OSError:
            continue
        if not head.startswith(b"#!") or not script.is_file():
            continue
        first, _, rest = head.partition(b"\n")
        interpreter = first[2:].decode(errors="replace").strip()
        fd = os.memfd_create(f"vpod-{script.name}", 0)
        stack.callback(os.close, fd)
        os.write(fd, f"#!{_moved(interpreter, moved)}\n".encode() + rest)
        os.lseek(fd, 0, os.SEEK_SET)
        fds.append(fd)
        args += ["--perms", "0755", "--file", str(fd), f"{RELOCATED_BIN}/{script.name}"]
    return args


@contextlib.contextmanager
def _opened(root: Path, relative: str, flags: int) -> Iterator[int | None]:
    """A descriptor of ``root/relative`` opened one component at a time without following
    links (None: missing, or a link the tenant planted)."""
    fds: list[int] = []
    try:
        fd = os.open(root, _DIR)
        fds.append(fd)
        parts = [p for p in relative.split("/") if p]
        for index, part in enumerate(parts):
            last = index == len(parts) - 1
            fd = os.open(part, flags if last else _DIR, dir_fd=fd)
            fds.append(fd)
        yield fds.pop()
    except OSError:
        yield None
    finally:
        for fd in fds:
            os.close(fd)


@dataclass(frozen=True)
class Sandbox:
    """How to run a command inside one server."""

    root: Path
    """The server's root on the host (the controller's own path to it)."""
    hostname: str
    uid: int
    mounts: tuple[tuple[str, Path], ...] = ()
    """(where in the server, the host directory) of every attached volume (``/mnt/NAME``) and
    mounted bucket: directories of the controller's own, bound read-write."""
    bwrap: str = ""
    """Where bubblewrap is (empty: on ``PATH``)."""
    netns: str | None = None
    """The server's network namespace (``/run/netns/NAME``); None: the host's network."""

    def environment(self, env: dict[str, str]) -> dict[str, str]:
        """``env`` as the sandbox needs it: paths of this installation that the server's own
        directories would hide are named where the sandbox shows them instead."""
        moved = relocated_python_dirs()
        if not moved:
            return env
        out = dict(env)
        path = [_moved(entry, moved) for entry in out.get("PATH", "").split(":") if entry]
        out["PATH"] = ":".join([RELOCATED_BIN, *path])
        sources = [dest for source, dest in moved if source == _sources_dir()]
        if sources:  # an editable install's .pth names the hidden path
            out["PYTHONPATH"] = ":".join([*sources, *filter(None, [out.get("PYTHONPATH")])])
        return out

    devices: tuple[tuple[str, Path], ...] = ()
    """(where in the server, the host's node) of every device node it may use: the GPUs it
    holds (checked by the driver: NVIDIA's nodes, or an emulated host's stand-ins)."""
    host_dirs: tuple[str, ...] = ()
    """Host directories shown read-only at their own paths beside ``/usr``: the GPU driver's
    (``nvidia-smi``, ``libcuda``) where it is installed elsewhere (nvidia_userland.py)."""

    @contextlib.contextmanager
    def command(
        self, argv: Sequence[str], cwd: str = "/home"
    ) -> Iterator[tuple[list[str], tuple[int, ...]]]:
        """The host command line running ``argv`` in the sandbox, and the descriptors it must
        inherit (open while the context lasts: close them once the process started).

        Start it with the server's environment as its whole environment: bwrap and setpriv
        pass it on. Never on the command line, which every user of the host may read (the
        environment may hold dataset keys)."""
        bwrap, setpriv = _tools(self.bwrap)
        if bwrap is None or setpriv is None:
            raise OSError(sandbox_problem(self.bwrap) or "bwrap or setpriv is missing")
        prefix = enter_netns(self.netns) if self.netns else []
        args = [*prefix, bwrap, *_namespaces(self.hostname), *_system_binds()]
        moved = dict(relocated_python_dirs())
        made: set[str] = set()
        shown_dirs = [(d, moved.get(d, d)) for d in python_dirs()]
        # Never under the server's own /home or /tmp: bwrap (as root) would make the mount
        # point in a tree the tenant writes (a driver is not installed there).
        shown_dirs += [(d, d) for d in self.host_dirs if os.path.isdir(d) and not _hidden(d)]
        for directory, shown in shown_dirs:
            for parent in reversed(Path(shown).parents[:-1]):  # walkable by the server's uid
                if str(parent) not in made:
                    made.add(str(parent))
                    args += ["--perms", "0755", "--dir", str(parent)]
            args += ["--ro-bind", directory, shown]
        for dest, node in self.devices:  # after --dev /dev: its own minimal /dev holds them
            args += ["--dev-bind", str(node), dest]
        fds: list[int] = []
        with contextlib.ExitStack() as stack:
            if moved:
                args += _relocated_scripts(stack, fds, list(moved.items()))

            def bind(relative: str, dest: str, option: str, flags: int = _DIR) -> None:
                fd = stack.enter_context(_opened(self.root, relative, flags))
                if fd is not None:
                    fds.append(fd)
                    args.extend([option, str(fd), dest])

            for name in SERVER_DIRS:
                bind(name, f"/{name}", "--bind-fd")
            with _opened(self.root, "etc", _DIR) as etc:
                names = sorted(os.listdir(etc)) if etc is not None else []
            for name in names:
                if not name.startswith(".") and f"/etc/{name}" not in HOST_ETC:
                    bind(f"etc/{name}", f"/etc/{name}", "--ro-bind-fd", _FILE)
            args += ["--dir", "/mnt"]
            for dest, source in self.mounts:
                fd = stack.enter_context(_opened(source.parent, source.name, _DIR))
                if fd is not None:
                    fds.append(fd)
                    args += ["--bind-fd", str(fd), dest]
            args += ["--remount-ro", "/", "--chdir", cwd]
            args += [
                "--", setpriv, f"--reuid={self.uid}", f"--regid={self.uid}", "--clear-groups",
                "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs", "--", *argv,
            ]  # fmt: skip
            yield args, tuple(fds)


def own_tree(root: Path, uid: int) -> None:
    """Give a tree to ``uid`` (links themselves, never what they point to; walked through
    directory descriptors, so a directory swapped for a link is not followed)."""
    os.chown(root, uid, uid, follow_symlinks=False)
    for _, dirs, files, fd in os.fwalk(root, follow_symlinks=False):
        for name in [*dirs, *files]:
            with contextlib.suppress(FileNotFoundError):
                os.chown(name, uid, uid, dir_fd=fd, follow_symlinks=False)


__all__ = [
    "SERVER_USER",
    "Sandbox",
    "UidRange",
    "allocate_uid",
    "own_tree",
    "python_dirs",
    "sandbox_problem",
]
