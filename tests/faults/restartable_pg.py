"""A private PostgreSQL server that a test may stop and start again on the same port.

The session's server (``tests/pg.py``) is shared by every test, so stopping it
would break the others; a test that takes the database away starts its own
server with the same recipe and then drives ``pg_ctl stop`` / ``pg_ctl start``
itself. ``stop`` is ``-m fast``: connections are closed at once, as when the
database host restarts.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests import pg


@dataclass
class RestartablePostgres:
    server: pg.PostgresServer
    run_as: list[str]
    bindir: Path
    port: int

    @property
    def data(self) -> Path:
        assert self.server.root is not None
        return self.server.root / "data"

    def _ctl(self, *args: str) -> None:
        done = subprocess.run(
            [*self.run_as, str(self.bindir / "pg_ctl"), "-D", str(self.data), *args],
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
        )
        assert done.returncode == 0, f"pg_ctl {args[-1]} failed: {done.stderr.strip()}"

    def stop(self) -> None:
        self._ctl("-m", "fast", "-w", "stop")

    def start(self) -> None:
        assert self.server.root is not None
        options = (
            f"-p {self.port} -k {self.server.root} -c listen_addresses=127.0.0.1"
            " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
            " -c max_connections=300 -c shared_buffers=32MB"
        )
        self._ctl("-l", str(self.server.root / "server.log"), "-w", "-o", options, "start")


@contextmanager
def restartable_postgres() -> Iterator[tuple[RestartablePostgres, str]]:
    """A private server and a fresh database on it (SQLAlchemy URL); skips without PostgreSQL."""
    if os.environ.get(pg.EXTERNAL_URL_ENV):
        pytest.skip(f"cannot stop the external server named by {pg.EXTERNAL_URL_ENV}")
    try:
        server = pg.PostgresServer.start()
    except pg.PostgresUnavailable as exc:
        pytest.skip(f"PostgreSQL is not available: {exc}")
    run_as: list[str] = []
    if os.geteuid() == 0:
        runuser = shutil.which("runuser")
        assert runuser is not None
        run_as = [runuser, "-u", "postgres", "--"]
    port = int(server.admin_url.rsplit(":", 1)[1].split("/", 1)[0])
    handle = RestartablePostgres(server, run_as, pg._find_bindir(), port)
    try:
        name = server.create_database()
        yield handle, server.url(name)
    finally:
        server.stop()
