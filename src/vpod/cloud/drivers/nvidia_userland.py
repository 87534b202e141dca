"""The host's NVIDIA driver userland, as a GPU server's sandbox must show it.

A sandbox shows the host's ``/usr`` read-only, so a driver installed by the
distribution (``/usr/bin/nvidia-smi``, ``libcuda.so.1`` in the linker cache)
works inside as it is. Drivers are often elsewhere: NVIDIA's container images
and many cloud images keep them under ``/usr/local/nvidia/{bin,lib64}``, found
through ``PATH`` and ``LD_LIBRARY_PATH`` rather than the linker cache, and a
``.run`` install may use ``/opt``. What NVIDIA's container toolkit does for a
container, this does for a server: it finds where the host's ``nvidia-smi``
and driver libraries are, so the server's environment names those
directories and its sandbox shows them (read-only) where ``/usr`` does not.
Only directories holding the driver's own files are named, never a whole
``LD_LIBRARY_PATH`` of the controller.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

TOOLS = ("nvidia-smi",)
LIBRARIES = ("libcuda.so.1", "libnvidia-ml.so.1")
"""What CUDA programs (``libcuda``) and ``nvidia-smi``/NVML users (``libnvidia-ml``) load."""
USUAL_DIRS = (
    "/usr/local/nvidia/bin",
    "/usr/local/nvidia/lib64",
    "/usr/local/nvidia/lib",
    "/usr/lib64/nvidia",
    "/usr/lib/x86_64-linux-gnu/nvidia/current",
)
"""Where drivers outside the linker cache are usually installed, looked at after the
controller's own ``PATH`` and ``LD_LIBRARY_PATH``."""


@dataclass(frozen=True)
class Userland:
    """Directories a GPU server needs beyond the linker cache and its default ``PATH``."""

    bin_dirs: tuple[str, ...] = ()
    lib_dirs: tuple[str, ...] = ()

    @property
    def dirs(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys((*self.bin_dirs, *self.lib_dirs)))

    def outside(self, shown: Sequence[str]) -> tuple[str, ...]:
        """The directories a sandbox showing ``shown`` (``/usr``...) must bind as well."""
        return tuple(d for d in self.dirs if not any(_under(d, s) for s in shown))

    def environment(self, env: dict[str, str]) -> dict[str, str]:
        """``env`` with these directories after its own ``PATH`` and ``LD_LIBRARY_PATH``."""
        out = dict(env)
        for key, extra in (("PATH", self.bin_dirs), ("LD_LIBRARY_PATH", self.lib_dirs)):
            have = [e for e in out.get(key, "").split(":") if e]
            joined = ":".join([*have, *(d for d in extra if d not in have)])
            if joined:
                out[key] = joined
        return out


def _under(path: str, directory: str) -> bool:
    return Path(path) == Path(directory) or Path(path).is_relative_to(directory)


def _entries(value: str | None) -> list[str]:
    return [e for e in (value or "").split(":") if e.startswith("/")]


def find(path: str | None, ld_library_path: str | None, cached: Iterable[str]) -> Userland:
    """Where ``nvidia-smi`` and the driver libraries are: the first directory of ``path``
    (then :data:`USUAL_DIRS`) holding each tool, and for each library the linker cache
    does not list (``cached``: names it resolves), the first of ``ld_library_path`` (then
    :data:`USUAL_DIRS`) holding it. Nothing found: an empty userland (a host without a
    driver, or one whose driver needs nothing beyond ``/usr`` and the cache)."""
    bins: list[str] = []
    for tool in TOOLS:
        found = shutil.which(tool, path=":".join([*_entries(path), *USUAL_DIRS]))
        if found is not None:
            directory = str(Path(found).parent)
            if directory not in ("/usr/bin", "/bin") and directory not in bins:
                bins.append(directory)
    libs: list[str] = []
    known = set(cached)
    for library in LIBRARIES:
        if library in known:
            continue
        for directory in [*_entries(ld_library_path), *USUAL_DIRS]:
            if os.path.isfile(os.path.join(directory, library)):
                if directory not in libs:
                    libs.append(directory)
                break
    return Userland(tuple(bins), tuple(libs))


def linker_cache() -> set[str]:
    """Library names the host's linker cache resolves (``ldconfig -p``)."""
    ldconfig = shutil.which("ldconfig") or shutil.which("ldconfig", path="/sbin:/usr/sbin")
    if ldconfig is None:
        return set()
    try:
        listed = subprocess.run(
            [ldconfig, "-p"], capture_output=True, text=True, timeout=30, check=False
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        return set()
    return {line.split()[0] for line in listed.splitlines()[1:] if line.strip()}


@functools.cache
def host_userland() -> Userland:
    """This host's driver userland (read once: a driver does not move while we run)."""
    return find(os.environ.get("PATH"), os.environ.get("LD_LIBRARY_PATH"), linker_cache())
