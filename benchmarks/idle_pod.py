"""What an idle ``vpod up`` costs: each of its processes' CPU, as a share of one core.

Starts ``vpod up`` (controller with the cloud, the emulated POD64's agent process, the GPU
agent process of the emulated GPU hosts), lets it settle, then reads every process of its
tree from ``/proc`` over ``--seconds`` with nobody calling it: heartbeats, the leader's
rounds, GPU samples, the cloud's rounds. With ``--baseline REV`` the source of that commit
is measured the same way in the same run, the variants taking turns ``--rounds`` times, so
that the machine's drifting speed falls on both.

    .venv/bin/python benchmarks/idle_pod.py [--seconds 60] [--rounds 2] [--baseline REV] \
        [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from bench_processes import cpu_seconds, spawn, stop
from startup import source_variants

BIN = Path(sys.executable).parent
SETTLE_S = 15.0
"""After ``vpod is up``: registrations, first heartbeats and first samples are not idling."""


@dataclass
class Row:
    variant: str
    process: str
    share_of_core: float
    """CPU seconds per second of wall time (1.0: one core busy)."""
    round: int


def _children(pid: int) -> list[int]:
    """Every descendant of ``pid`` (from ``/proc``)."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        parents.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        for child in parents.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _name(pid: int) -> str:
    """The vpod program a process runs (``vipu-server``), or its command's name."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return "?"
    for arg in argv[:2]:
        base = os.path.basename(arg.decode(errors="replace"))
        if base.startswith(("vipu", "vpod")):
            return base
    return os.path.basename(argv[0].decode(errors="replace"))


def measure(env: dict[str, str], work: Path, seconds: float) -> dict[str, float]:
    """One idle ``vpod up``: each process's share of a core over ``seconds``."""
    data_dir = Path(tempfile.mkdtemp(dir=work))
    argv = [str(BIN / "vpod"), "up", "--data-dir", str(data_dir)]
    proc, _ = spawn(argv, "vpod is up", 300, env=env | {"HOME": str(work)})
    try:
        time.sleep(SETTLE_S)
        pids = {pid: _name(pid) for pid in [proc.pid, *_children(proc.pid)]}
        before = {pid: cpu_seconds(pid) for pid in pids}
        began = time.monotonic()
        time.sleep(seconds)
        after = {pid: cpu_seconds(pid) for pid in pids}
        elapsed = time.monotonic() - began
    finally:
        stop(proc, sig=signal.SIGINT, timeout=60)
    shares: dict[str, float] = {}
    for pid, name in pids.items():
        used = after[pid] - before[pid]
        if used == used:  # a process that ended meanwhile reads NaN
            shares[name] = shares.get(name, 0.0) + used / elapsed
    shares["all"] = sum(shares.values())
    return shares


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="idle time measured")
    parser.add_argument("--rounds", type=int, default=2, help="turns of every variant")
    parser.add_argument("--baseline", help="a commit whose source to measure the same way")
    parser.add_argument("--json", type=Path, help="write the rows here")
    args = parser.parse_args()
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="vpod-idle-") as tmp:
        work = Path(tmp)
        variants = source_variants(work, args.baseline)
        for turn in range(args.rounds):
            order = list(variants) if turn % 2 == 0 else list(reversed(variants))
            for variant in order:
                shares = measure(variants[variant], work, args.seconds)
                for process, share in sorted(shares.items()):
                    rows.append(Row(variant, process, share, turn))
                    print(f"round {turn + 1} {variant:9s} {process:16s} {100 * share:6.2f} %")
    _table(rows, list(variants))
    if args.json:
        args.json.write_text(json.dumps([asdict(r) for r in rows], indent=2))


def _table(rows: list[Row], variants: list[str]) -> None:
    processes = sorted({r.process for r in rows}, key=lambda p: (p == "all", p))
    print()
    print(f"{'process':16s} " + " ".join(f"{v + ' % core':>18s}" for v in variants), end="")
    print(f"{'baseline / current':>20s}" if len(variants) == 2 else "")
    for process in processes:
        medians = [
            statistics.median(
                r.share_of_core for r in rows if r.process == process and r.variant == v
            )
            if any(r.process == process and r.variant == v for r in rows)
            else float("nan")
            for v in variants
        ]
        line = f"{process:16s} " + " ".join(f"{100 * m:18.2f}" for m in medians)
        if len(medians) == 2 and medians[1] > 0:
            line += f"{medians[0] / medians[1]:20.2f}"
        print(line)
    print("(medians over the rounds; % of one core while nobody calls the pod)")


if __name__ == "__main__":
    main()
