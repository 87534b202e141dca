"""What the Slurm integration costs: job start latency and drain rate, with and without it.

One ``vpod up`` (pod64) and one Slurm configuration; the same one-node Slurm
is started twice in turn, with the integration (job_submit.lua,
PrologSlurmctld, EpilogSlurmctld, TaskProlog, the bridge) and without (the
baseline), alternating ``--rounds`` times so both see the same machine load.

- start latency: one 4-IPU job at a time on an idle cluster, from just before
  ``sbatch`` until the job's script runs (it writes the time; the TaskProlog
  and PrologSlurmctld happen before that), p50 and p99;
- drain rate: ``--drain-jobs`` 4-IPU jobs submitted held, released at once,
  jobs per second until the queue is empty;
- where a job's time goes, from the logs: slurmctld's allocation to its
  "done" (prolog, launch, TaskProlog, the job) per job, and the bridge's own
  ``squeue``, create and remove times;
- the same with a ``--secure`` pod (``integration-secure``), where every job
  also gets a partition key: the bridge's mint (and key file) and revoke
  times per job, and what they add to the start and the drain rate.

Needs root, ``slurm-wlm`` and ``munge``. Usage::

    .venv/bin/python benchmarks/slurm.py [--json PATH] [--jobs 40] [--drain-jobs 100]
"""

from __future__ import annotations

import argparse
import datetime
import json
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bench_processes import start

from vpod.integrations.slurm.local_cluster import LocalSlurm, free_port, missing_requirements
from vpod.integrations.slurm.settings import SlurmSettings

BIN = Path(sys.executable).parent
IPUS = 4


def start_pod(data_dir: Path, *, secure: bool = False) -> tuple[subprocess.Popen[str], int]:
    argv = [
        str(BIN / "vpod"),
        "up",
        "--data-dir",
        str(data_dir),
        "--secure" if secure else "--open",
        "--no-cloud",
        "--port",
        str(free_port()),
        "--admin-port",
        str(free_port()),
        "--http-port",
        str(free_port()),
    ]
    proc = start(argv)
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("vpod is up:"):
            threading.Thread(target=proc.stdout.read, daemon=True).start()
            match = re.search(r"user API [^ ]*:(\d+)", line)
            assert match
            return proc, int(match[1])
    raise SystemExit("vpod up did not start")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def wait_empty(cluster: LocalSlurm, timeout: float = 600) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not cluster.run("squeue", "--noheader", check=False).stdout.strip():
            return
        time.sleep(0.05)
    raise SystemExit("the queue did not drain")


def start_latencies(cluster: LocalSlurm, jobs: int, stamp_dir: Path) -> list[float]:
    latencies = []
    for i in range(jobs):
        stamp = stamp_dir / f"start-{i}"
        submitted = time.time()
        cluster.run(
            "sbatch", f"--gres=ipu:{IPUS}", "--output=/dev/null", "--wrap", f"date +%s.%N > {stamp}"
        )
        deadline = time.monotonic() + 60
        while not stamp.exists() or not stamp.read_text().strip():
            if time.monotonic() > deadline:
                raise SystemExit("a job did not start within 60 s")
            time.sleep(0.005)
        latencies.append(float(stamp.read_text()) - submitted)
        wait_empty(cluster)
    return latencies


def drain_rate(cluster: LocalSlurm, jobs: int) -> float:
    for _ in range(jobs):
        cluster.run(
            "sbatch", "--hold", f"--gres=ipu:{IPUS}", "--output=/dev/null", "--wrap", "true"
        )
    ids = cluster.run("squeue", "--noheader", "--format", "%A").stdout.split()
    started = time.monotonic()
    cluster.run("scontrol", "release", ",".join(ids))
    wait_empty(cluster)
    return jobs / (time.monotonic() - started)


def _ms_stats(values: list[float]) -> dict[str, float]:
    if not values:
        return {}
    return {"p50": statistics.median(values), "p90": percentile(values, 0.9), "n": len(values)}


