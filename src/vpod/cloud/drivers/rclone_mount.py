"""Mounting a cluster's bucket on a local server with ``rclone mount`` (Debian's ``rclone``,
over FUSE).

The bucket is mounted on a directory of the controller's, outside every
server's root (``DATA_DIR/cloud/mounts/<server-id>``), and the path the
tenant chose appears in the server's root as a link to it, made through
:mod:`.confined`: nothing is ever mounted on a path the tenant controls (a
link planted there could point the mount at any host directory), and
deleting a server's directory never walks into the bucket. Keys reach
rclone through its environment (``RCLONE_S3_*``), never its command line
(which every user of the host can read).

Mounts are remembered by a fingerprint of what they serve: setting up a
server again with the same storage leaves a running mount alone; another
storage, other keys or another path remounts. Shelving, deleting and
detaching unmount (lazily, so a busy mount never blocks the controller).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

from . import confined
from .base import DatasetAccess, DriverError

MOUNT_TIMEOUT_S = 60.0
FINGERPRINT = ".vpod-mount"
"""Beside the mount point: what is mounted there (a hash, no key)."""


def mount_problem() -> str | None:
    """Why this host cannot mount buckets, in one line; None when it can."""
    if shutil.which("rclone") is None:
        return "rclone is not installed on the host (apt-get install rclone)"
    if not os.path.exists("/dev/fuse"):
        return "the host has no /dev/fuse (FUSE is not available)"
    if _fusermount() is None:
        return "fusermount is not installed on the host (apt-get install fuse3)"
    if os.geteuid() != 0 and not os.access("/dev/fuse", os.R_OK | os.W_OK):
        return "the controller's user cannot open /dev/fuse"
    return None


def _fusermount() -> str | None:
    return shutil.which("fusermount3") or shutil.which("fusermount")


def is_mounted(path: Path) -> bool:
    """Whether ``path`` is a mount point now (read from the kernel's mount table)."""
    wanted = str(path)
    try:
        with open("/proc/self/mountinfo") as table:
            for line in table:
                fields = line.split()
                if len(fields) > 4 and _unescape(fields[4]) == wanted:
                    return True
    except OSError:
        return False
    return False


def _unescape(field: str) -> str:
    return field.replace("\\040", " ").replace("\\011", "\t").replace("\\012", "\n")


def _fingerprint(access: DatasetAccess) -> str:
    parts = (
        access.endpoint_url,
        access.region,
        access.bucket,
        str(access.path_style),
        access.access_key_id,
        access.secret_access_key,
    )
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


def mount(
    mount_point: Path, access: DatasetAccess, cache_dir: Path, owner: int | None = None
) -> None:
    """Serve ``access``'s bucket at ``mount_point`` (idempotent); its files belong to
    ``owner`` (a sandboxed server's uid), else to the controller's user."""
    marker = mount_point.parent / f"{mount_point.name}{FINGERPRINT}"
    wanted = _fingerprint(access)
    if is_mounted(mount_point):
        if marker.exists() and marker.read_text().strip() == wanted:
            return
        unmount(mount_point)
    problem = mount_problem()
    if problem is not None:
        raise DriverError(f"cannot mount dataset storage: {problem}")
    mount_point.mkdir(parents=True, exist_ok=True)
    cache_dir.mkdir(parents=True, exist_ok=True)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "RCLONE_CONFIG": os.devnull,
        "RCLONE_S3_PROVIDER": "Other",
        "RCLONE_S3_ENDPOINT": access.endpoint_url,
        "RCLONE_S3_REGION": access.region,
        "RCLONE_S3_FORCE_PATH_STYLE": "true" if access.path_style else "false",
        "RCLONE_S3_ACCESS_KEY_ID": access.access_key_id,
        "RCLONE_S3_SECRET_ACCESS_KEY": access.secret_access_key,
    }
    command = [
        "rclone", "mount", f":s3:{access.bucket}", str(mount_point),
        "--daemon", "--allow-other", "--vfs-cache-mode", "writes",
        "--cache-dir", str(cache_dir), "--dir-cache-time", "5s",
    ]  # fmt: skip
    if owner is not None:
        command += ["--uid", str(owner), "--gid", str(owner)]
    try:
        done = subprocess.run(
            command, env=env, capture_output=True, text=True, timeout=MOUNT_TIMEOUT_S, check=False
        )
    except subprocess.TimeoutExpired:
        raise DriverError(f"rclone did not mount the bucket in {MOUNT_TIMEOUT_S:.0f} s") from None
    if done.returncode != 0 or not is_mounted(mount_point):
        said = (done.stderr or done.stdout).strip().splitlines()
        raise DriverError(
            f"rclone could not mount bucket {access.bucket}: {said[-1] if said else 'no reason'}"
        )
    marker.write_text(wanted + "\n")


