"""Host-wide claims on the loopback blocks (127.X.0.0/16) of ``vpod up``'s emulated machines.

Loopback addresses belong to the whole host, so two ``vpod up`` started at the
same moment on different data directories could both find a block free and both
choose it; the second one's agents then fail to bind. A claim is an ``flock`` on
``/tmp/vpod-address-claims/127.X``, taken before the block is chosen and held for
``vpod up``'s life. The kernel drops it when the process ends, however it ends,
so a claim never outlives its holder. The directory is fixed (not ``$TMPDIR``)
because every process on the host must see the same claims.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path
from typing import IO

CLAIMS_DIR = Path("/tmp/vpod-address-claims")


def block_of(base: str) -> str:
    """``127.X`` of an address base ``127.X.Y.Z``."""
    return ".".join(base.split(".")[:2])


class AddressClaims:
    """The blocks this process holds; released on ``close`` (or when the process ends).

    Use it under ``contextlib.closing`` to release them when a block of code ends.
    """

    def __init__(self, directory: Path = CLAIMS_DIR) -> None:
        self.directory = directory
        self._held: dict[str, IO[str]] = {}

    def take(self, block: str, holder: str) -> bool:
        """Claim ``block`` for ``holder`` (a data directory); False when another process has it."""
        if block in self._held:
            return True
        handle = self._open(block)
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            return False
        if handle.writable():  # says who holds it; a file of another user stays as it is
            handle.seek(0)
            handle.truncate()
            handle.write(f"pid {os.getpid()}, data dir {holder}\n")
            handle.flush()
        self._held[block] = handle
        return True

    def holder(self, block: str) -> str:
        """What the claim's file says about the process holding ``block`` ('' when nothing)."""
        try:
            return (self.directory / block).read_text().strip()
        except OSError:
            return ""

    def release(self, block: str) -> None:
        handle = self._held.pop(block, None)
        if handle is not None:
            handle.close()

    def close(self) -> None:
        for handle in self._held.values():
            handle.close()  # closing the last descriptor drops the flock
        self._held.clear()

    def _open(self, block: str) -> IO[str]:
        if not self.directory.is_dir():
            self.directory.mkdir(parents=True, exist_ok=True)
            # shared by every user of the host, like /tmp itself (unless another user made it)
            with contextlib.suppress(PermissionError):
                os.chmod(self.directory, 0o1777)
        path = self.directory / block
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
        except PermissionError:  # another user's file: a read-only descriptor can still lock
            fd = os.open(path, os.O_RDONLY)
            return os.fdopen(fd, "r")
        return os.fdopen(fd, "r+")