def job_phases(cluster: LocalSlurm) -> dict[str, dict[str, float]]:
    """From the logs: allocation -> done per job; the bridge's squeue/create/remove times."""
    allocated: dict[str, float] = {}
    done: list[float] = []
    for line in (cluster.logs / "slurmctld.log").read_text(errors="replace").splitlines():
        match = re.match(r"\[([^\]]+)\] (?:sched: Allocate|_job_complete:) JobId=(\d+)", line)
        if not match:
            continue
        when = datetime.datetime.fromisoformat(match[1]).timestamp()
        if "Allocate" in line:
            allocated[match[2]] = when
        elif line.endswith(" done") and match[2] in allocated:
            done.append((when - allocated.pop(match[2])) * 1000)
    phases = {"allocated_to_done_ms": _ms_stats(done)}
    bridge_log = cluster.logs / "bridge.out"
    if bridge_log.exists():
        text = bridge_log.read_text(errors="replace")
        starts = re.findall(r"squeue (\d+) ms, create (\d+) ms, key (\d+) ms", text)
        phases["bridge_squeue_ms"] = _ms_stats([float(q) for q, _, _ in starts])
        phases["bridge_create_ms"] = _ms_stats([float(c) for _, c, _ in starts])
        phases["bridge_key_mint_ms"] = _ms_stats([float(k) for _, _, k in starts])
        removes = re.findall(r"removed(?: with its key)? \((\d+) ms\)", text)
        phases["bridge_remove_ms"] = _ms_stats([float(r) for r in removes])
    return phases


