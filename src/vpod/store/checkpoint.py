"""SQLite: copy the write-ahead log back into the database file on a thread of its own.

Left alone, SQLite checkpoints inside the commit that takes the WAL past
1,000 pages: that commit copies the pages back into the database file and
waits for two ``fsync`` calls. On a virtual disk that is several milliseconds,
once every few dozen partition changes, and every request queued behind the
controller's single SQLite thread waits too: it was the largest part of the
99th-percentile latency of partition creation (see docs/performance.md).

So the store's connections raise SQLite's automatic threshold to
:data:`SAFETY_NET_PAGES` (a safety net that only acts if this thread falls
far behind) and a :class:`WalCheckpointer` runs a ``PASSIVE`` checkpoint
(which never blocks a reader or a writer) on its own thread after every
``every`` committed write transactions. Durability is unchanged: a commit is
in the WAL either way, and ``synchronous=NORMAL`` still decides when it
reaches the disk.
"""

from __future__ import annotations

import logging
import threading

from sqlalchemy import Engine

log = logging.getLogger(__name__)

SAFETY_NET_PAGES = 20_000
"""``PRAGMA wal_autocheckpoint`` of the store's connections: about 80 MB of WAL."""


class WalCheckpointer:
    """Checkpoints an SQLite database in the background after every ``every`` commits.

    :meth:`note_commit` is called by the writer after each commit; the thread
    starts on first need and stops in :meth:`close`.
    """

    def __init__(self, engine: Engine, every: int) -> None:
        if every < 1:
            raise ValueError(f"checkpoint every {every} commits: give at least 1")
        self._engine = engine
        self._every = every
        self._commits = 0
        self._wake = threading.Event()
        self._closed = False
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()
        self._done = threading.Condition()
        self._completed = 0

    def note_commit(self) -> None:
        """Count one committed write; wake the thread every ``every`` of them.

        Called without a lock: two writers racing may lose a count, which
        only moves the next checkpoint by a commit.
        """
        self._commits += 1
        if self._commits >= self._every:
            self._commits = 0
            self._ensure_thread()
            self._wake.set()

    def checkpoint(self) -> tuple[int, int, int]:
        """Run one PASSIVE checkpoint now, here; returns SQLite's (busy, frames, copied)."""
        raw = self._engine.raw_connection()
        try:
            driver = raw.driver_connection
            assert driver is not None
            busy, frames, copied = driver.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        finally:
            raw.close()
        with self._done:
            self._completed += 1
            self._done.notify_all()
        return int(busy), int(frames), int(copied)

    @property
    def completed(self) -> int:
        """Checkpoints run so far, in the background or by :meth:`checkpoint`."""
        return self._completed

    def wait_completed(self, count: int, timeout: float) -> bool:
        """Wait until ``count`` checkpoints have run; False if ``timeout`` passed first."""
        with self._done:
            return self._done.wait_for(lambda: self._completed >= count, timeout)

    def close(self) -> None:
        """Stop the thread (after the checkpoint it may be running) and wait for it."""
        with self._start_lock:
            self._closed = True
            thread = self._thread
        self._wake.set()
        if thread is not None:
            thread.join()

    def _ensure_thread(self) -> None:
        if self._thread is not None:
            return
        with self._start_lock:
            if self._thread is None and not self._closed:
                self._thread = threading.Thread(
                    target=self._run, name="vpod-sqlite-checkpoint", daemon=True
                )
                self._thread.start()

    def _run(self) -> None:
        while True:
            self._wake.wait()
            self._wake.clear()
            if self._closed:
                return
            try:
                self.checkpoint()
            except Exception as exc:  # the thread must outlive any one failure
                # The safety net still bounds the WAL; the next wake tries again.
                log.warning("background WAL checkpoint failed: %s", exc)
