"""Failure-detection and failover times of the controller, measured on real processes.

Two measurements, each over several trials, on real ``vipu-server`` and
``vipu-agent`` processes on loopback and a real PostgreSQL:

- **dead agent**: SIGKILL one agent process (one machine) of a POD16 under
  one controller (SQLite: detection does not depend on the database); time
  until the admin API reports it offline, and until the partition on it
  reports ERROR. The setting is 3 s of silence,
  checked by a heartbeat round every second with a 1 s call deadline.
- **leader failover**: two controllers on one PostgreSQL; stop the one
  holding the ``leader`` lease, by SIGKILL (the lease must expire: 3 s) and
  by SIGTERM (the leader gives the lease up on its way out); time until the
  other controller holds the lease. The stopped one is restarted between
  trials and the lease is left with whoever holds it.

Times are measured by polling every 50 ms, so they carry up to 50 ms of
resolution error. Prints a table and writes JSON::

    .venv/bin/python benchmarks/failover.py [--trials 5] [--json PATH] [--postgres-url URL]
"""

from __future__ import annotations

import argparse
import json
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path

import grpc

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the test suite's helpers

from tests.faults.live import (
    LivePod,
    UserClient,
    agent_states,
    build_pod,
    live_pod,
    locations,
    rpc_code,
    wait_until,
)
from vpod.store import Store
from vpod.wire import admin_pb2 as apb
from vpod.wire import admin_pb2_grpc as apb_grpc
from vpod.wire import virmgrpc_pb2 as pb

POLL_S = 0.05


@dataclass
class Measurement:
    metric: str
    trials: int
    min_s: float
    median_s: float
    max_s: float
    mean_s: float
    samples_s: list[float]


def summarise(metric: str, samples: list[float]) -> Measurement:
    return Measurement(
        metric=metric,
        trials=len(samples),
        min_s=round(min(samples), 3),
        median_s=round(statistics.median(samples), 3),
        max_s=round(max(samples), 3),
        mean_s=round(statistics.fmean(samples), 3),
        samples_s=[round(s, 3) for s in samples],
    )


def time_until(check: Callable[[], bool], within_s: float = 60.0) -> float:
    start = time.monotonic()
    while not check():
        if time.monotonic() - start > within_s:
            raise SystemExit(f"gave up after {within_s:.0f} s")
        time.sleep(POLL_S)
    return time.monotonic() - start


@contextmanager
def postgres(url: str | None) -> Iterator[str]:
    if url:
        yield url
        return
    from tests.pg import PostgresServer  # the test suite's throw-away server

    server = PostgresServer.start()
    try:
        yield server.url(server.create_database())
    finally:
        server.stop()


def _created(user: UserClient, pid: str) -> bool:
    """Create ``pid``; False while it fails (a just-restarted agent may refuse for a moment)."""
    code, _ = rpc_code(lambda: user.create(pid, 4))
    return code is grpc.StatusCode.OK


def _agent_is(admin: apb_grpc.AdminServiceStub, agent_id: str, state: int) -> bool:
    return int(agent_states(admin)[agent_id].state) == state


def _partition_is(user: UserClient, pid: str, state: int) -> bool:
    return int(user.status(pid).ready_state) == state


def dead_agent_trials(workdir: Path, url: str, trials: int) -> list[Measurement]:
    offline: list[float] = []
    error: list[float] = []
    with live_pod(workdir, url, machines=4, agents_per_process=1) as pod:
        admin = pod.controller.admin()
        user = pod.controller.user()
        for n in range(trials):
            pid = f"watched{n}"
            wait_until(partial(_created, user, pid), f"{pid} created")
            (agent_id,) = {a for a, _ in locations(admin, pid)}
            proc = pod.agent_process(agent_id)
            proc.kill()
            killed = time.monotonic()
            time_until(partial(_agent_is, admin, agent_id, apb.AGENT_OFFLINE))
            offline.append(time.monotonic() - killed)
            time_until(partial(_partition_is, user, pid, pb.PS_ERROR))
            error.append(time.monotonic() - killed)
            proc.restart(pod.controller.admin_address)
            wait_until(partial(_agent_is, admin, agent_id, apb.AGENT_ONLINE), "agent back", 60)
            user.remove(pid, force=True)
    return [
        summarise("dead agent -> marked offline", offline),
        summarise("dead agent -> its partition in ERROR", error),
    ]


def _holder(url: str) -> str:
    with Store.open(url) as store:
        lease = store.get_lease("leader")
    return lease.holder if lease is not None else ""


def _holds(url: str, replica_id: str) -> bool:
    return _holder(url) == replica_id


def failover_trials(workdir: Path, url: str, trials: int) -> list[Measurement]:
    results: dict[str, list[float]] = {"SIGKILL": [], "SIGTERM": []}
    pod: LivePod = build_pod(workdir, url, machines=2, agents_per_process=2, controllers=2)
    try:
        for n in range(trials):
            for how in ("SIGKILL", "SIGTERM"):
                wait_until(lambda: bool(_holder(url)), "a leader", 60)
                holder = _holder(url)
                leader = next(c for c in pod.controllers if c.replica_id == holder)
                other = next(c for c in pod.controllers if c is not leader)
                if how == "SIGKILL":
                    leader.kill()
                else:
                    leader.child.signal(signal.SIGTERM)
                stopped = time.monotonic()
                time_until(partial(_holds, url, other.replica_id))
                results[how].append(time.monotonic() - stopped)
                leader.child.proc.wait(timeout=60)
                leader.restart()
                print(f"  trial {n + 1} {how}: {results[how][-1]:.2f} s", file=sys.stderr)
    finally:
        pod.close()
    return [
        summarise("leader SIGKILL -> other holds the lease", results["SIGKILL"]),
        summarise("leader SIGTERM -> other holds the lease", results["SIGTERM"]),
    ]


def table(rows: list[Measurement]) -> str:
    head = f"{'measurement':<42} {'n':>3} {'min s':>7} {'median s':>9} {'max s':>7} {'mean s':>7}"
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(
            f"{r.metric:<42} {r.trials:>3} {r.min_s:>7.2f} {r.median_s:>9.2f}"
            f" {r.max_s:>7.2f} {r.mean_s:>7.2f}"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=5, help="trials per measurement")
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--postgres-url", help="an empty PostgreSQL database to use")
    args = parser.parse_args()
    rows: list[Measurement] = []
    with tempfile.TemporaryDirectory(prefix="vpod-failover-") as tmp:
        print("dead-agent detection (SQLite) ...", file=sys.stderr)
        detect = Path(tmp) / "detect"
        detect.mkdir()
        rows += dead_agent_trials(detect, f"sqlite:///{detect / 'vpod.db'}", args.trials)
        print("leader failover (PostgreSQL) ...", file=sys.stderr)
        with postgres(args.postgres_url) as url:
            rows += failover_trials(Path(tmp) / "failover", url, args.trials)
    print(table(rows))
    data = {
        "settings": {
            "unreachable_after_s": 3.0,
            "heartbeat_interval_s": 1.0,
            "lease_ttl_s": 3.0,
            "poll_resolution_s": POLL_S,
        },
        "results": [asdict(r) for r in rows],
    }
    if args.json:
        args.json.write_text(json.dumps(data, indent=2) + "\n")
    else:
        print(json.dumps(data, indent=2))


if __name__ == "__main__":
    main()
