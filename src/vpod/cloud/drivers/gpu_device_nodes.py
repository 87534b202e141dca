"""Which of the host's device nodes a GPU server's sandbox is given.

A GPU host's agent reports the device nodes of each GPU it hands out; the server's state
lists them, and the local driver binds them into the server's sandbox. Only NVIDIA's names
are taken, each from a character device of the host's ``/dev/nvidia*`` or, for an emulated
GPU host, a stand-in file under its own directory: whatever else a state lists stays out.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

GPU_DEVICE = re.compile(r"/dev/nvidia([0-9]{1,3}|ctl|-uvm|-uvm-tools)")


def gpu_devices(listed: object, stand_ins: Path) -> tuple[tuple[str, Path], ...]:
    """The device nodes a server's state lists that may be bound into its sandbox: NVIDIA's
    names only, each from a character device of the host's ``/dev/nvidia*`` or a stand-in
    file of an emulated GPU host under ``stand_ins`` (never a link: anything else of the
    host stays out, whatever an agent reported)."""
    found: list[tuple[str, Path]] = []
    root = stand_ins.resolve()
    for entry in listed if isinstance(listed, list) else []:
        if not (
            isinstance(entry, list) and len(entry) == 2 and all(isinstance(e, str) for e in entry)
        ):
            continue
        dest, source = entry
        if GPU_DEVICE.fullmatch(dest) is None:
            continue
        try:
            info = os.lstat(source)
        except OSError:
            continue
        node = Path(source)
        nvidia = stat.S_ISCHR(info.st_mode) and GPU_DEVICE.fullmatch(source) is not None
        stand_in = stat.S_ISREG(info.st_mode) and node.resolve().is_relative_to(root)
        if (nvidia or stand_in) and dest not in {d for d, _ in found}:
            found.append((dest, node))
    return tuple(found)


def real_gpus(devices: tuple[tuple[str, Path], ...]) -> bool:
    """Whether any of a server's device nodes is a real GPU's (not an emulated stand-in)."""
    for _, node in devices:
        try:
            if stat.S_ISCHR(os.stat(node).st_mode):
                return True
        except OSError:
            continue  # gone since it was listed: not one to show
    return False