def unmount(mount_point: Path) -> None:
    """Stop serving ``mount_point`` (idempotent; lazily, so a busy mount never blocks)."""
    if is_mounted(mount_point):
        tool = _fusermount()
        command = (
            [tool, "-u", "-z", str(mount_point)] if tool else ["umount", "-l", str(mount_point)]
        )
        done = subprocess.run(command, capture_output=True, text=True, timeout=30, check=False)
        if done.returncode != 0 and is_mounted(mount_point):
            raise DriverError(f"cannot unmount {mount_point}: {done.stderr.strip()[:200]}")
    (mount_point.parent / f"{mount_point.name}{FINGERPRINT}").unlink(missing_ok=True)


def _shown_now(root: Path, mount_path: str) -> str | None:
    """Where the link ``mount_path`` points now (None: nothing there); DriverError when
    something else is there, or a link stands where a directory above it belongs."""
    relative = mount_path.lstrip("/")
    try:
        return confined.link_target(root, relative)
    except FileExistsError:
        raise DriverError(
            f"{mount_path} exists on the server and is not a link: remove it, or mount the"
            " storage at another path"
        ) from None
    except confined.Escape as exc:
        raise DriverError(f"cannot mount at {mount_path}: {exc.strerror}") from None


def show_in_root(root: Path, mount_path: str, mount_point: Path) -> None:
    """Make ``mount_path`` on the server a link to ``mount_point`` (never following links)."""
    if _shown_now(root, mount_path) != str(mount_point):
        confined.link(root, mount_path.lstrip("/"), mount_point)


def hide_in_root(root: Path, mount_path: str, mount_point: Path) -> None:
    """Remove the link ``mount_path`` if it still points to ``mount_point``."""
    relative = mount_path.lstrip("/")
    try:
        if confined.link_target(root, relative) == str(mount_point):
            confined.unlink(root, relative)
    except (FileExistsError, confined.Escape):
        return  # the tenant replaced it: it is theirs now


def sync(
    root: Path,
    mounts: Path,
    server_id: str,
    access: DatasetAccess | None,
    owner: int | None = None,
) -> None:
    """Make the server at ``root`` show what ``access`` asks (a mount, or none): mount point
    ``mounts/<server_id>``, what it shows in ``mounts/<server_id>.path``."""
    mount_point = mounts / server_id
    record = mounts / f"{server_id}.path"
    previous = record.read_text().strip() if record.exists() else None
    wanted = access.mount_path if access is not None else None
    if access is None or wanted is None:
        unmount(mount_point)
        if previous:
            hide_in_root(root, previous, mount_point)
        record.unlink(missing_ok=True)
        return
    _shown_now(root, wanted)  # refuse a planted path before anything is mounted
    mount(mount_point, access, mounts / f"{server_id}.cache", owner)
    if previous and previous != wanted:
        hide_in_root(root, previous, mount_point)
    show_in_root(root, wanted, mount_point)
    record.write_text(wanted + "\n")


def shown_at(mounts: Path, server_id: str) -> tuple[str, Path] | None:
    """(the path the server shows its bucket at, the mount point) while it is mounted."""
    record = mounts / f"{server_id}.path"
    mount_point = mounts / server_id
    if not record.exists() or not is_mounted(mount_point):
        return None
    return record.read_text().strip(), mount_point


def release(mounts: Path, server_id: str) -> None:
    """Unmount the server's bucket and forget its cache (shelve keeps the record, so a
    resume's setup shows the same path again)."""
    unmount(mounts / server_id)
    shutil.rmtree(mounts / f"{server_id}.cache", ignore_errors=True)
