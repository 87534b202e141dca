"""Trace replay through the real placement engine, beside a topology-free bound and first fit.

For every ITP trace and every pod size at which its jobs queue, and for
both queue policies (fifo, EASY backfill), :func:`vpod.sim.compare` replays
the trace three times in one run: through the engine (``vpod.placement``,
default policy unless ``--order``/``--block`` name another), through the
topology-free *bound* (a job starts whenever enough IPUs are free) and
through naive *first fit*. The table gives, per configuration, the bound's
mean wait, each placer's mean wait over the bound's, the jobs that were
fragmentation-blocked at the head of the queue, and utilisation; then the
geometric means of the ratios per queue policy. The definitions are in
``docs/simulator.md``.

Configurations (``CONFIGURATIONS``): pods of 64 to 512 IPUs at which the
bound's mean fifo wait is at least 100 s (below that hardly anything queues
and every placer scores about 1.0); cluster10 queues only at 32 IPUs, so it
is replayed there.

``--jitter N`` adds N copies of every configuration whose submission times
are moved by up to ten minutes either way (seeded): one placement decision
can swing a single replay by 2-3x, so comparing two policies on the exact
traces alone mostly measures luck. The jittered copies are a robustness
check for such comparisons; the table and the figures the project reports
are the exact traces. ``--multi-domain`` keeps only pods of several
IPU-Link domains (on one domain, policies differ only in block choice).
The policy study in ``docs/placement.md`` is ``--jitter 11 --multi-domain``.

Usage::

    .venv/bin/python benchmarks/trace_replay.py [--json PATH] [--quick]
        [--traces DIR] [--order occupied,drain,index] [--block best|first]
        [--jitter N] [--multi-domain] [--queue fifo|backfill]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import platform
import random
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from vpod import placement
from vpod.domain.sizes import DOMAIN_MAX_IPUS
from vpod.sim import (
    BOUND,
    ENGINE,
    FIRST_FIT,
    BoundPlacer,
    Comparison,
    EnginePlacer,
    FirstFitPlacer,
    Job,
    Policy,
    compare,
    read_trace,
)
from vpod.sim.compare import PlacerFactory

DEFAULT_TRACES = Path(__file__).resolve().parents[2] / "shared" / "data" / "traces"

CONFIGURATIONS: tuple[tuple[str, tuple[int, ...]], ...] = (
    ("itp-cluster01.csv", (64, 128, 192)),
    ("itp-cluster02.csv", (64, 128, 192, 256)),
    ("itp-cluster03.csv", (64, 128, 192, 256, 320, 384, 448, 512)),
    ("itp-cluster05.csv", (64, 128)),
    ("itp-cluster06.csv", (64, 128, 192, 256, 320, 384)),
    ("itp-cluster10.csv", (32,)),
)
"""Trace and pod sizes (IPUs) at which jobs queue: the bound's mean fifo wait is ≥ 100 s."""

QUICK: tuple[tuple[str, tuple[int, ...]], ...] = (
    ("itp-cluster02.csv", (256,)),
    ("itp-cluster06.csv", (256,)),
)

JITTER_S = 600
"""Largest shift of a submission time in a jittered copy, either way."""


def jittered(jobs: Sequence[Job], trace: str, copy: int) -> list[Job]:
    """``jobs`` with each submission moved by a random shift of at most ``JITTER_S``.

    The seed is ``1000 * copy`` plus the cluster number in the trace's name,
    so every copy of every trace is the same from run to run.
    """
    digits = "".join(ch for ch in trace if ch.isdigit())
    rng = random.Random(1000 * copy + int(digits or 0))
    return [
        dataclasses.replace(job, submit=max(0, job.submit + rng.randint(-JITTER_S, JITTER_S)))
        for job in jobs
    ]


def placers_for(policy: placement.Policy) -> dict[str, PlacerFactory]:
    return {
        ENGINE: lambda pod: EnginePlacer(pod, policy),
        BOUND: lambda pod: BoundPlacer(pod.num_ipus),
        FIRST_FIT: FirstFitPlacer,
    }


def row_of(trace: str, copy: int, result: Comparison, wall_s: float) -> dict[str, object]:
    report = result.as_dict()
    report.update(trace=trace, copy=copy, wall_s=round(wall_s, 3))
    return report


def ratio(row: dict[str, object], name: str) -> float | None:
    ratios = row["mean_wait_over_bound"]
    assert isinstance(ratios, dict)
    value = ratios[name]
    return None if value is None else float(value)


def figure(row: dict[str, object], name: str, key: str) -> float:
    summary = row[name]
    assert isinstance(summary, dict)
    return float(summary[key])


def geometric_means(rows: list[dict[str, object]]) -> dict[str, dict[str, object]]:
    """Per queue policy and placer: geometric mean and worst of mean wait ÷ bound, and wins."""
    out: dict[str, dict[str, object]] = {}
    for policy in sorted({str(row["policy"]) for row in rows}):
        chosen = [row for row in rows if row["policy"] == policy]
        summary: dict[str, object] = {"configurations": len(chosen)}
        for name in (ENGINE, FIRST_FIT):
            values = [r for r in (ratio(row, name) for row in chosen) if r is not None and r > 0]
            summary[name] = {
                "geomean": math.exp(sum(map(math.log, values)) / len(values)) if values else None,
                "worst": max(values, default=None),
                "fragmentation_blocked_pct": 100
                * sum(figure(row, name, "fragmentation_blocked") for row in chosen)
                / sum(int(str(row["replayed"])) for row in chosen),
            }
        pairs = [(ratio(row, ENGINE), ratio(row, FIRST_FIT)) for row in chosen]
        summary["engine_better"] = sum(
            1 for e, f in pairs if e is not None and f is not None and e < f
        )
        summary["first_fit_better"] = sum(
            1 for e, f in pairs if e is not None and f is not None and e > f
        )
        out[policy] = summary
    return out


def duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{seconds / 60:.1f} min"
    if seconds < 86400:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} d"


def print_table(rows: list[dict[str, object]]) -> None:
    header = (
        f"{'trace':<10} {'IPUs':>5} {'queue':<8} {'bound wait':>10} {'engine ×':>9}"
        f" {'first-fit ×':>11} {'engine fb':>10} {'ff fb':>8} {'util e/b/ff':>17}"
    )
    print(header)
    print("-" * len(header))
    for row in rows:
        if row["copy"]:
            continue
        jobs = int(str(row["replayed"]))
        engine, first = ratio(row, ENGINE), ratio(row, FIRST_FIT)
        utilisation = "/".join(
            f"{figure(row, name, 'utilization'):.3f}" for name in (ENGINE, BOUND, FIRST_FIT)
        )
        print(
            f"{str(row['trace'])[4:13]:<10} {row['ipus']:>5} {row['policy']!s:<8}"
            f" {duration(figure(row, BOUND, 'mean_wait_s')):>10}"
            f" {'-' if engine is None else f'{engine:.3f}':>9}"
            f" {'-' if first is None else f'{first:.3f}':>11}"
            f" {100 * figure(row, ENGINE, 'fragmentation_blocked') / jobs:>9.2f}%"
            f" {100 * figure(row, FIRST_FIT, 'fragmentation_blocked') / jobs:>7.2f}%"
            f" {utilisation:>17}"
        )


def print_means(title: str, means: dict[str, dict[str, object]]) -> None:
    print(f"\n{title}")
    for policy, summary in means.items():
        parts = []
        for name in (ENGINE, FIRST_FIT):
            stats = summary[name]
            assert isinstance(stats, dict)
            parts.append(
                f"{name} {stats['geomean']:.3f} (worst {stats['worst']:.2f},"
                f" fb {stats['fragmentation_blocked_pct']:.2f} %)"
            )
        print(
            f"  {policy:<8} over {summary['configurations']} runs: {'; '.join(parts)};"
            f" engine better in {summary['engine_better']}, first fit in"
            f" {summary['first_fit_better']}"
        )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", metavar="PATH", help="also write every run as JSON")
    parser.add_argument("--traces", type=Path, default=DEFAULT_TRACES, help="trace directory")
    parser.add_argument("--quick", action="store_true", help="two configurations, for a smoke run")
    parser.add_argument(
        "--order",
        help="engine policy order, comma-separated criteria (default: the engine's default)",
    )
    parser.add_argument("--block", choices=("best", "first"), help="engine block choice")
    parser.add_argument(
        "--jitter", type=int, default=0, metavar="N", help="also replay N jittered copies"
    )
    parser.add_argument(
        "--multi-domain", action="store_true", help="only pods of more than one IPU-Link domain"
    )
    parser.add_argument(
        "--queue", choices=[str(p) for p in Policy], action="append", help="only this queue policy"
    )
    args = parser.parse_args(argv)
    policy = placement.BEST_FIT
    if args.order or args.block:
        order = tuple(args.order.split(",")) if args.order else policy.order
        try:
            policy = placement.Policy(
                "variant",
                order=order,
                block=args.block or policy.block,
                allocation_order=policy.allocation_order,
            )
        except ValueError as exc:
            parser.error(str(exc))
    queues = [Policy(q) for q in args.queue] if args.queue else list(Policy)
    configurations = QUICK if args.quick else CONFIGURATIONS
    rows: list[dict[str, object]] = []
    for trace, sizes in configurations:
        path = args.traces / trace
        if not path.exists():
            print(f"trace {path} not found: pass --traces DIR", file=sys.stderr)
            return 2
        exact = read_trace(path)
        for copy in range(args.jitter + 1):
            jobs = exact if copy == 0 else jittered(exact, trace, copy)
            for ipus in sizes:
                if args.multi_domain and ipus <= DOMAIN_MAX_IPUS:
                    continue
                for queue in queues:
                    started = time.perf_counter()
                    result = compare(jobs, ipus, queue, placers=placers_for(policy))
                    rows.append(row_of(trace, copy, result, time.perf_counter() - started))
    print(f"engine policy: order={policy.order} block={policy.block}\n")
    print_table(rows)
    exact_rows = [row for row in rows if row["copy"] == 0]
    means = {"exact": geometric_means(exact_rows)}
    print_means("Geometric means over the exact traces:", means["exact"])
    if args.jitter:
        means["with_jitter"] = geometric_means(rows)
        print_means(
            f"Geometric means with {args.jitter} jittered copies of each:", means["with_jitter"]
        )
    if args.json:
        document = {
            "benchmark": "trace_replay",
            "python": platform.python_version(),
            "engine_policy": {"order": list(policy.order), "block": policy.block},
            "geometric_means": means,
            "runs": rows,
        }
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(document, handle, indent=2)
        print(f"\nwrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
