"""Applications on their partition: attach latency, and what a ``/metrics`` scrape costs.

On real ``vpod up`` pods (controller + emulated agents on loopback):

- **attach latency** (pod64): from the ``IPUOF_VIPU_API_*`` environment to
  an attached device, in one process: ``find_partition()`` (one
  ``GetPartitionIpuofConfig`` over a fresh gRPC channel) plus ``attach()``
  (one IPUoF connection per IPU), then ``detach()``; for devices of 1, 4
  and 16 IPUs. Beside it, in the same run, the baseline of one
  ``GetVersion`` call over a fresh channel (what any call to the controller
  costs), and the cold start of the ``vpod-workload`` process (exec until
  its "attached" line: interpreter, imports, find, attach).
- **scrape cost** (pod256, pod1024): ``GET /metrics`` back to back (the
  per-IPU series served from the 0.5 s cache) and spaced 0.6 s apart (each
  scrape renders them afresh), with the body size and the series count;
  beside it, ``GET /healthz`` on the same server as the same-run baseline.
  While scraping, one workload keeps 16 IPUs busy.

Prints a table and writes JSON::

    .venv/bin/python benchmarks/ipuof.py [--attaches 200] [--scrapes 50] [--pods pod256,pod1024]
                                         [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import grpc

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the test suite's helpers

from bench_processes import tied

from tests.e2e.conftest import Pod, start_pod
from vpod.client import UserClient
from vpod.ipuof import attach, find_partition, list_devices
from vpod.wire import virmgrpc_pb2 as pb
from vpod.wire import virmgrpc_pb2_grpc as pb_grpc

BIN = Path(sys.executable).parent


@dataclass
class Row:
    what: str
    pod: str
    n: int
    p50_ms: float
    p99_ms: float
    max_ms: float
    note: str = ""


def row(what: str, pod: str, samples: list[float], note: str = "") -> Row:
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
    return Row(
        what=what,
        pod=pod,
        n=len(samples),
        p50_ms=round(statistics.median(samples) * 1000, 2),
        p99_ms=round(p99 * 1000, 2),
        max_ms=round(ordered[-1] * 1000, 2),
        note=note,
    )


def timed(action: Callable[[], object], times: int) -> list[float]:
    samples = []
    for _ in range(times):
        start = time.perf_counter()
        action()
        samples.append(time.perf_counter() - start)
    return samples


def env_of(pod: Pod, partition: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("IPUOF_", "POPDIST_"))}
    env.update(
        IPUOF_VIPU_API_HOST="127.0.0.1",
        IPUOF_VIPU_API_PORT=str(pod.user_port),
        IPUOF_VIPU_API_PARTITION_ID=partition,
        VIPU_CLI_CONFIG=str(pod.config),
    )
    return env


def attach_rows(pod: Pod, attaches: int) -> list[Row]:
    rows = []
    with UserClient.from_config(str(pod.config), env={}) as user:
        user.create_partition("bench-attach", 16)
        env = env_of(pod, "bench-attach")

        def version() -> None:
            with grpc.insecure_channel(f"127.0.0.1:{pod.user_port}") as channel:
                pb_grpc.VersionServiceStub(channel).GetVersion(pb.VersionRequest(), timeout=30)

        rows.append(row("baseline: GetVersion, fresh channel", "pod64", timed(version, attaches)))
        devices = list_devices(find_partition(env))
        for size in (1, 4, 16):
            device = next(d for d in devices if d.num_ipus == size)

            def env_to_attached(device_id: int = device.id) -> None:
                held = attach(find_partition(env), device_id)
                held.detach()

            samples = timed(env_to_attached, attaches)
            rows.append(row(f"env -> attached, {size} IPU device", "pod64", samples))
        cold = []
        for _ in range(max(5, attaches // 20)):
            start = time.perf_counter()
            proc = subprocess.Popen(
                [str(BIN / "vpod-workload"), "--device", "0", "--steps", "1"],
                env=env,
                stdout=subprocess.PIPE,
                text=True,
                preexec_fn=tied(),
            )
            assert proc.stdout is not None
            line = proc.stdout.readline()
            cold.append(time.perf_counter() - start)
            proc.wait(timeout=60)
            assert line.startswith("attached"), line
        rows.append(row("vpod-workload: exec -> attached", "pod64", cold, "cold process"))
        user.remove_partition("bench-attach")
    return rows


def get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=60) as answer:
        body: bytes = answer.read()
    return body


def scrape_rows(pod: Pod, shape: str, scrapes: int) -> list[Row]:
    base = f"http://127.0.0.1:{pod.http_port}"
    with UserClient.from_config(str(pod.config), env={}) as user:
        user.create_partition("bench-busy", 16)
        busy = subprocess.Popen(
            [str(BIN / "vpod-workload"), "--seconds", "3600"],
            env=env_of(pod, "bench-busy"),
            stdout=subprocess.PIPE,
            text=True,
            preexec_fn=tied(),
        )
        assert busy.stdout is not None
        busy.stdout.readline()
        try:
            deadline = time.monotonic() + 60
            while b"vpod_ipu_utilization_ratio" not in get(f"{base}/metrics"):
                assert time.monotonic() < deadline, "no telemetry on /metrics"
                time.sleep(0.5)
            body = get(f"{base}/metrics")
            series = sum(1 for line in body.splitlines() if line.startswith(b"vpod_ipu_"))
            health = timed(lambda: get(f"{base}/healthz"), scrapes)
            cached = timed(lambda: get(f"{base}/metrics"), scrapes)
            fresh = []
            for _ in range(scrapes):
                time.sleep(0.6)
                fresh += timed(lambda: get(f"{base}/metrics"), 1)
        finally:
            busy.terminate()
            busy.wait(timeout=30)
            user.remove_partition("bench-busy", force=True)
    note = f"{len(body) // 1024} KiB, {series} per-IPU series"
    return [
        row("baseline: GET /healthz", shape, health),
        row("GET /metrics, back to back (cached)", shape, cached, note),
        row("GET /metrics, 0.6 s apart (fresh)", shape, fresh, note),
    ]


def print_table(rows: list[Row]) -> None:
    headers = ("measurement", "pod", "n", "p50 ms", "p99 ms", "max ms", "note")
    cells = [
        (r.what, r.pod, str(r.n), f"{r.p50_ms:.1f}", f"{r.p99_ms:.1f}", f"{r.max_ms:.1f}", r.note)
        for r in rows
    ]
    widths = [max(len(c[i]) for c in [headers, *cells]) for i in range(len(headers))]
    for line in [headers, *cells]:
        print("  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--attaches", type=int, default=200)
    parser.add_argument("--scrapes", type=int, default=50)
    parser.add_argument("--pods", default="pod256,pod1024")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    rows: list[Row] = []
    with tempfile.TemporaryDirectory() as scratch:
        pod = start_pod(Path(scratch) / "pod64", "--no-cloud")
        try:
            rows += attach_rows(pod, args.attaches)
        finally:
            pod.stop()
        for shape in [s for s in args.pods.split(",") if s]:
            pod = start_pod(Path(scratch) / shape, "--no-cloud", "--pod", shape)
            try:
                rows += scrape_rows(pod, shape, args.scrapes)
            finally:
                pod.stop()
    print_table(rows)
    if args.json:
        args.json.write_text(json.dumps([asdict(r) for r in rows], indent=2) + "\n")


if __name__ == "__main__":
    main()
