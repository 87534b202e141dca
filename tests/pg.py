"""A private PostgreSQL server for the test suite, started from Debian's binaries.

The server lives in a fresh temporary directory (data directory, log and unix
socket) and listens on 127.0.0.1 on a free port, so it never touches a
system-wide PostgreSQL. PostgreSQL refuses to run as root: when the tests run
as root, ``initdb`` and ``pg_ctl`` run as the ``postgres`` OS user that the
Debian package creates, and the temporary directory is handed to that user.

Durability is switched off (``fsync=off`` and friends): the server holds only
throw-away test databases and every test gets a new one, so creating
databases and committing must be as cheap as possible.

Set ``VPOD_TEST_POSTGRES_URL`` to an administrator URL of an existing server
(``postgresql://user:password@host:5432/postgres``) to use it instead; tests
then create and drop their databases on that server.
"""

from __future__ import annotations

import contextlib
import glob
import itertools
import os
import pwd
import shutil
import subprocess
import tempfile
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
from psycopg import sql

from tests.ports import free_port

EXTERNAL_URL_ENV = "VPOD_TEST_POSTGRES_URL"
_START_TIMEOUT_S = 60
_PG_OPTIONS = (
    "-c fsync=off -c synchronous_commit=off -c full_page_writes=off"
    " -c max_connections=300 -c shared_buffers=32MB"
)


class PostgresUnavailable(Exception):
    """No PostgreSQL server can be used; the message says why and what to do."""


def _find_bindir() -> Path:
    candidates = glob.glob("/usr/lib/postgresql/*/bin/initdb")
    if not candidates:
        raise PostgresUnavailable(
            "PostgreSQL server binaries not found (/usr/lib/postgresql/*/bin/initdb): "
            "run scripts/ensure-system-deps as root, or set "
            f"{EXTERNAL_URL_ENV} to an existing server"
        )
    newest = max(candidates, key=lambda p: int(Path(p).parts[-3].split(".")[0]))
    return Path(newest).parent


@dataclass
class PostgresServer:
    """One PostgreSQL server the tests may create databases on."""

    admin_url: str
    """A libpq URL of the ``postgres`` maintenance database (psycopg, not SQLAlchemy)."""
    root: Path | None = None
    """The temporary directory of a server we started (None for an external server)."""
    _stop_command: list[str] = field(default_factory=list)
    _names: itertools.count[int] = field(default_factory=itertools.count)

    @classmethod
    def start(cls) -> PostgresServer:
        """Start a private server, or connect to ``$VPOD_TEST_POSTGRES_URL``."""
        external = os.environ.get(EXTERNAL_URL_ENV)
        if external:
            server = cls(admin_url=external.replace("postgresql+psycopg://", "postgresql://"))
            server._check()
            return server
        return cls._start_private()

    @classmethod
    def _start_private(cls) -> PostgresServer:
        bindir = _find_bindir()
        run_as: list[str] = []
        owner: pwd.struct_passwd | None = None
        if os.geteuid() == 0:
            try:
                owner = pwd.getpwnam("postgres")
            except KeyError:
                raise PostgresUnavailable(
                    "running as root but there is no 'postgres' OS user to run the server as: "
                    "install the Debian postgresql package or run the tests as a normal user"
                ) from None
            runuser = shutil.which("runuser")
            if runuser is None:
                raise PostgresUnavailable("running as root but runuser(1) is not installed")
            run_as = [runuser, "-u", "postgres", "--"]
        # Not pytest's tmp_path: its parents are private to root, and the server
        # may run as another user who must reach its own directory.
        root = Path(tempfile.mkdtemp(prefix="vpod-pg-"))
        if owner is not None:
            os.chown(root, owner.pw_uid, owner.pw_gid)
        data, log = root / "data", root / "server.log"
        try:
            cls._run(
                [*run_as, str(bindir / "initdb"), "-D", str(data), "-U", "postgres",
                 "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync"],
                cwd=root, what="initdb",
            )  # fmt: skip
            for _attempt in range(3):
                port = free_port()
                options = f"-p {port} -k {root} -c listen_addresses=127.0.0.1 {_PG_OPTIONS}"
                started = subprocess.run(
                    [*run_as, str(bindir / "pg_ctl"), "-D", str(data), "-l", str(log),
                     "-w", "-t", str(_START_TIMEOUT_S), "-o", options, "start"],
                    cwd=root, capture_output=True, text=True, check=False,
                )  # fmt: skip
                if started.returncode == 0:
                    break
            else:
                tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
                raise PostgresUnavailable(
                    f"pg_ctl could not start PostgreSQL: {started.stderr.strip()} {tail}"
                )
        except BaseException:
            shutil.rmtree(root, ignore_errors=True)
            raise
        stop = [*run_as, str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"]
        server = cls(
            admin_url=f"postgresql://postgres@127.0.0.1:{port}/postgres",
            root=root,
            _stop_command=stop,
        )
        server._check()
        return server

    @staticmethod
    def _run(command: list[str], *, cwd: Path, what: str) -> None:
        try:
            done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False)
        except OSError as exc:
            raise PostgresUnavailable(f"{what} could not run: {exc}") from exc
        if done.returncode != 0:
            raise PostgresUnavailable(f"{what} failed: {done.stderr.strip()[-2000:]}")

    def _check(self) -> None:
        try:
            with psycopg.connect(self.admin_url, connect_timeout=10) as conn:
                conn.execute("SELECT 1")
        except psycopg.Error as exc:
            self.stop()
            raise PostgresUnavailable(
                f"PostgreSQL at {self.admin_url} does not answer: {exc}"
            ) from exc

    def url(self, database: str) -> str:
        """The SQLAlchemy URL of ``database`` on this server (driver psycopg 3)."""
        base, _, _old = self.admin_url.rpartition("/")
        return f"{base.replace('postgresql://', 'postgresql+psycopg://', 1)}/{database}"

    def create_database(self, template: str | None = None) -> str:
        """Create an empty database (or a copy of ``template``) and return its name."""
        name = f"t{os.getpid()}_{next(self._names)}_{uuid.uuid4().hex[:6]}"
        statement = sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name))
        if template is not None:
            statement = sql.SQL("{} TEMPLATE {}").format(statement, sql.Identifier(template))
        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute(statement)
        return name

    def drop_database(self, name: str) -> None:
        """Drop ``name``, closing any connection a test left open."""
        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )

    def stop(self) -> None:
        """Stop a server we started and delete its directory (external servers stay up)."""
        if self._stop_command:
            with contextlib.suppress(OSError):
                subprocess.run(self._stop_command, capture_output=True, check=False, timeout=60)
            self._stop_command = []
        if self.root is not None:
            shutil.rmtree(self.root, ignore_errors=True)
            self.root = None
