"""A one-node Slurm on loopback wired to a V-IPU controller: munged, slurmctld, slurmd, the bridge.

Everything lives under one private directory (config, state, spool, logs,
munge key and socket) and listens on ports chosen free at start, so it runs
beside a system Slurm and beside other copies of itself. It needs root
(slurmd starts jobs as their users) and Debian's ``slurm-wlm`` and ``munge``.
``vpod slurm up`` and the tests start it; production uses the system's Slurm
with the lines docs/slurm.md lists.
"""

from __future__ import annotations

import os
import random
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from . import spank
from .local_accounting import LocalAccounting
from .settings import SlurmSettings, render_settings
from .shell_hooks import write_hooks
from .slurm_conf import (
    GRES_NAME,
    STATIC_GRES_NAME,
    IpuPartition,
    accounting_lines,
    gres_conf,
    integration_lines,
    job_submit_lua,
    node_gres,
)

NODE_NAME = "vpod"
SLURM_PARTITION = "ipu"
CPUS = 256
"""Cores the node claims (config_overrides): enough that CPUs never limit IPU jobs."""
START_TIMEOUT_S = 60.0
PORT_ATTEMPTS = 3
"""Starts tried when a daemon finds a port it was given taken (ports chosen here only)."""
REQUIRED_PROGRAMS = ("munged", "slurmctld", "slurmd", "sbatch", "squeue", "scontrol")


class LocalSlurmError(Exception):
    """The local Slurm cannot start; the message says what is missing."""


def missing_requirements() -> str | None:
    """Why a local Slurm cannot run here, or None when it can."""
    if os.geteuid() != 0:
        return "needs root: slurmd starts jobs as their users"
    missing = [
        name for name in REQUIRED_PROGRAMS if shutil.which(name, path=_search_path()) is None
    ]
    if missing:
        return f"{', '.join(missing)} not installed (Debian: apt-get install slurm-wlm munge)"
    return None


def _search_path() -> str:
    return os.environ.get("PATH", "") + ":/usr/sbin:/usr/bin:/sbin"


def _which(name: str) -> str:
    found = shutil.which(name, path=_search_path())
    if found is None:
        raise LocalSlurmError(f"{name} is not installed (Debian: apt-get install slurm-wlm munge)")
    return found


class PortTakenError(LocalSlurmError):
    """A daemon found its port taken between the choice and its bind."""


def _ephemeral_start() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_port(address: str = "127.0.0.1") -> int:
    """A port nothing listens on at ``address``, picked at random below the kernel's
    ephemeral range.

    A port the kernel hands out (bind to 0) is in that range, where any outgoing
    connection on the host may take it before the daemon binds it; below it only another
    listener can, which :meth:`LocalSlurm.start` survives by choosing again.
    """
    top = _ephemeral_start()
    candidates = range(20000, top) if top > 21000 else range(1024, top)
    for port in random.sample(candidates, min(200, len(candidates))):
        with socket.socket() as sock:
            try:
                sock.bind((address, port))
            except OSError:
                continue
            return port
    with socket.socket() as sock:
        sock.bind((address, 0))
        chosen: int = sock.getsockname()[1]
        return chosen


