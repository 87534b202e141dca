"""Slurm accounting for the local cluster: a private MariaDB and slurmdbd on loopback.

With accounting, ``AccountingStorageTRES=gres/ipu`` puts each job's IPUs in
its ``AllocTRES`` (``sacct -o AllocTRES``); slurmctld refuses that line
without slurmdbd, and slurmdbd stores only in MySQL/MariaDB. Everything
lives under ``ROOT/accounting`` (data, socket, logs), the database listens on
127.0.0.1 only and its one account has a random password written into
slurmdbd.conf (mode 0600). Needs Debian's ``slurmdbd`` and ``mariadb-server``.
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

DB_NAME = "slurm_acct_db"
DB_USER = "slurm"
PROGRAMS = ("mariadbd", "mariadb-install-db", "slurmdbd", "sacct", "sacctmgr")
START_TIMEOUT_S = 90.0


class AccountingError(Exception):
    """MariaDB or slurmdbd did not start; the message has the end of its log."""


def missing_accounting() -> str | None:
    """Why accounting cannot run here, or None."""
    path = os.environ.get("PATH", "") + ":/usr/sbin:/usr/bin:/sbin"
    missing = [name for name in PROGRAMS if shutil.which(name, path=path) is None]
    if missing:
        return (
            f"{', '.join(missing)} not installed (Debian: apt-get install slurmdbd mariadb-server)"
        )
    return None


def _which(name: str) -> str:
    found = shutil.which(name, path=os.environ.get("PATH", "") + ":/usr/sbin:/usr/bin:/sbin")
    if found is None:
        raise FileNotFoundError(name)
    return found


@dataclass
class LocalAccounting:
    """A MariaDB server and a slurmdbd for one local Slurm."""

    root: Path
    slurm_etc: Path
    munge_socket: Path
    db_port: int
    dbd_port: int
    password: str = field(default_factory=lambda: secrets.token_hex(16))
    child_setup: Callable[[], None] | None = None
    """``preexec_fn`` of MariaDB and slurmdbd (see :attr:`LocalSlurm.child_setup`)."""
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    @property
    def conf(self) -> Path:
        """slurmdbd reads slurmdbd.conf beside $SLURM_CONF (it has no option to name it)."""
        return self.slurm_etc / "slurmdbd.conf"

    def _spawn(self, name: str, argv: list[str], env: dict[str, str]) -> None:
        log = open(self.root / f"{name}.out", "ab")  # noqa: SIM115 - the child owns it
        self.procs[name] = subprocess.Popen(
            argv,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
            preexec_fn=self.child_setup,
        )
        log.close()

    def start(self, env: dict[str, str]) -> None:
        """Start MariaDB, then slurmdbd, each answering on its port before this returns."""
        data = self.root / "mysql"
        self.root.mkdir(parents=True, exist_ok=True)
        if not data.exists():
            subprocess.run(
                [
                    _which("mariadb-install-db"),
                    f"--datadir={data}",
                    "--user=root",
                    "--auth-root-authentication-method=socket",
                    "--skip-test-db",
                ],
                check=True,
                capture_output=True,
                timeout=300,
            )
        init = self.root / "init.sql"
        init.write_text(
            f"CREATE USER IF NOT EXISTS '{DB_USER}'@'127.0.0.1' IDENTIFIED BY '{self.password}';\n"
            f"ALTER USER '{DB_USER}'@'127.0.0.1' IDENTIFIED BY '{self.password}';\n"
            f"GRANT ALL ON {DB_NAME}.* TO '{DB_USER}'@'127.0.0.1';\n"
        )
        os.chmod(init, 0o600)
        self._spawn(
            "mariadbd",
            [
                _which("mariadbd"),
                "--no-defaults",
                f"--datadir={data}",
                "--user=root",
                f"--socket={self.root / 'mysql.sock'}",
                f"--pid-file={self.root / 'mysql.pid'}",
                "--bind-address=127.0.0.1",
                f"--port={self.db_port}",
                f"--init-file={init}",
                "--skip-name-resolve",
                "--innodb-buffer-pool-size=64M",
                "--innodb-flush-log-at-trx-commit=2",
            ],
            env,
        )
        self._wait("mariadbd", self.db_port)
        self.conf.write_text(
            "\n".join(
                [
                    "AuthType=auth/munge",
                    f"AuthInfo=socket={self.munge_socket}",
                    "DbdAddr=127.0.0.1",
                    "DbdHost=localhost",
                    f"DbdPort={self.dbd_port}",
                    "SlurmUser=root",
                    f"PidFile={self.root / 'slurmdbd.pid'}",
                    f"LogFile={self.root / 'slurmdbd.log'}",
                    "StorageType=accounting_storage/mysql",
                    "StorageHost=127.0.0.1",
                    f"StoragePort={self.db_port}",
                    f"StorageUser={DB_USER}",
                    f"StoragePass={self.password}",
                    f"StorageLoc={DB_NAME}",
                ]
            )
            + "\n"
        )
        os.chmod(self.conf, 0o600)
        self._spawn("slurmdbd", [_which("slurmdbd"), "-D"], env)
        self._wait("slurmdbd", self.dbd_port)

    def _wait(self, name: str, port: int) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            with socket.socket() as sock:
                sock.settimeout(0.5)
                if sock.connect_ex(("127.0.0.1", port)) == 0:
                    return
            if self.procs[name].poll() is not None:
                tail = (self.root / f"{name}.out").read_text(errors="replace")[-2000:]
                raise AccountingError(f"{name} exited with {self.procs[name].returncode}:\n{tail}")
            time.sleep(0.2)
        raise AccountingError(f"{name} did not answer on port {port}; logs in {self.root}")

    def stop(self) -> None:
        for name in ("slurmdbd", "mariadbd"):
            proc = self.procs.pop(name, None)
            if proc is not None and proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
