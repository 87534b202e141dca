"""A VM's local disk: ephemeral scratch space at ``/scratch``, the size its flavor lists.

A virtual server (a g2a vPOD's Poplar VM, a GPU VM) gets its flavor's
``disk_gib`` as an ext4 file system in a sparse image file
(``scratch/<server-id>.img`` under the cloud directory, outside the
server's root), loop-mounted at ``scratch/<server-id>/`` and owned by the
server's uid; the sandbox binds it at ``/scratch`` read-write. It is
size-limited (writing past it fails with ENOSPC inside the server) and
takes host disk only as it is used.

It is **ephemeral**, as a Nova VM's local disk is: kept across reboots and
controller restarts (the controller unmounts it when it stops, so no mount
outlives it, and mounts the image again at the next shell or connection), **emptied by
suspension** (shelve-offload releases the VM's compute, local disk
included: the image is deleted and an empty one made at resume) and gone
with the server. Keep what must survive on volumes (``/mnt/NAME``) or in
``/home`` (the boot volume).

Where the host cannot loop-mount (no root, no loop devices, no
``mkfs.ext4``), ``/scratch`` is a plain directory with no size limit and
:func:`ensure` says so in its answer; the life cycle is the same.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from pathlib import Path

MOUNT_TIMEOUT_S = 60
LAZY = "lazy_itable_init=1,root_owner=0:0"
"""No journal (scratch is ephemeral), inode tables initialised lazily: a sparse image."""


def image_of(scratch_dir: Path) -> Path:
    return scratch_dir.with_name(scratch_dir.name + ".img")


def ensure(scratch_dir: Path, size_gib: int, uid: int | None) -> str | None:
    """Make (or mount again) the scratch space; why it has no size limit, or None."""
    scratch_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    if os.path.ismount(scratch_dir):
        return None
    problem = _loop_problem()
    if problem is None:
        image = image_of(scratch_dir)
        try:
            if not image.exists():
                with open(image, "wb") as handle:
                    handle.truncate(size_gib * 1024**3)  # sparse: host disk only as it is used
                _run(
                    "mkfs.ext4", "-q", "-F", "-m", "0", "-O", "^has_journal", "-E", LAZY, str(image)
                )
            _run("mount", "-o", "loop,nodev,nosuid", str(image), str(scratch_dir))
        except (OSError, subprocess.SubprocessError) as exc:
            problem = f"cannot loop-mount {image.name}: {exc}"
    if uid is not None:
        os.chown(scratch_dir, uid, uid)
        os.chmod(scratch_dir, 0o755)
        with contextlib.suppress(FileNotFoundError):
            shutil.rmtree(scratch_dir / "lost+found")
    return problem


def discard(scratch_dir: Path) -> None:
    """Unmount and delete the scratch space and its contents (idempotent)."""
    if os.path.ismount(scratch_dir):
        _run("umount", "--lazy", str(scratch_dir))
    shutil.rmtree(scratch_dir, ignore_errors=True)
    image_of(scratch_dir).unlink(missing_ok=True)


def release_all(parent: Path) -> None:
    """Unmount every scratch space under ``parent``, keeping the images (and contents)."""
    for entry in sorted(parent.iterdir()) if parent.is_dir() else []:
        if entry.is_dir() and os.path.ismount(entry):
            with contextlib.suppress(OSError, subprocess.SubprocessError):
                _run("umount", "--lazy", str(entry))


def _loop_problem() -> str | None:
    if os.geteuid() != 0:
        return "the controller is not root"
    if shutil.which("mkfs.ext4") is None or shutil.which("mount") is None:
        return "mkfs.ext4 or mount is missing (apt-get install e2fsprogs mount)"
    if not os.path.exists("/dev/loop-control"):
        return "this host has no loop devices"
    return None


def _run(*argv: str) -> None:
    done = subprocess.run(
        argv, capture_output=True, text=True, timeout=MOUNT_TIMEOUT_S, check=False
    )
    if done.returncode != 0:
        raise OSError(f"{argv[0]} failed: {done.stderr.strip()[:200]}")


__all__ = ["discard", "ensure", "image_of", "release_all"]
