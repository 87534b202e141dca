"""What vpod's own processes cost to start: wall and CPU time from exec to useful, per command.

Every ``vipu`` call, every agent, ``vpod up`` and the test suite (hundreds of
servers and CLI calls) pay a process's start-up, most of it Python importing
modules. Each case runs ``--runs`` times, the cases taking turns round after
round so the noise of a shared machine falls on all of them alike; the table
gives the median wall time and the median CPU time (user + system) of the
child, and each case's excess over the floor measured in the same run:

* ``python -c pass`` and ``python -c "import grpc"``: the interpreter alone,
  and the one heavy package every vpod process needs (the floor);
* ``vipu --help``, ``vipu-agent --help``, ``vpod --help``: a command line
  parsed and its help printed (the imports of a CLI call);
* ``vipu-admin list agents``: one real admin call against a running server;
* ``vpod flavors``: one real cloud call (``GET /flavors``) against a running
  ``vpod up``, which it starts only when this case runs;
* ``vpod up: its imports``: what ``vpod up`` imports before it starts anything
  (``import vpod.launch.up``);
* ``vipu-server --init``: on a store already initialised (``vpod up`` runs it to
  switch modes, the tests before their servers);
* ``vipu-server --init (new)``: on a new, empty data directory each time
  (what ``vpod up`` runs on a new data directory, and every test's first start);
* ``vipu-server --no-cloud`` and ``vipu-server`` (with the cloud layer, the
  default): from exec to its ``vipu-server ready`` line, on a SQLite store
  already initialised (``--init``) and so at the schema head; the CPU is read
  from ``/proc`` at that line, then the server is stopped with SIGINT.

Both sources are compiled to bytecode first (``compileall``, as
``scripts/bootstrap`` does). With ``--baseline REV`` every vpod case also runs
on vpod's source as it was at ``REV`` (exported from git, first on
``PYTHONPATH``, same interpreter and packages), taking turns with the current
source, and the table compares them.

    .venv/bin/python benchmarks/startup.py [--runs 10] [--baseline REV]
        [--only CASE[,CASE...]] [--json PATH]
"""

from __future__ import annotations

import argparse
import functools
import itertools
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path

from bench_processes import cpu_seconds, spawn, stop

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
PYTHON = sys.executable
FLOOR = ("python -c pass", "python -c 'import grpc'")
_SERVER_ARGS = ("--port", "0", "--admin-port", "0", "--http-port", "0", "--log-level", "warning")

Env = dict[str, str]
Run = Callable[[Env], "Sample"]


@dataclass
class Sample:
    wall_s: float
    cpu_s: float


@dataclass
class Case:
    name: str
    variant: str
    """``current``, ``baseline`` (vpod at ``--baseline``) or ``floor`` (no vpod at all)."""
    run: Callable[[], Sample]
    samples: list[Sample] = field(default_factory=list)


@dataclass
class Result:
    case: str
    variant: str
    runs: int
    wall_ms: float
    cpu_ms: float
    cpu_over_floor_ms: float
    """Median CPU less that of ``python -c 'import grpc'`` in the same run: what vpod adds."""
    cpu_vs_baseline: float | None
    """Median CPU of the baseline over this one's (2.0: half the CPU); None without one."""


def run_command(argv: list[str], env: Env) -> Sample:
    """Run ``argv`` to its end; its wall time and its own CPU time (from ``wait4``)."""
    started = time.perf_counter()
    proc = subprocess.Popen(
        argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, text=True
    )
    assert proc.stderr is not None
    errors = proc.stderr.read()
    _, status, rusage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    proc.stderr.close()
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({proc.returncode}): {errors.strip()}")
    return Sample(wall, rusage.ru_utime + rusage.ru_stime)


def start_server(
    data_dir: Path, env: Env, *extra: str
) -> tuple[subprocess.Popen[str], str, Sample]:
    """Start ``vipu-server`` on ``data_dir``; the process, its ready line, and its cost to it."""
    argv = [str(BIN / "vipu-server"), "--data-dir", str(data_dir), *_SERVER_ARGS, *extra]
    log = (data_dir / "server.log").open("a")
    started = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=log, env=env, text=True)
    log.close()
    assert proc.stdout is not None
    line = proc.stdout.readline()
    wall = time.perf_counter() - started
    if "vipu-server ready" not in line:
        proc.kill()
        proc.wait()
        raise SystemExit(f"vipu-server did not start: {(data_dir / 'server.log').read_text()}")
    return proc, line, Sample(wall, cpu_seconds(proc.pid))