def integration_user(data_dir: Path, user_port: int) -> Path:
    """The secure pod's V-IPU user ``slurm`` (as ``vpod slurm up``): its vipu-cli.hcl."""
    done = subprocess.run(
        [
            str(BIN / "vipu-admin"),
            "--config",
            str(data_dir / "admin.vipu-cli.hcl"),
            "create",
            "user",
            "slurm",
            "--allocations",
            "default",
            "--output",
            str(data_dir),
            "--user-api-port",
            str(user_port),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"vipu-admin create user slurm: {done.stderr.strip()}")
    return data_dir / "slurm.vipu-cli.hcl"


def measure(
    root: Path, settings: SlurmSettings, with_integration: bool, args: Any
) -> dict[str, Any]:
    cluster = LocalSlurm(root, settings, 64, with_integration=with_integration)
    cluster.start()
    try:
        stamps = root / "stamps"
        stamps.mkdir(exist_ok=True)
        latencies = start_latencies(cluster, args.jobs, stamps)
        rate = drain_rate(cluster, args.drain_jobs)
    finally:
        cluster.stop()
    return {"latencies_s": latencies, "drain_jobs_per_s": rate, "phases": job_phases(cluster)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", type=Path, help="write the results here")
    parser.add_argument("--jobs", type=int, default=40, help="jobs for the start latency")
    parser.add_argument("--drain-jobs", type=int, default=100, help="jobs for the drain rate")
    parser.add_argument("--rounds", type=int, default=2, help="alternations of both setups")
    args = parser.parse_args()
    reason = missing_requirements()
    if reason:
        raise SystemExit(f"cannot run Slurm here: {reason}")
    with tempfile.TemporaryDirectory(prefix="vpod-slurm-bench-") as tmp:
        work = Path(tmp)
        pod, user_port = start_pod(work / "pod")
        pods = [pod]
        try:
            secure_pod, secure_port = start_pod(work / "secure-pod", secure=True)
            pods.append(secure_pod)
            settings = SlurmSettings(
                vipu_config=str(work / "pod" / "vipu-cli.hcl"),
                default_allocation="default",
                ipuof_api_host="127.0.0.1",
                ipuof_api_port=user_port,
            )
            secure_settings = SlurmSettings(
                vipu_config=str(integration_user(work / "secure-pod", secure_port)),
                default_allocation="default",
                ipuof_api_host="127.0.0.1",
                ipuof_api_port=secure_port,
            )
            setups = (
                ("baseline", settings, False),
                ("integration", settings, True),
                ("integration-secure", secure_settings, True),
            )
            runs: dict[str, list[dict[str, Any]]] = {name: [] for name, _, _ in setups}
            for round_ in range(args.rounds):
                for name, setup, flag in setups:
                    result = measure(work / f"{name}-{round_}", setup, flag, args)
                    runs[name].append(result)
                    phases = ", ".join(
                        f"{phase} p50 {stats['p50']:.0f} p90 {stats['p90']:.0f}"
                        for phase, stats in result["phases"].items()
                        if stats
                    )
                    print(
                        f"round {round_ + 1} {name}: p50"
                        f" {statistics.median(result['latencies_s']) * 1000:.0f} ms,"
                        f" drain {result['drain_jobs_per_s']:.1f} jobs/s; {phases}",
                        flush=True,
                    )
        finally:
            for proc in pods:  # the open one too when the secure one did not start
                proc.send_signal(signal.SIGINT)
                proc.wait(timeout=60)
    summary = {}
    for name, results in runs.items():
        latencies = [x for r in results for x in r["latencies_s"]]
        summary[name] = {
            "start_p50_ms": statistics.median(latencies) * 1000,
            "start_p99_ms": percentile(latencies, 0.99) * 1000,
            "drain_jobs_per_s": statistics.median(r["drain_jobs_per_s"] for r in results),
            "jobs": len(latencies),
        }
    added = summary["integration"]["start_p50_ms"] - summary["baseline"]["start_p50_ms"]
    cost = 1 - summary["integration"]["drain_jobs_per_s"] / summary["baseline"]["drain_jobs_per_s"]

    def p50s(name: str, phase: str) -> list[float]:
        return [r["phases"][phase]["p50"] for r in runs[name] if r["phases"].get(phase)]

    mint = p50s("integration-secure", "bridge_key_mint_ms")
    removal = p50s("integration-secure", "bridge_remove_ms")
    open_removal = p50s("integration", "bridge_remove_ms")
    key_cost = {
        "mint_p50_ms": statistics.median(mint) if mint else None,
        "remove_with_key_p50_ms": statistics.median(removal) if removal else None,
        "remove_open_p50_ms": statistics.median(open_removal) if open_removal else None,
        "added_start_p50_ms": summary["integration-secure"]["start_p50_ms"]
        - summary["integration"]["start_p50_ms"],
        "drain_cost": 1
        - summary["integration-secure"]["drain_jobs_per_s"]
        / summary["integration"]["drain_jobs_per_s"],
    }
    print(f"{'setup':<20} {'start p50':>10} {'start p99':>10} {'drain/s':>8}")
    for name, row in summary.items():
        print(
            f"{name:<20} {row['start_p50_ms']:>8.0f}ms {row['start_p99_ms']:>8.0f}ms"
            f" {row['drain_jobs_per_s']:>8.1f}"
        )
    print(
        f"per-job keys (secure): minting {key_cost['mint_p50_ms'] or 0:.0f} ms in the bridge"
        f" (p50); the removal that revokes the key {key_cost['remove_with_key_p50_ms'] or 0:.0f}"
        f" ms (open: {key_cost['remove_open_p50_ms'] or 0:.0f} ms); they add"
        f" {key_cost['added_start_p50_ms']:+.0f} ms to the median start and cost"
        f" {key_cost['drain_cost'] * 100:.1f} % of the drain rate against the open integration"
    )
    print(
        f"integration adds {added:+.0f} ms to the median start (target <= 50 ms) and costs"
        f" {cost * 100:.1f} % of the drain rate (target <= 10 %)"
    )
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "summary": summary,
                    "added_start_p50_ms": added,
                    "drain_cost": cost,
                    "per_job_keys": key_cost,
                    "runs": runs,
                },
                indent=2,
            )
        )


if __name__ == "__main__":
    main()
