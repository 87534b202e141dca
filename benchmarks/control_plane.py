"""Control-plane throughput: create + remove partitions through the real gRPC API.

Starts a real ``vipu-server`` (SQLite in a temporary directory) and a real
``vipu-agent`` process hosting every emulated machine of the pod, builds the
cluster and one allocation over the admin API, then runs closed-loop workers:
each creates a partition of a random size, then removes it, as fast as it
can. Sizes are drawn from 1, 2, 4, 8 and 16 IPUs, capped so that every
worker's partition fits at once (pod IPUs / concurrency), so refusals measure
nothing but bugs. With more workers than the pod has IPUs (256 on a POD64)
not all fit: a create refused because no placement fits (RESOURCE_EXHAUSTED,
the documented answer of a full pod) is counted under ``full`` and tried
again after 20 ms, as a well-behaved client would; every other failure
(a refused stream above all) is an error. Reports operations (create + remove pairs) per second and
the create latency percentiles, per pod and concurrency, as a table and JSON.

With ``--same-sizes`` every pod draws its sizes as the smallest pod of the
run does: by default pod1024 at concurrency 64 creates partitions of 1 to 16
IPUs (1.8 machines, so 1.8 agent calls per create and per remove, on
average) where pod64 creates 1-IPU partitions, so the default compares more
work per pair on the larger pod, not only a larger pod. ``--sizes 16`` (or
``1,4``) draws from the sizes given, to measure what a partition's size costs
on one pod.

Each run first applies the same load for ``--warmup`` seconds without
counting it: the controller's first calls open agent channels, fill its
caches and compile its SQL, and a cold start would otherwise land in the
99th percentile of a short run. Only pairs whose create starts inside the
measured window count, over that window.

Throughput on a shared machine moves with whatever else runs on it, so each
row also gives the CPU time per pair of the controller, the agent process and
this benchmark's client over the same window (Linux ``/proc``; blank
elsewhere), and a baseline measured just before it in the same run: pairs of
``GetVersion`` calls (no store, no agents) to the same controller at the same
concurrency, the most this client and gRPC stack can do on this machine at
that moment. ``vs baseline`` is the share of it the partition path reaches.

With ``--repeat N`` the pods take turns N times (each turn a fresh controller
and agents), so that a comparison between pods is made between runs minutes
apart rather than between the start and the end of the benchmark on a
machine whose speed moves; every other turn runs the pods in the opposite
order, so that on a machine whose speed drifts over the run neither pod is
always the one measured on the faster machine. The summary gives each turn's
throughput of every pod relative to the first pod's in the same turn, and
their median. A second line gives the same comparison by the controller's cost: its CPU
time per pair divided by the client's (the client does the same work per pair on every pod,
so its CPU per pair moves only with the machine's speed), the first pod's over the other's.
While the controller's one core bounds the throughput, this predicts the throughput ratio
with the machine's drift between turns cancelled (``cost_ratios`` in the JSON).

    .venv/bin/python benchmarks/control_plane.py [--json PATH] [--seconds 10] [--warmup 1]
    .venv/bin/python benchmarks/control_plane.py --pods pod64,pod1024 --concurrency 64,256 \
        --repeat 3
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import random
import re
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import grpc
from bench_processes import cpu_seconds, spawn, stop

from vpod.domain.topology import shape
from vpod.wire import admin_pb2 as apb
from vpod.wire import admin_pb2_grpc as apb_grpc
from vpod.wire import virmgrpc_pb2 as pb
from vpod.wire import virmgrpc_pb2_grpc as pb_grpc

BIN = Path(sys.executable).parent
SIZES = (1, 2, 4, 8, 16)


@dataclass
class Result:
    pod: str
    concurrency: int
    ops: int
    errors: int
    full: int
    """Creates refused because the pod was full (more workers than IPUs), tried again."""
    ops_per_s: float
    p50_ms: float
    p99_ms: float
    baseline_ops_per_s: float = float("nan")
    """Pairs of GetVersion calls per second, same controller and concurrency, just before."""
    server_cpu_ms: float = float("nan")
    """CPU time of the controller process per pair (all its threads)."""
    agent_cpu_ms: float = float("nan")
    client_cpu_ms: float = float("nan")
    error_causes: dict[str, int] = field(default_factory=dict)
    """Errors by call, status code and the start of the message."""
    mean_size: float = float("nan")
    """Mean IPUs of the partitions created in the measured window."""
    turn: int = 0
    """Which turn of ``--repeat`` measured it (0: the first)."""


def _port(line: str, label: str) -> int:
    return int(line.split(label, 1)[1].split(",", 1)[0].strip().rsplit(":", 1)[1])


def _cause(call: str, exc: grpc.aio.AioRpcError) -> str:
    """The call, status and message, partition ids made alike so that causes add up."""
    details = re.sub(r"bench-\d+-\d+", "bench-*", exc.details() or "")
    return f"{call} {exc.code().name}: {details[:300]}"


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


async def _run_load(
    port: int,
    pod_ipus: int,
    concurrency: int,
    seconds: float,
    seed: int,
    warmup: float = 0.0,
    pids: tuple[int, int] | None = None,
    *,
    baseline: bool = False,
    sizes_of: int | None = None,
    sizes: tuple[int, ...] = (),
) -> Result:
    """Closed-loop load; ``pids`` (controller, agents) adds their CPU time per pair.

    ``baseline``: each pair is two ``GetVersion`` calls instead of a create and a remove.
    ``sizes_of``: draw sizes as for a pod of this many IPUs (default: this pod's);
    ``sizes``: draw from these instead.
    """
    cap = max(1, (sizes_of or pod_ipus) // concurrency)
    sizes = sizes or tuple(s for s in SIZES if s <= cap)
    rnd = random.Random(seed)
    latencies: list[float] = []
    drawn: list[int] = []
    errors = 0
    causes: Counter[str] = Counter()
    full = 0
    overcommitted = concurrency > pod_ipus
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        users = pb_grpc.UserServiceStub(channel)
        versions = pb_grpc.VersionServiceStub(channel)
        measured_from = time.perf_counter() + warmup
        deadline = measured_from + seconds
        counter = 0

        async def worker(w: int) -> None:
            nonlocal counter, errors, full
            while time.perf_counter() < deadline:
                counter += 1
                pid = f"bench-{w}-{counter}"
                size = rnd.choice(sizes)
                start = time.perf_counter()
                counted = start >= measured_from
                if baseline:
                    await versions.GetVersion(pb.VersionRequest())
                    if counted:
                        latencies.append(time.perf_counter() - start)
                    await versions.GetVersion(pb.VersionRequest())
                    continue
                try:
                    await users.CreatePartition(
                        pb.CreatePartitionRequest(
                            requirements=pb.PartitionRequirements(id=pid, size=size)
                        )
                    )
                except grpc.aio.AioRpcError as exc:
                    if overcommitted and exc.code() is grpc.StatusCode.RESOURCE_EXHAUSTED:
                        full += 1 if counted else 0
                        await asyncio.sleep(0.02)
                        continue
                    if counted:
                        errors += 1
                        causes[_cause("create", exc)] += 1
                    continue
                if counted:
                    latencies.append(time.perf_counter() - start)
                    drawn.append(size)
                try:
                    await users.RemovePartition(pb.RemovePartitionRequest(partition_id=pid))
                except grpc.aio.AioRpcError as exc:
                    if counted:
                        errors += 1
                        causes[_cause("remove", exc)] += 1

        def cpu_now() -> tuple[float, float, float]:
            server, agents = pids if pids else (-1, -1)
            return (cpu_seconds(server), cpu_seconds(agents), time.process_time())

        async def sample_at_start() -> tuple[float, float, float]:
            await asyncio.sleep(max(0.0, measured_from - time.perf_counter()))
            return cpu_now()

        started = asyncio.create_task(sample_at_start())
        await asyncio.gather(*(worker(w) for w in range(concurrency)))
        elapsed = time.perf_counter() - measured_from
        used = [b - a for a, b in zip(await started, cpu_now(), strict=True)]
    per_pair = [1e3 * u / len(latencies) if latencies else float("nan") for u in used]
    return Result(
        pod="",
        concurrency=concurrency,
        ops=len(latencies),
        errors=errors,
        full=full,
        ops_per_s=len(latencies) / elapsed,
        p50_ms=_percentile(latencies, 0.50) * 1e3,
        p99_ms=_percentile(latencies, 0.99) * 1e3,
        server_cpu_ms=per_pair[0],
        agent_cpu_ms=per_pair[1],
        client_cpu_ms=per_pair[2],
        error_causes=dict(causes.most_common()),
        mean_size=statistics.fmean(drawn) if drawn else float("nan"),
    )


def _setup(admin_port: int, agent_ids: list[str], domains: int, ipus: int) -> None:
    with grpc.insecure_channel(f"127.0.0.1:{admin_port}") as channel:
        admin = apb_grpc.AdminServiceStub(channel)
        deadline = time.monotonic() + 60
        while len(admin.ListAgents(apb.ListAgentsRequest()).agents) < len(agent_ids):
            if time.monotonic() > deadline:
                raise SystemExit("agents did not register")
            time.sleep(0.1)
        admin.CreateCluster(
            apb.CreateClusterRequest(
                cluster_id="bench", agent_ids=agent_ids, num_ipulinkdomains=domains
            )
        )
        admin.CreateAllocation(
            apb.CreateAllocationRequest(allocation_id="bench", cluster_id="bench", size=ipus)
        )


def bench_pod(
    pod_name: str,
    concurrencies: list[int],
    seconds: float,
    net: int,
    warmup: float = 1.0,
    sizes_of: int | None = None,
    sizes: tuple[int, ...] = (),
) -> list[Result]:
    """Start a controller and the pod's agents, then measure each concurrency in turn
    (``sizes_of``, ``sizes``: see :func:`_run_load`)."""
    pod = shape(pod_name)
    results: list[Result] = []
    with tempfile.TemporaryDirectory() as tmp:
        server, line = spawn(
            [
                str(BIN / "vipu-server"),
                "--data-dir",
                tmp,
                "--port",
                "0",
                "--admin-port",
                "0",
                "--http-port",
                "0",
                "--log-level",
                "warning",
            ],
            "vipu-server ready",
        )
        agents = None
        try:
            user_port, admin_port = _port(line, "user API"), _port(line, "admin API")
            agents, _ = spawn(
                [
                    str(BIN / "vipu-agent"),
                    "--machines",
                    str(pod.num_machines),
                    "--address-base",
                    f"127.{net}.0.1",
                    "--agent-port",
                    "0",
                    "--register",
                    f"127.0.0.1:{admin_port}",
                ],
                "vipu-agent ready",
            )
            ids = [f"ag{i}" for i in range(1, pod.num_machines + 1)]
            _setup(admin_port, ids, len(pod.domains), pod.num_ipus)
            for concurrency in concurrencies:
                reference = asyncio.run(
                    _run_load(
                        user_port, pod.num_ipus, concurrency, seconds / 2, 0, 0.5, baseline=True
                    )
                )
                result = asyncio.run(
                    _run_load(
                        user_port,
                        pod.num_ipus,
                        concurrency,
                        seconds,
                        concurrency,
                        warmup,
                        pids=(server.pid, agents.pid),
                        sizes_of=sizes_of,
                        sizes=sizes,
                    )
                )
                result.pod = pod_name
                result.baseline_ops_per_s = reference.ops_per_s
                results.append(result)
                print(
                    f"{pod_name:7} c={concurrency:<3} {result.ops_per_s:8.1f} ops/s"
                    f"  p50 {result.p50_ms:7.1f} ms  p99 {result.p99_ms:7.1f} ms"
                    f"  (baseline {result.baseline_ops_per_s:.0f}; {result.ops} ops"
                    f" of {result.mean_size:.1f} IPUs on average,"
                    f" {result.errors} errors, {result.full} full;"
                    f" CPU ms/pair: controller {result.server_cpu_ms:.2f},"
                    f" agents {result.agent_cpu_ms:.2f}, client {result.client_cpu_ms:.2f})",
                    flush=True,
                )
                for cause, count in result.error_causes.items():
                    print(f"    {count} x {cause}", flush=True)
        finally:
            if agents is not None:
                stop(agents)
            stop(server)
    return results


def _sizes(text: str) -> tuple[int, ...]:
    try:
        sizes = tuple(int(s) for s in text.split(","))
    except ValueError:
        sizes = ()
    if not sizes or any(s not in SIZES for s in sizes):
        raise argparse.ArgumentTypeError(
            f"use comma-separated partition sizes among {', '.join(map(str, SIZES))}, not {text!r}"
        )
    return sizes


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"use a count of 1 or more, not {value}")
    return value


def _relative_cost(result: Result) -> float:
    """The controller's CPU per pair over the client's. The client does the same work per
    pair on every pod, so its CPU per pair moves only with the machine's speed: the
    quotient is the controller's cost with the machine's drift between turns cancelled
    (NaN where ``/proc`` gave no CPU times)."""
    if not result.client_cpu_ms > 0:
        return float("nan")
    return result.server_cpu_ms / result.client_cpu_ms


def _throughput_ratio(pod: Result, first: Result) -> float:
    return pod.ops_per_s / first.ops_per_s


def _cost_ratio(pod: Result, first: Result) -> float:
    """The first pod's relative cost per pair over this one's: higher is better, as with the
    throughput ratio, which it predicts while the controller's one core is the bound."""
    own = _relative_cost(pod)
    return _relative_cost(first) / own if own > 0 else float("nan")


def _ratios(
    results: list[Result],
    pods: list[str],
    concurrencies: list[int],
    *,
    relative: Callable[[Result, Result], float] = _throughput_ratio,
) -> dict[str, dict[str, list[float]]]:
    """Per pod after the first and per concurrency: ``relative(its result, the first
    pod's)`` (by default its throughput over the first pod's), one value per turn (both
    measured in the same turn)."""
    ratios: dict[str, dict[str, list[float]]] = {}
    turns = sorted({r.turn for r in results})
    by_key = {(r.turn, r.pod, r.concurrency): r for r in results}
    for pod in pods[1:]:
        for concurrency in concurrencies:
            values = [
                relative(by_key[(t, pod, concurrency)], by_key[(t, pods[0], concurrency)])
                for t in turns
                if (t, pod, concurrency) in by_key and (t, pods[0], concurrency) in by_key
            ]
            ratios.setdefault(pod, {})[str(concurrency)] = [v for v in values if not math.isnan(v)]
    return ratios


def _ratio_lines(
    ratios: dict[str, dict[str, list[float]]], reference: str, measure: str = "throughput"
) -> list[str]:
    lines = []
    for pod, levels in ratios.items():
        for concurrency, values in levels.items():
            if not values:
                continue
            each = ", ".join(f"{v:.2f}" for v in values)
            lines.append(
                f"{pod} / {reference} {measure}, concurrency {concurrency}: median"
                f" {statistics.median(values):.2f} (per turn: {each})"
            )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--json", type=Path, help="write the results here")
    parser.add_argument("--seconds", type=float, default=8.0, help="duration of each run")
    parser.add_argument(
        "--warmup", type=float, default=1.0, help="seconds of uncounted load before each run"
    )
    parser.add_argument("--pods", default="pod64,pod256", help="comma-separated pod shapes")
    parser.add_argument("--concurrency", default="1,16,64", help="comma-separated levels")
    parser.add_argument(
        "--repeat",
        type=_positive,
        default=1,
        help="measure every pod this many times, the pods taking turns (default 1)",
    )
    parser.add_argument(
        "--same-sizes",
        action="store_true",
        help="draw every pod's partition sizes as for the smallest pod of the run, so that"
        " pods compare on the same work (by default a larger pod also gets larger partitions"
        " at the same concurrency)",
    )
    parser.add_argument(
        "--sizes",
        type=_sizes,
        default=(),
        help="draw partition sizes from these (e.g. 16, or 1,4): what a partition's size costs,"
        " on one pod; a size must fit the pod at every worker at once",
    )
    args = parser.parse_args()
    if args.sizes and args.same_sizes:
        parser.error("--sizes and --same-sizes both choose the sizes: give one")
    concurrencies = [int(c) for c in args.concurrency.split(",")]
    pods = args.pods.split(",")
    results: list[Result] = []
    for turn in range(args.repeat):
        # Every other turn in the opposite order: a machine that slows (or speeds up) over
        # the run favours neither pod in the medians.
        order = list(enumerate(pods))
        for index, pod_name in order if turn % 2 == 0 else order[::-1]:
            measured = bench_pod(
                pod_name,
                concurrencies,
                args.seconds,
                net=231 + index,
                warmup=args.warmup,
                sizes_of=min(shape(p).num_ipus for p in pods) if args.same_sizes else None,
                sizes=args.sizes,
            )
            for result in measured:
                result.turn = turn
            results.extend(measured)
    print()
    print(
        f"{'turn':>4} {'pod':8}{'concurrency':>12}{'IPUs':>6}{'ops/s':>10}{'p50 ms':>10}"
        f"{'p99 ms':>10}{'errors':>8}"
        f"{'full':>6}"
        f"{'baseline':>10}{'vs baseline':>13}{'ctl CPU ms':>12}{'agent CPU ms':>14}"
        f"{'client CPU ms':>15}"
    )
    for r in results:
        print(
            f"{r.turn + 1:>4} {r.pod:8}{r.concurrency:>12}{r.mean_size:>6.1f}"
            f"{r.ops_per_s:>10.1f}{r.p50_ms:>10.1f}{r.p99_ms:>10.1f}{r.errors:>8}{r.full:>6}{r.baseline_ops_per_s:>10.0f}"
            f"{r.ops_per_s / r.baseline_ops_per_s:>13.2f}"
            f"{r.server_cpu_ms:>12.2f}{r.agent_cpu_ms:>14.2f}"
            f"{r.client_cpu_ms:>15.2f}"
        )
    print(
        "(IPUs: mean partition size; baseline: pairs of GetVersion calls/s to the same"
        " controller just before; CPU ms:"
        " CPU time per create+remove pair of each process, all threads)"
    )
    ratios = _ratios(results, pods, concurrencies)
    for line in _ratio_lines(ratios, pods[0]):
        print(line)
    cost_ratios = _ratios(results, pods, concurrencies, relative=_cost_ratio)
    for line in _ratio_lines(cost_ratios, pods[0], "by controller cost per pair, drift cancelled"):
        print(line)
    if any(values for levels in cost_ratios.values() for values in levels.values()):
        print(
            "(drift cancelled: the first pod's controller CPU per pair over this pod's, each"
            " divided by the client's CPU per pair, which moves only with the machine's speed)"
        )
    target = next((r for r in results if r.pod == "pod64" and r.concurrency == 16), None)
    if target is not None:
        print(
            f"\ntarget (pod64, concurrency 16): >= 500 ops/s and p99 <= 50 ms;"
            f" measured {target.ops_per_s:.0f} ops/s, p99 {target.p99_ms:.1f} ms"
        )
    if args.json:
        document = {
            "results": [asdict(r) for r in results],
            "ratios": ratios,
            "cost_ratios": cost_ratios,
        }
        args.json.write_text(json.dumps(document, indent=2) + "\n")


if __name__ == "__main__":
    main()