def stop_server(proc: subprocess.Popen[str]) -> None:
    stop(proc, sig=signal.SIGINT, timeout=30)


def server_run(data_dir: Path, *extra: str) -> Run:
    def run(env: Env) -> Sample:
        proc, _, sample = start_server(data_dir, env, *extra)
        stop_server(proc)
        return sample

    return run


@contextmanager
def admin_target(data_dir: Path) -> Iterator[Env]:
    """A running server for ``vipu-admin`` to call; the environment that points it there."""
    init_store(data_dir)
    proc, line, _ = start_server(data_dir, dict(os.environ), "--no-cloud")
    try:
        admin = re.search(r"admin API [^:]+:(\d+)", line)
        assert admin is not None, line
        yield {"VIPU_CLI_API_HOST": "127.0.0.1", "VIPU_CLI_ADMIN_API_PORT": admin[1]}
    finally:
        stop_server(proc)


@contextmanager
def cloud_target(data_dir: Path, wanted: bool) -> Iterator[Env]:
    """A running ``vpod up`` for ``vpod`` cloud calls (when ``wanted``); the environment that
    points them there."""
    if not wanted:
        yield {}
        return
    proc, _ = spawn([str(BIN / "vpod"), "up", "--data-dir", str(data_dir)], "vpod is up", 180)
    try:
        yield {"VPOD_CONFIG": str(data_dir / "vpod-cli.toml")}
    finally:
        stop(proc, sig=signal.SIGINT, timeout=60)


def init_store(data_dir: Path) -> None:
    data_dir.mkdir(parents=True, exist_ok=True)
    argv = [str(BIN / "vipu-server"), "--data-dir", str(data_dir), "--init"]
    run_command(argv, dict(os.environ))


def export_source(rev: str, into: Path) -> Path:
    """vpod's ``src`` as it was at ``rev``, written under ``into``; the directory to import from."""
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", "--format=tar", rev, "src/vpod"],
        capture_output=True,
        check=True,
    ).stdout
    tar_path = into / "src.tar"
    tar_path.write_bytes(archive)
    with tarfile.open(tar_path) as tar:
        tar.extractall(into, filter="data")
    compile_bytecode(into / "src")
    return into / "src"


def compile_bytecode(src: Path) -> None:
    """Write the ``.pyc`` files of ``src`` as ``scripts/bootstrap`` does: with
    ``PYTHONDONTWRITEBYTECODE`` set (as on the shared machines) nothing else writes them, and
    a tree without them compiles every module at every start."""
    subprocess.run([PYTHON, "-m", "compileall", "-q", str(src)], check=True)


def vpod_cases(work: Path, admin_env: Env, cloud_env: Env) -> list[tuple[str, Run]]:
    """Each vpod case: its name and how to run it once in a given environment."""
    stores = {name: work / name for name in ("server", "server-cloud")}
    for path in stores.values():
        init_store(path)

    def command(*argv: str, extra: Env | None = None) -> Run:
        return lambda env: run_command([str(BIN / argv[0]), *argv[1:]], env | (extra or {}))

    new_stores = itertools.count()

    def init_new_store(env: Env) -> Sample:
        data_dir = work / f"new-store-{next(new_stores)}"
        data_dir.mkdir()
        return run_command([str(BIN / "vipu-server"), "--data-dir", str(data_dir), "--init"], env)

    return [
        ("vipu --help", command("vipu", "--help")),
        ("vipu-admin list agents", command("vipu-admin", "list", "agents", extra=admin_env)),
        ("vipu-agent --help", command("vipu-agent", "--help")),
        ("vpod --help", command("vpod", "--help")),
        ("vpod flavors", command("vpod", "flavors", extra=cloud_env)),
        (
            "vpod up: its imports",
            lambda env: run_command([PYTHON, "-c", "import vpod.launch.up"], env),
        ),
        (
            "vipu-server --init",
            command("vipu-server", "--data-dir", str(stores["server"]), "--init"),
        ),
        ("vipu-server --init (new)", init_new_store),
        ("vipu-server --no-cloud", server_run(stores["server"], "--no-cloud")),
        ("vipu-server (cloud)", server_run(stores["server-cloud"])),
    ]


