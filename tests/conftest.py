"""Fixtures shared by every test suite: databases to run against.

- ``postgres_server``: one private PostgreSQL server per test session (see
  ``tests/pg.py``); tests that use it skip with the reason when no server can
  be started.
- ``postgres_url``: a new, empty PostgreSQL database for one test, as a
  SQLAlchemy URL (``postgresql+psycopg://...``); dropped afterwards.
- ``database_url``: parametrized over an SQLite file and a PostgreSQL
  database, so a test runs once on each; the PostgreSQL case carries the
  ``postgres`` marker (deselect with ``-m "not postgres"``).

``scripts/test`` runs pytest-xdist workers; :class:`ModuleScheduling` hands
each a whole test module at a time, and the Slurm package as one unit because
its modules share one slurmctld. It hands out the longest units first, by what
each test took in earlier runs (``.test-durations.json`` at the repository's
root, written at the end of every run; ``tests/durations-seed.json`` before
there is one), so that a long unit does not start last and keep one worker
busy while the others idle.

With ``VPOD_TEST_CPU=FILE`` each test process appends, for every test, the CPU it
and the processes it reaped spent (setup, call and teardown; a module's shared pod counts
at the teardown that stops it) to FILE as JSON lines: ``tools/test_cpu.py FILE`` sums them
by module (docs/testing.md, "Where the suite's CPU goes, module by module").
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from xdist.remote import Producer
from xdist.scheduler import LoadFileScheduling
from xdist.workermanage import WorkerController

from tests.host_networks import network_dirs, remove_networks
from tests.pg import PostgresServer, PostgresUnavailable

# pytest keeps the test modules it rewrites for its assertion messages only where Python may
# write bytecode. Where PYTHONDONTWRITEBYTECODE is set (the shared test machines), every pytest
# process, and so every xdist worker (each collects the whole suite), parsed and rewrote every
# test module again: 24 s of CPU to collect the suite instead of 11. This process writes them
# from here on; the processes the tests start keep the environment's choice.
sys.dont_write_bytecode = False

SINGLE_GROUP_PACKAGES = ("tests/slurm/",)
"""Packages whose modules share a package-scoped service that must exist once."""


DURATIONS_FILE = Path(
    os.environ.get("VPOD_TEST_DURATIONS", Path(__file__).parent.parent / ".test-durations.json")
)
"""Seconds each test took (setup, call and teardown) when it last ran, by node id."""


SEED_DURATIONS = Path(__file__).parent / "durations-seed.json"
"""What each test took in one whole run on a 2-core machine, kept in the repository: the order
of a fresh clone's first run (CI's), before it has durations of its own."""


def load_durations(path: Path = DURATIONS_FILE) -> dict[str, float]:
    try:
        loaded = json.loads(path.read_text())
    except (OSError, ValueError):
        if path != DURATIONS_FILE or not SEED_DURATIONS.exists():
            return {}
        return load_durations(SEED_DURATIONS)
    return {str(k): float(v) for k, v in loaded.items()} if isinstance(loaded, dict) else {}


def longest_first(units: dict[str, dict[str, bool]], known: dict[str, float]) -> list[str]:
    """Work units by their estimated length, longest first: the sum of their tests' last
    durations, a test never timed counting as the median one. Ties keep their order."""
    typical = statistics.median(known.values()) if known else 0.0

    def length(scope: str) -> float:
        return sum(known.get(nodeid, typical) for nodeid in units[scope])

    return sorted(units, key=length, reverse=True)


class ModuleScheduling(LoadFileScheduling):
    """xdist work units: one test module (its shared pod starts once, its tests keep their
    order), or a whole package from ``SINGLE_GROUP_PACKAGES``; the longest handed out first."""

    _ordered = False

    def _split_scope(self, nodeid: str) -> str:
        package = next((p for p in SINGLE_GROUP_PACKAGES if nodeid.startswith(p)), None)
        return package or super()._split_scope(nodeid)

    def _assign_work_unit(self, node: WorkerController) -> None:
        if not self._ordered:  # the queue is complete before the first unit is handed out
            self._ordered = True
            order = longest_first(self.workqueue, load_durations())
            for scope in order:
                self.workqueue.move_to_end(scope)
        super()._assign_work_unit(node)


def pytest_xdist_make_scheduler(config: pytest.Config, log: Producer) -> ModuleScheduling:
    return ModuleScheduling(config, log)


_timed: dict[str, float] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Sum each test's phases (in the xdist controller, from every worker's reports)."""
    _timed[report.nodeid] = _timed.get(report.nodeid, 0.0) + report.duration


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Keep this run's durations for the next run's order (workers leave it to the controller;
    a failed write costs only the order)."""
    if hasattr(session.config, "workerinput") or not _timed:
        return
    durations = {**load_durations(), **{k: round(v, 3) for k, v in _timed.items()}}
    temporary = DURATIONS_FILE.with_suffix(f".{os.getpid()}.tmp")
    try:
        temporary.write_text(json.dumps(durations, indent=0, sort_keys=True) + "\n")
        temporary.replace(DURATIONS_FILE)
    except OSError:
        temporary.unlink(missing_ok=True)


CPU_LOG = os.environ.get("VPOD_TEST_CPU", "")
"""Where each test's CPU goes when set (JSON lines, appended by every test process)."""


def _cpu_now() -> tuple[float, float]:
    """(this process's CPU, its reaped children's CPU), user and system, in seconds."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time(), children.ru_utime + children.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[None]:
    """Record the test's CPU (``VPOD_TEST_CPU``): the process's own and its reaped children's."""
    if not CPU_LOG:
        yield
        return
    own, children = _cpu_now()
    yield
    own_after, children_after = _cpu_now()
    line = {"test": item.nodeid, "own": own_after - own, "children": children_after - children}
    with open(CPU_LOG, "a", encoding="utf-8") as log:  # one short write: lines never interleave
        log.write(json.dumps(line) + "\n")


@pytest.fixture(scope="module", autouse=True)
def _no_tenant_networks_left(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The tenant networks a module's clouds made on the host go with the module."""
    root = tmp_path_factory.getbasetemp()
    before = network_dirs(root)
    yield
    remove_networks(network_dirs(root) - before)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """A PostgreSQL server for the whole session, stopped at its end."""
    try:
        server = PostgresServer.start()
    except PostgresUnavailable as exc:
        pytest.skip(f"PostgreSQL is not available: {exc}")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def postgres_url(postgres_server: PostgresServer) -> Iterator[str]:
    """A fresh, empty PostgreSQL database for this test."""
    name = postgres_server.create_database()
    yield postgres_server.url(name)
    postgres_server.drop_database(name)


@pytest.fixture
def sqlite_file_url(tmp_path: Path) -> str:
    """A fresh SQLite database file for this test."""
    return f"sqlite:///{tmp_path / 'vpod.db'}"


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def database_url(request: pytest.FixtureRequest) -> str:
    """An empty database of each supported kind: the test runs once per kind."""
    fixture = "sqlite_file_url" if request.param == "sqlite" else "postgres_url"
    url: str = request.getfixturevalue(fixture)
    return url