@dataclass
class LocalSlurm:
    """The processes and files of one local Slurm; ``start()`` then ``stop()``."""

    root: Path
    settings: SlurmSettings
    ipus: int
    """GRES count of the node: the size of the V-IPU allocation the ``ipu`` partition maps to."""
    bin_dir: Path = field(default_factory=lambda: Path(sys.executable).parent)
    with_bridge: bool = True
    with_integration: bool = True
    """False: the same Slurm without hooks or job_submit.lua (the benchmark's baseline)."""
    accounting: bool = False
    """Also run MariaDB and slurmdbd, so sacct shows each job's gres/ipu (see local_accounting)."""
    sched_interval_s: int = 2
    """Slurm's main scheduling pass: batch jobs start on one of them (docs/performance.md)."""
    ctld_port: int = 0
    slurmd_port: int = 0
    dbd_port: int = 0
    child_setup: Callable[[], None] | None = None
    """Run in each child before it execs (``preexec_fn``): ``vpod slurm up`` passes one that
    asks for a parent-death signal, so no daemon outlives it (see ``launch/parent_death.py``)."""
    spank_plugin: Path | None = None
    """The --ipus plugin, when it could be built here (see :attr:`spank_missing`)."""
    spank_missing: str | None = None
    """Why the --ipus plugin was not built (no libslurm-dev or C compiler), or None."""
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    _accounting: LocalAccounting | None = None

    @property
    def etc(self) -> Path:
        return self.root / "etc"

    @property
    def logs(self) -> Path:
        return self.root / "log"

    @property
    def slurm_conf(self) -> Path:
        return self.etc / "slurm.conf"

    @property
    def settings_path(self) -> Path:
        return self.etc / "vpod-slurm.toml"

    def env(self) -> dict[str, str]:
        """Environment for Slurm commands aimed at this cluster."""
        env = dict(os.environ)
        env["SLURM_CONF"] = str(self.slurm_conf)
        env["PATH"] = _search_path()
        return env

    # -- files

    def write_files(self) -> None:
        for sub in ("etc", "state", "spool", "log", "run", "munge", "bin"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        os.chmod(self.root / "munge", 0o700)
        key = self.root / "munge" / "munge.key"
        if not key.exists():
            key.write_bytes(secrets.token_bytes(1024))
            os.chmod(key, 0o400)
        self.ctld_port = self.ctld_port or free_port()
        self.slurmd_port = self.slurmd_port or free_port()
        if self.accounting:
            self.dbd_port = self.dbd_port or free_port()
        self.settings = replace(
            self.settings,
            slurm_conf=str(self.slurm_conf),
            socket=str(self.root / "run" / "bridge.sock"),
            credentials_dir=str(self.root / "run" / "jobs"),
            slurm_bin_dir=str(Path(_which("squeue")).parent),
        )
        self.settings_path.write_text(render_settings(self.settings))
        # The bash hooks Slurm runs per job; they fall back to the Python ones in bin_dir.
        written = write_hooks(self.root / "bin", self.settings_path, self.bin_dir)
        hooks = {hook: str(path) for hook, path in written.items()}
        if self.with_integration:
            self._build_spank()
        # Reconfigurable: Slurm counts the shared partition's IPUs, not the allocation's.
        ipus = self.settings.shared_size if self.settings.mode == "reconfigurable" else self.ipus
        partition = IpuPartition(
            SLURM_PARTITION, NODE_NAME, self.settings.allocation_for(SLURM_PARTITION), ipus
        )
        static = self.static_layout()
        self.slurm_conf.write_text(self._slurm_conf(partition, hooks))
        (self.etc / "gres.conf").write_text(gres_conf([partition], static=static))
        (self.etc / "job_submit.lua").write_text(
            job_submit_lua([partition], SLURM_PARTITION, mode=self.settings.mode, static=static)
        )
        os.chmod(self.root, 0o755)  # jobs of other users read the settings and hooks
        os.chmod(self.root / "run", 0o755)  # and their own key file under run/jobs (0711)

    def static_layout(self) -> list[tuple[int, int]]:
        return self.settings.static_layout() if self.settings.mode == "static" else []

    def _build_spank(self) -> None:
        """Build --ipus into ``lib/`` (idempotent) and name it in plugstack.conf."""
        try:
            self.spank_plugin = spank.build(self.root / "lib")
        except spank.SpankBuildError as exc:
            self.spank_missing = str(exc)
            return
        os.chmod(self.root / "lib", 0o755)
        spank.write_plugstack(self.etc / spank.PLUGSTACK_FILE, self.spank_plugin)

    def _slurm_conf(self, partition: IpuPartition, hooks: dict[str, str]) -> str:
        r = self.root
        lines = [
            "# A one-node Slurm for vpod (written by vpod slurm up / the tests)",
            "ClusterName=vpod",
            f"SlurmctldHost={socket.gethostname()}(127.0.0.1)",
            f"SlurmctldPort={self.ctld_port}",
            f"SlurmdPort={self.slurmd_port}",
            "AuthType=auth/munge",
            "CredType=cred/munge",
            f"AuthInfo=socket={r / 'munge' / 'munge.socket'}",
            "SlurmUser=root",
            "SlurmdUser=root",
            f"StateSaveLocation={r / 'state'}",
            f"SlurmdSpoolDir={r / 'spool'}",
            f"SlurmctldPidFile={r / 'run' / 'slurmctld.pid'}",
            f"SlurmdPidFile={r / 'run' / 'slurmd.pid'}",
            f"SlurmctldLogFile={r / 'log' / 'slurmctld.log'}",
            f"SlurmdLogFile={r / 'log' / 'slurmd.log'}",
            "JobCompType=jobcomp/filetxt",
            f"JobCompLoc={r / 'log' / 'jobcomp.txt'}",
            "ProctrackType=proctrack/pgid",
            "TaskPlugin=task/none",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_CPU",
            "SchedulerType=sched/builtin",
            f"SchedulerParameters=sched_interval={self.sched_interval_s}",
            "SlurmdParameters=config_overrides",
            "ReturnToService=2",
            "MinJobAge=600",
            "KillWait=2",
            "InactiveLimit=0",
            "MailProg=/bin/true",
            "MpiDefault=none",
            "SlurmctldDebug=info",
            "SlurmdDebug=info",
        ]
        static = self.static_layout()
        gres = STATIC_GRES_NAME if static else GRES_NAME
        if self.accounting:
            lines += accounting_lines(
                "127.0.0.1", self.dbd_port, str(self.root / "munge" / "munge.socket"), gres=gres
            )
        if self.with_integration:
            lines += integration_lines(hooks)
            if self.spank_plugin is not None:
                lines.append(f"PlugStackConfig={self.etc / spank.PLUGSTACK_FILE}")
        else:
            lines += [f"GresTypes={gres}"]
        node_line = node_gres([partition], NODE_NAME, static=static)
        lines += [
            f"NodeName={NODE_NAME} NodeHostname={socket.gethostname()} NodeAddr=127.0.0.1"
            f" CPUs={CPUS} RealMemory=100000 {node_line} State=UNKNOWN",
            f"PartitionName={SLURM_PARTITION} Nodes={NODE_NAME} Default=YES MaxTime=INFINITE"
            " State=UP",
        ]
        return "\n".join(lines) + "\n"

    # -- processes

    def _spawn(self, name: str, argv: list[str]) -> subprocess.Popen[bytes]:
        log = open(self.logs / f"{name}.out", "ab")  # noqa: SIM115 - the child owns it
        proc = subprocess.Popen(
            argv,
            env=self.env(),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=self.child_setup,
        )
        log.close()
        self.procs[name] = proc
        return proc

    def start(self) -> None:
        reason = missing_requirements()
        if reason:
            raise LocalSlurmError(f"cannot run a local Slurm: {reason}")
        chosen = (self.ctld_port, self.slurmd_port, self.dbd_port) == (0, 0, 0)
        for attempt in range(PORT_ATTEMPTS):
            self.write_files()
            try:
                self._start_processes()
                return
            except PortTakenError:
                self.stop()
                if not chosen or attempt == PORT_ATTEMPTS - 1:
                    raise
                # Another listener took a port we chose: choose them all again.
                self.ctld_port = self.slurmd_port = self.dbd_port = 0
            except BaseException:
                self.stop()
                raise

    def _start_processes(self) -> None:
        m = self.root / "munge"
        self._spawn(
            "munged",
            [
                _which("munged"),
                "-F",
                "-f",
                f"--socket={m / 'munge.socket'}",
                f"--key-file={m / 'munge.key'}",
                f"--log-file={m / 'munged.log'}",
                f"--pid-file={m / 'munged.pid'}",
                f"--seed-file={m / 'munged.seed'}",
            ],
        )
        self._wait(lambda: (m / "munge.socket").exists(), "munged to open its socket")
        if self.accounting:
            self._accounting = LocalAccounting(
                self.root / "accounting",
                self.etc,
                m / "munge.socket",
                free_port(),
                self.dbd_port,
                child_setup=self.child_setup,
            )
            self._accounting.start(self.env())
        if self.with_bridge and self.with_integration:
            self.start_bridge()
        self.start_slurmctld()
        self._spawn("slurmd", [_which("slurmd"), "-D", "-N", NODE_NAME])
        self._wait(self.node_idle, f"node {NODE_NAME} to become idle")

    def start_bridge(self) -> None:
        proc = self._spawn(
            "bridge", [str(self.bin_dir / "vpod-slurm-bridge"), "--config", str(self.settings_path)]
        )
        sock = Path(self.settings.socket)
        self._wait(lambda: sock.exists() or proc.poll() is not None, "the bridge's socket")
        if proc.poll() is not None:
            raise LocalSlurmError(
                f"vpod-slurm-bridge exited: {(self.logs / 'bridge.out').read_text()[-2000:]}"
            )

    def start_slurmctld(self) -> None:
        self._spawn("slurmctld", [_which("slurmctld"), "-D", "-i"])
        self._wait(self.controller_up, "slurmctld to answer")

    def kill(self, name: str, sig: int = signal.SIGKILL) -> None:
        proc = self.procs.pop(name, None)
        if proc is not None and proc.poll() is None:
            proc.send_signal(sig)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def run(self, *argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [_which(argv[0]), *argv[1:]],
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        if check and done.returncode != 0:
            raise LocalSlurmError(f"{' '.join(argv)}: {done.stderr.strip()}")
        return done

    def controller_up(self) -> bool:
        return self.run("scontrol", "ping", check=False).stdout.count("UP") > 0

    def node_idle(self) -> bool:
        out = self.run("sinfo", "--noheader", "-n", NODE_NAME, "-o", "%T", check=False).stdout
        return out.strip().rstrip("*") in ("idle", "mixed", "allocated")

    def _wait(self, ready: object, what: str, timeout: float = START_TIMEOUT_S) -> None:
        assert callable(ready)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if ready():
                return
            for name, proc in self.procs.items():
                if proc.poll() is not None:
                    tail = (self.logs / f"{name}.out").read_text(errors="replace")[-2000:]
                    taken = "Address already in use" in tail
                    raise (PortTakenError if taken else LocalSlurmError)(
                        f"{name} exited with {proc.returncode} waiting for {what}:\n{tail}"
                    )
            time.sleep(0.1)
        raise LocalSlurmError(f"timed out waiting for {what}; logs in {self.logs}")

    def stop(self) -> None:
        """Cancel every job, then stop slurmd, slurmctld, the bridge and munged."""
        if "slurmctld" in self.procs:
            self.run("scancel", "--full", "--quiet", "--user", "root", check=False)
            deadline = time.monotonic() + 20
            while (
                time.monotonic() < deadline
                and self.run("squeue", "--noheader", check=False).stdout.strip()
            ):
                time.sleep(0.2)
        for name in ("slurmd", "slurmctld", "bridge"):
            self.kill(name, signal.SIGTERM)
        if self._accounting is not None:
            self._accounting.stop()
        self.kill("munged", signal.SIGTERM)