def source_variants(work: Path, baseline: str | None) -> dict[str, Env]:
    """The environment of each variant of vpod's source, the baseline first: ``current`` (this
    checkout, compiled to bytecode) and, given ``baseline``, that commit's source exported
    under ``work`` and first on ``PYTHONPATH``."""
    compile_bytecode(REPO / "src")
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    variants = {}
    if baseline is not None:
        (work / "baseline").mkdir()
        variants["baseline"] = env | {"PYTHONPATH": str(export_source(baseline, work / "baseline"))}
    variants["current"] = env
    return variants


def build_cases(
    work: Path, admin_env: Env, cloud_env: Env, variants: dict[str, Env], wanted: set[str]
) -> list[Case]:
    own = {"HOME": str(work)}  # no vipu-cli.hcl or vpod-cli.toml of the user's
    env = variants["current"] | own
    cases = [
        Case(FLOOR[0], "floor", lambda: run_command([PYTHON, "-c", "pass"], env)),
        Case(FLOOR[1], "floor", lambda: run_command([PYTHON, "-c", "import grpc"], env)),
    ]
    for name, run in vpod_cases(work, admin_env, cloud_env):
        if wanted and name not in wanted:
            continue
        for variant, variant_env in variants.items():
            cases.append(Case(name, variant, functools.partial(run, variant_env | own)))
    return cases


def summarise(cases: list[Case]) -> list[Result]:
    def median_cpu(case: Case) -> float:
        return statistics.median(s.cpu_s for s in case.samples)

    floor_cpu = median_cpu(next(c for c in cases if c.name == FLOOR[1]))
    baselines = {c.name: median_cpu(c) for c in cases if c.variant == "baseline"}
    results = []
    for case in cases:
        cpu = median_cpu(case)
        baseline = baselines.get(case.name) if case.variant == "current" else None
        results.append(
            Result(
                case=case.name,
                variant=case.variant,
                runs=len(case.samples),
                wall_ms=round(statistics.median(s.wall_s for s in case.samples) * 1000, 1),
                cpu_ms=round(cpu * 1000, 1),
                cpu_over_floor_ms=round((cpu - floor_cpu) * 1000, 1),
                cpu_vs_baseline=None if baseline is None else round(baseline / cpu, 2),
            )
        )
    return results


def print_table(results: list[Result]) -> None:
    print(
        f"{'case':<24} {'variant':<8} {'runs':>4} {'wall ms':>8} {'cpu ms':>7}"
        f" {'cpu-floor':>9} {'cpu x':>6}"
    )
    for r in results:
        ratio = "" if r.cpu_vs_baseline is None else f"{r.cpu_vs_baseline:.2f}"
        print(
            f"{r.case:<24} {r.variant:<8} {r.runs:>4} {r.wall_ms:>8.0f} {r.cpu_ms:>7.0f}"
            f" {r.cpu_over_floor_ms:>9.0f} {ratio:>6}"
        )
    print(
        "medians; cpu-floor: less python -c 'import grpc' in the same run; cpu x: the"
        " baseline's CPU over the current's; servers measured to their ready line"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10, help="runs of each case (default 10)")
    parser.add_argument(
        "--baseline", default=None, metavar="REV", help="also run vpod as it was at this commit"
    )
    parser.add_argument(
        "--only", default="", help="comma-separated case names (the floor always runs)"
    )
    parser.add_argument("--json", type=Path, default=None, help="write the results here")
    args = parser.parse_args()
    wanted = {name.strip() for name in args.only.split(",") if name.strip()}
    with tempfile.TemporaryDirectory(prefix="vpod-startup-") as tmp:
        work = Path(tmp)
        variants = source_variants(work, args.baseline)
        with (
            admin_target(work / "admin") as admin_env,
            cloud_target(work / "up", not wanted or "vpod flavors" in wanted) as cloud_env,
        ):
            cases = build_cases(work, admin_env, cloud_env, variants, wanted)
            unknown = wanted - {c.name for c in cases}
            if unknown:
                parser.error(f"--only: no case named {', '.join(sorted(unknown))}")
            for case in cases:  # warm the page cache and write the bytecode caches once
                case.run()
            for round_ in range(args.runs):
                for case in cases:
                    case.samples.append(case.run())
                print(f"round {round_ + 1}/{args.runs} done", file=sys.stderr, flush=True)
    results = summarise(cases)
    print_table(results)
    if args.json is not None:
        report = {
            "runs": args.runs,
            "baseline": args.baseline,
            "python": sys.version.split()[0],
            "cpus": os.cpu_count(),
            "load_average": os.getloadavg(),
            "results": [asdict(r) for r in results],
        }
        args.json.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
