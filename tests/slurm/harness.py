"""A real Slurm (munged, slurmctld, slurmd, the bridge) on loopback beside a real ``vpod up``.

:func:`slurm_pod` starts them; ``tests/slurm/conftest.py`` makes one for the
whole package (with accounting when slurmdbd and MariaDB are installed), so
the tests share the daemons; it skips with the reason when the machine
cannot run Slurm (not root, ``slurm-wlm``/``munge`` missing: ``scripts/test``
installs them).
The pod listens on fixed free ports so it can be stopped and started again
(``SlurmPod.restart_pod``) under the same address the integration knows.

The checks every scenario ends with (:meth:`SlurmPod.check_settled`): the
queue drains, every submitted job reached a final state (none lost), no
``slurm_*`` partition is left in V-IPU nor configured on any agent; a job in
``SlurmPod.running_beside`` (started by a fixture to run across several
scenarios) is the one exception, until its own scenario checks it. While a
scenario runs, :class:`AgentSampler` reads every agent's configurations and
fails if an IPU is ever in two partitions, or a running job's IPUs are not.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import pytest

from tests.e2e.conftest import Pod, start_pod
from tests.ports import free_port
from vpod.integrations.slurm.local_accounting import missing_accounting
from vpod.integrations.slurm.local_cluster import LocalSlurm, missing_requirements
from vpod.integrations.slurm.settings import SlurmSettings
from vpod.wire import agent_pb2 as apb
from vpod.wire import agent_pb2_grpc as apb_grpc

IPU_JOB = Path(__file__).with_name("ipu_job.py")
FINAL_STATES = {"COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY"}
ALLOCATION_IPUS = 64


def wait_until(condition: object, timeout: float, what: str, poll: float = 0.2) -> None:
    assert callable(condition)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(poll)
    raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")


@dataclass
class SlurmPod:
    """The pod, the Slurm cluster wired to it, and what the tests submitted."""

    pod: Pod
    cluster: LocalSlurm
    pod_args: list[str]
    submitted: list[str] = field(default_factory=list)
    admin_config: Path | None = None
    """A secure pod's administrator's vipu-cli.hcl (None: the pod runs open)."""
    _agents: tuple[Pod, list[dict[str, Any]]] | None = None
    running_beside: set[str] = field(default_factory=set)
    """Jobs meant to outlive the scenario running now: check_settled leaves them and their
    partitions alone (the scenario that owns one takes it out before its own checks)."""

    # -- Slurm

    def slurm(self, *argv: str, check: bool = True) -> str:
        done = self.cluster.run(*argv, check=False)
        if check and done.returncode != 0:
            raise AssertionError(f"{' '.join(argv)} exited {done.returncode}: {done.stderr}")
        return done.stdout

    def sbatch(self, *args: str, wrap: str) -> str:
        if not any(a.startswith("--output") for a in args):
            args = (f"--output={self.cluster.logs}/job-%j.out", *args)
        out = self.slurm("sbatch", "--parsable", *args, "--wrap", wrap)
        job_id = out.strip().split(";")[0]
        self.submitted.append(job_id)
        return job_id

    def ipu_job(self, ipus: int, seconds: float, *args: str) -> str:
        """A job that attaches all its IPUs and holds them for ``seconds``."""
        python = self.cluster.bin_dir / "python"
        return self.sbatch(f"--gres=ipu:{ipus}", *args, wrap=f"{python} {IPU_JOB} {seconds}")

    def job(self, job_id: str) -> dict[str, str]:
        """``scontrol show job`` as a dict (empty when slurmctld forgot the job)."""
        done = self.cluster.run("scontrol", "--oneliner", "show", "job", job_id, check=False)
        fields: dict[str, str] = {}
        for item in done.stdout.split():
            key, _, value = item.partition("=")
            fields.setdefault(key, value)
        return fields

    def state(self, job_id: str) -> str:
        return self.job(job_id).get("JobState", "")

    def wait_state(self, job_id: str, states: set[str], timeout: float = 60) -> str:
        wait_until(lambda: self.state(job_id) in states, timeout, f"job {job_id} in {states}")
        return self.state(job_id)

    def states(self) -> dict[str, str]:
        """Every job slurmctld knows (MinJobAge keeps finished ones for 10 minutes) -> state."""
        out = self.slurm("squeue", "--noheader", "--states", "all", "--format", "%A %T")
        return dict(line.split() for line in out.splitlines() if line.strip())

    def queue(self) -> list[str]:
        """Jobs still pending, running or completing."""
        return self.slurm("squeue", "--noheader", "--format", "%A %T").splitlines()

    def output(self, job_id: str) -> str:
        path = Path(self.job(job_id).get("StdOut", ""))
        return path.read_text() if path.is_file() else ""

    # -- V-IPU

    def _as_admin(self) -> list[str]:
        return ["--config", str(self.admin_config)] if self.admin_config else []

    def partitions(self) -> list[str]:
        """Ids of every partition V-IPU has (open mode: everyone sees all)."""
        listing = json.loads(
            self.pod.run("vipu", *self._as_admin(), "list", "partitions", "--json").stdout
        )
        return [p["id"] for p in listing["partitions"]]

    def agents(self) -> list[dict[str, Any]]:
        """The pod's agents, read once per pod (``vipu-admin`` is a Python start: ~0.3 s of CPU)."""
        if self._agents is None or self._agents[0] is not self.pod:
            pod = self.pod
            listing = json.loads(
                pod.run("vipu-admin", *self._as_admin(), "list", "agents", "--json").stdout
            )
            self._agents = (pod, listing["agents"])
        return self._agents[1]

    def agent_configurations(self) -> dict[tuple[str, int], list[str]]:
        """(agent, device id) -> the partitions every agent says hold that IPU."""
        held: dict[tuple[str, int], list[str]] = {}
        key = (self.pod.data_dir / "agent.key").read_text().strip()  # vpod up's agents' key
        agent_key = (("vipu-agent-key", key),)
        for agent in self.agents():
            target = f"{agent['host']}:{agent['port']}"
            with grpc.insecure_channel(target) as channel:
                reply = apb_grpc.AgentServiceStub(channel).ListConfigurations(
                    apb.ListConfigurationsRequest(), timeout=30, metadata=agent_key
                )
            for configured in reply.partitions:
                for ipu in configured.config.ipus:
                    held.setdefault((agent["id"], ipu.device_id), []).append(
                        configured.config.partition_id
                    )
        return held

    def restart_pod(self) -> None:
        self.pod.stop()
        self.pod = start_pod(self.pod.data_dir, *self.pod_args)

    # -- the checks after every scenario

    def check_settled(self, timeout: float = 90) -> None:
        beside = set(self.running_beside)
        ours = {self.cluster.settings.partition_id(job) for job in beside}

        def queued() -> list[str]:
            return [line for line in self.queue() if line.split()[0] not in beside]

        wait_until(lambda: not queued(), timeout, "the queue to drain")
        states = self.states()
        lost = {
            j: states.get(j)
            for j in self.submitted
            if j not in beside and states.get(j) not in FINAL_STATES
        }
        assert not lost, f"jobs not in a final state: {lost}"
        prefix = self.cluster.settings.partition_prefix
        wait_until(
            lambda: not [p for p in self.partitions() if p.startswith(prefix) and p not in ours],
            timeout,
            "every slurm_* partition to be removed",
        )
        leftovers = {
            ipu: holders
            for ipu, holders in self.agent_configurations().items()
            if any(h.startswith(prefix) and h not in ours for h in holders)
        }
        assert not leftovers, f"agents still hold job partitions: {leftovers}"


