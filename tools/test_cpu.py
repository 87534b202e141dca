#!/usr/bin/env python3
"""Sum the CPU a test run spent by test module: the file ``VPOD_TEST_CPU`` named.

    VPOD_TEST_CPU=/tmp/cpu.jsonl scripts/test
    python3 tools/test_cpu.py /tmp/cpu.jsonl [--top 40] [--json OUT]

Each line is one test: the CPU of the pytest process that ran it (``own``) and of the
processes it reaped meanwhile (``children``: controllers, agents, command lines, with
what they reaped in turn). A process nobody waits for is not counted, so the sum is a
floor; process accounting (``accton``) gives the whole (docs/testing.md).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any


def by_module(lines: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    modules: dict[str, dict[str, float]] = defaultdict(
        lambda: {"own": 0.0, "children": 0.0, "tests": 0.0}
    )
    for line in lines:
        module = str(line["test"]).split("::", 1)[0]
        totals = modules[module]
        totals["own"] += float(line["own"])
        totals["children"] += float(line["children"])
        totals["tests"] += 1
    return dict(modules)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("log", type=Path, help="the JSON lines VPOD_TEST_CPU named")
    parser.add_argument("--top", type=int, default=40, help="how many modules to list (default 40)")
    parser.add_argument("--json", type=Path, help="also write every module's sums here")
    args = parser.parse_args(argv)
    try:
        lines = [json.loads(text) for text in args.log.read_text().splitlines() if text.strip()]
        modules = by_module(lines)
    except (OSError, ValueError, KeyError, TypeError) as error:
        print(
            f"test_cpu: cannot read {args.log}: {error!s}; give the file VPOD_TEST_CPU named",
            file=sys.stderr,
        )
        return 2
    if not modules:
        print(
            f"test_cpu: {args.log} records no test: set VPOD_TEST_CPU for the run",
            file=sys.stderr,
        )
        return 2
    ranked = sorted(modules.items(), key=lambda kv: -(kv[1]["own"] + kv[1]["children"]))
    whole = sum(t["own"] + t["children"] for t in modules.values()) or 1e-9  # all zero
    print(f"{'CPU s':>8} {'share':>6} {'pytest':>8} {'children':>9} {'tests':>6}  module")
    for module, totals in ranked[: args.top]:
        cpu = totals["own"] + totals["children"]
        print(
            f"{cpu:8.1f} {cpu / whole:6.1%} {totals['own']:8.1f} {totals['children']:9.1f}"
            f" {int(totals['tests']):6d}  {module}"
        )
    print(f"{whole:8.1f} {'':6} {'':8} {'':9} {len(lines):6d}  all ({len(modules)} modules)")
    if args.json:
        args.json.write_text(json.dumps(modules, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
