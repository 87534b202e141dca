"""How many idle connections a controller holds before its health checks slow beyond 1 s.

Starts a real ``vipu-server`` (open mode, no cloud, a file-descriptor limit
of ``--nofile``, 1024 by default, as on many hosts) twice in one run: with
the connection caps (the default, ``--max-connections -1``) and without
(``--max-connections 0``). Against each it opens idle TCP connections to
the HTTP port in steps (connect, send nothing: what a careless or hostile
client does), and after each step times ``GET /healthz`` on a fresh
connection and an admin gRPC call (``GetVersion`` on the admin endpoint).
A probe failing or taking more than 1 s ends the run of that server; the
table gives, for each, the last step at which both answered within 1 s and
the latencies along the way.

    .venv/bin/python benchmarks/connections.py [--nofile 1024] [--step 128]
        [--max 4096] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import re
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import grpc
import httpx
from bench_processes import tied

from vpod.wire import virmgrpc_pb2 as pb
from vpod.wire import virmgrpc_pb2_grpc as pb_grpc

BIN = Path(sys.executable).parent
SLOW_S = 1.0


@dataclass
class Step:
    opened: int
    """Idle connections opened so far."""
    idle: int
    """Of those, the ones the server still holds open (it may have closed some)."""
    healthz_s: float | None
    admin_s: float | None


@dataclass
class Run:
    caps: bool
    held_within_1s: int = 0
    """The most idle connections the server held while /healthz and the admin API both
    answered within 1 s."""
    first_slow_at: int | None = None
    """Idle connections opened when a probe first took over 1 s or failed."""
    steps: list[Step] = field(default_factory=list)


def _start(data_dir: Path, caps: bool, nofile: int) -> tuple[subprocess.Popen[str], int, int]:
    end_with_us = tied()

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))
        end_with_us()

    argv = [
        str(BIN / "vipu-server"),
        "--data-dir", str(data_dir),
        "--port", "0", "--admin-port", "0", "--http-port", "0",
        "--no-cloud", "--log-level", "warning",
        "--max-connections", "-1" if caps else "0",
    ]  # fmt: skip
    proc = subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=(data_dir / "server.log").open("w"),
        text=True,
        preexec_fn=limit,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if "ready" not in line:
        proc.kill()
        raise SystemExit(f"vipu-server did not start: {(data_dir / 'server.log').read_text()}")
    admin = re.search(r"admin API [^:]+:(\d+)", line)
    http = re.search(r"HTTP \S+:(\d+)", line)
    assert admin is not None, line
    assert http is not None, line
    return proc, int(admin[1]), int(http[1])


def _timed(probe: Callable[[], None], tries: int = 3) -> float | None:
    """The median time of ``tries`` probes; None if any failed."""
    times = []
    for _ in range(tries):
        started = time.perf_counter()
        try:
            probe()
        except Exception:
            return None
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def _measure(caps: bool, nofile: int, step: int, most: int) -> Run:
    run = Run(caps=caps)
    with tempfile.TemporaryDirectory() as tmp:
        proc, admin_port, http_port = _start(Path(tmp), caps, nofile)
        idle: list[socket.socket] = []
        opened = 0
        try:
            while True:
                time.sleep(0.2)  # let the server take in the last step's connections
                idle = [s for s in idle if _still_open(s)]

                def healthz() -> None:
                    with httpx.Client(timeout=5.0) as http:
                        http.get(f"http://127.0.0.1:{http_port}/healthz").raise_for_status()

                def admin() -> None:
                    with grpc.insecure_channel(f"127.0.0.1:{admin_port}") as channel:
                        pb_grpc.VersionServiceStub(channel).GetVersion(
                            pb.VersionRequest(), timeout=5.0
                        )

                if not run.steps:
                    _timed(healthz), _timed(admin)  # warm up (imports, first connections)
                result = Step(opened, len(idle), _timed(healthz), _timed(admin))
                run.steps.append(result)
                print(
                    f"caps {'on' if caps else 'off'}: {opened} opened, {result.idle} held, healthz"
                    f" {_seconds(result.healthz_s)}, admin {_seconds(result.admin_s)}",
                    file=sys.stderr,
                    flush=True,
                )
                slow = any(t is None or t > SLOW_S for t in (result.healthz_s, result.admin_s))
                if slow:
                    run.first_slow_at = opened
                    break
                run.held_within_1s = max(run.held_within_1s, result.idle)
                if opened >= most:
                    break
                for _ in range(step):
                    try:
                        idle.append(socket.create_connection(("127.0.0.1", http_port), 2.0))
                    except OSError:
                        break
                    opened += 1
        finally:
            for sock in idle:
                sock.close()
            proc.terminate()
            proc.wait(30)
    return run


def _still_open(sock: socket.socket) -> bool:
    """False once the server closed it (a read would return EOF or fail)."""
    sock.setblocking(False)
    try:
        data = sock.recv(1, socket.MSG_PEEK)
    except BlockingIOError:
        return True
    except OSError:
        sock.close()
        return False
    if data:
        return True
    sock.close()
    return False


def _seconds(value: float | None) -> str:
    return "fail" if value is None else f"{value:.3f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nofile", type=int, default=1024, help="the server's RLIMIT_NOFILE")
    parser.add_argument("--step", type=int, default=256, help="idle connections added per step")
    parser.add_argument("--max", type=int, default=4096, help="stop after this many")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # the client holds them all
    runs = [_measure(caps, args.nofile, args.step, args.max) for caps in (False, True)]
    print(
        f"vipu-server with RLIMIT_NOFILE={args.nofile}; idle HTTP connections opened"
        f" {args.step} at a time; probes (median of 3, each on a fresh connection):"
        " GET /healthz and admin GetVersion"
    )
    titles = ("caps off: held  healthz  admin", "caps on: held  healthz  admin")
    print(f"{'opened':>7} | {titles[0]:>31} | {titles[1]:>30}")
    by_opened = [{s.opened: s for s in run.steps} for run in runs]
    for opened in sorted(set(by_opened[0]) | set(by_opened[1])):
        cells = []
        for steps in by_opened:
            step = steps.get(opened)
            cells.append(
                f"{'':>13}" + " " * 18
                if step is None
                else f"{step.idle:>13}  {_seconds(step.healthz_s):>7}  {_seconds(step.admin_s):>5}"
            )
        print(f"{opened:>7} | {cells[0]:>31} | {cells[1]:>30}")
    for run in runs:
        print(
            f"caps {'on ' if run.caps else 'off'}: most connections held with both probes"
            f" under 1 s: {run.held_within_1s}; first slow or failed probe:"
            f" {'none' if run.first_slow_at is None else f'at {run.first_slow_at} opened'}"
        )
    if args.json is not None:
        args.json.write_text(
            json.dumps({"nofile": args.nofile, "runs": [asdict(r) for r in runs]}, indent=2)
        )


if __name__ == "__main__":
    main()