class AgentSampler:
    """Reads the agents and the queue in a loop while a scenario runs."""

    def __init__(self, slurm: SlurmPod, period_s: float = 0.5) -> None:
        self.slurm = slurm
        self.period_s = period_s
        self.samples = 0
        self.problems: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> AgentSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        assert not self.problems, "; ".join(self.problems[:5])

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                held = self.slurm.agent_configurations()
            except (grpc.RpcError, AssertionError):
                # The pod may be stopped on purpose; the next sample reads it again.
                self._stop.wait(self.period_s)
                continue
            except Exception as exc:
                self.problems.append(f"sampler failed: {exc!r}")
                return
            self.samples += 1
            for ipu, holders in held.items():
                if len(holders) > 1:
                    self.problems.append(f"IPU {ipu} held by {holders} at once")
            self._stop.wait(self.period_s)


def _pod_on_free_ports(
    tmp_path_factory: pytest.TempPathFactory, *, secure: bool, shape: str
) -> tuple[Pod, list[str]]:
    """``vpod up`` on ports chosen for it (Slurm's configuration names them, and a restart
    keeps them), and its arguments. A port is free when chosen but bound only as the
    controller starts: where another process took one meanwhile, choose again."""

    def start() -> tuple[Pod, list[str]]:
        pod_args = [
            # open: the admin's calls (vipu-admin list agents) use the pod's plain config
            "--secure" if secure else "--open",
            "--no-cloud",
            "--port",
            str(free_port()),
            "--admin-port",
            str(free_port()),
            "--http-port",
            str(free_port()),
            "--pod",
            shape,
        ]
        return start_pod(tmp_path_factory.mktemp("pod"), *pod_args), pod_args

    for _ in range(2):
        try:
            return start()
        except AssertionError as exc:
            if "address already in use" not in str(exc):
                raise
    return start()


