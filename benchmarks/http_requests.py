"""What one HTTP request costs the controller: its CPU per request on small routes.

Every console page, every `vpod` cloud call, every GPU host's samples and every
REST call pays the controller's HTTP stack (uvicorn, the middlewares, FastAPI's
dependencies) before the route's own work; on small routes that stack is
most of it. A controller (with the cloud) is started on a fresh SQLite store,
then each case sends ``--requests`` requests over one keep-alive connection and
reads the controller's CPU time from ``/proc`` before and after. With
``--baseline REV`` a second controller runs vpod's source as it was at ``REV``
(exported from git, first on ``PYTHONPATH``) and the cases take turns between
the two, round after round, so the noise of a shared machine falls on both:

* ``GET /healthz``: liveness, no credentials;
* ``GET /api/v1/version``: a V-IPU REST route with no credentials;
* ``GET /api/cloud/v1/flavors`` without a token: a cloud route refusing (401).

    .venv/bin/python benchmarks/http_requests.py [--requests 400] [--rounds 5]
        [--baseline REV] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from dataclasses import asdict, dataclass
from pathlib import Path

import httpx
from bench_processes import cpu_seconds
from startup import init_store, source_variants, start_server, stop_server

CASES = ("/healthz", "/api/v1/version", "/api/cloud/v1/flavors")


@dataclass
class Result:
    path: str
    variant: str
    status: int
    rounds: int
    cpu_ms_per_request: float
    """Median over the rounds of the controller's CPU per request."""
    wall_ms_per_request: float
    cpu_vs_baseline: float | None
    """The baseline's CPU per request over this one's (2.0: half); None without one."""


def start_controller(data_dir: Path, env: dict[str, str]) -> tuple[subprocess.Popen[str], str]:
    """A controller with the cloud on a fresh store in ``data_dir``; it and its HTTP base URL."""
    init_store(data_dir)
    proc, line, _ = start_server(data_dir, env)
    port = re.search(r"HTTP \S*?:(\d+)", line)
    if port is None:
        stop_server(proc)
        raise SystemExit(f"no HTTP port in the ready line: {line.strip()}")
    return proc, f"http://127.0.0.1:{port[1]}"


def measure(pid: int, client: httpx.Client, path: str, requests: int) -> tuple[int, float, float]:
    """(status, CPU ms per request, wall ms per request) of ``requests`` GETs of ``path``."""
    status = client.get(path).status_code  # the connection open, the route warm
    cpu, began = cpu_seconds(pid), time.perf_counter()
    for _ in range(requests):
        client.get(path)
    wall = time.perf_counter() - began
    return status, (cpu_seconds(pid) - cpu) / requests * 1000, wall / requests * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=400, help="per case and round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--baseline", default=None, metavar="REV")
    parser.add_argument("--json", type=Path, default=None, help="write the results here")
    args = parser.parse_args()
    samples: dict[tuple[str, str], list[tuple[int, float, float]]] = {}
    with tempfile.TemporaryDirectory(prefix="vpod-http-") as tmp, ExitStack() as stack:
        work = Path(tmp)
        servers = {}
        for variant, variant_env in source_variants(work, args.baseline).items():
            proc, url = start_controller(work / variant, variant_env)
            stack.callback(stop_server, proc)
            servers[variant] = (proc.pid, stack.enter_context(httpx.Client(base_url=url)))
        for round_ in range(args.rounds):
            for path in CASES:
                for variant, (pid, client) in servers.items():
                    samples.setdefault((path, variant), []).append(
                        measure(pid, client, path, args.requests)
                    )
            print(f"round {round_ + 1}/{args.rounds} done", file=sys.stderr, flush=True)
    results = []
    for (path, variant), runs in samples.items():
        cpu = statistics.median(r[1] for r in runs)
        base = samples.get((path, "baseline"))
        ratio = (
            round(statistics.median(r[1] for r in base) / cpu, 2)
            if base is not None and variant == "current"
            else None
        )
        results.append(
            Result(
                path=path,
                variant=variant,
                status=runs[0][0],
                rounds=len(runs),
                cpu_ms_per_request=round(cpu, 3),
                wall_ms_per_request=round(statistics.median(r[2] for r in runs), 3),
                cpu_vs_baseline=ratio,
            )
        )
    print(
        f"{'request':<28} {'variant':<8} {'status':>6} {'cpu ms/req':>10}"
        f" {'wall ms/req':>11} {'cpu x':>6}"
    )
    for r in results:
        shown = "" if r.cpu_vs_baseline is None else f"{r.cpu_vs_baseline:.2f}"
        print(
            f"GET {r.path:<24} {r.variant:<8} {r.status:>6} {r.cpu_ms_per_request:>10.2f}"
            f" {r.wall_ms_per_request:>11.2f} {shown:>6}"
        )
    print(
        "medians over the rounds; cpu: the controller's, per request; cpu x: baseline over current"
    )
    if args.json is not None:
        report = {
            "requests": args.requests,
            "rounds": args.rounds,
            "baseline": args.baseline,
            "cpus": os.cpu_count(),
            "load_average": os.getloadavg(),
            "results": [asdict(r) for r in results],
        }
        args.json.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