def slurm_pod(
    tmp_path_factory: pytest.TempPathFactory,
    settings: dict[str, float],
    *,
    shape: str = "pod64",
    ipus: int = ALLOCATION_IPUS,
    accounting: bool = False,
    secure: bool = False,
) -> Iterator[SlurmPod]:
    """``secure``: the pod authenticates every call and the integration is its user ``slurm``
    (as ``vpod slurm up``), so every job gets a partition key."""
    reason = missing_requirements() or (missing_accounting() if accounting else None)
    if reason:
        pytest.skip(f"cannot run Slurm here: {reason}")
    pod, pod_args = _pod_on_free_ports(tmp_path_factory, secure=secure, shape=shape)
    cluster: LocalSlurm | None = None
    shared: SlurmPod | None = None
    try:
        admin_config = pod.data_dir / "admin.vipu-cli.hcl" if secure else None
        vipu_config = pod.config
        if admin_config is not None:
            made = pod.run(
                "vipu-admin",
                "--config",
                str(admin_config),
                "create",
                "user",
                "slurm",
                "--allocations",
                "default",
                "--output",
                str(pod.data_dir),
                "--user-api-port",
                str(pod.user_port),
            )
            assert made.returncode == 0, made.stderr
            vipu_config = pod.data_dir / "slurm.vipu-cli.hcl"
        slurm_settings = SlurmSettings(
            vipu_config=str(vipu_config),
            default_allocation="default",
            ipuof_api_host="127.0.0.1",
            ipuof_api_port=pod.user_port,
            **settings,  # type: ignore[arg-type]
        )
        cluster = LocalSlurm(
            tmp_path_factory.mktemp("slurm"),
            slurm_settings,
            ipus,
            accounting=accounting,
            sched_interval_s=TEST_SCHED_INTERVAL_S,
        )
        cluster.start()
        shared = SlurmPod(pod, cluster, pod_args, admin_config=admin_config)
        yield shared
    finally:
        if cluster is not None:
            cluster.stop()
        # restart_pod replaces the pod: stop the one running now.
        (shared.pod if shared is not None else pod).stop()


TEST_SETTINGS = {
    "retry_initial_s": 2.0,
    "retry_max_s": 8.0,
    "reconcile_interval_s": 3.0,
    "create_timeout_s": 10.0,
}
"""Short delays so the scenarios finish in seconds (production defaults are longer)."""
TEST_SCHED_INTERVAL_S = 1
"""Slurm's smallest scheduling pass: jobs wait ~0.5 s for one on average, not ~1 s."""
