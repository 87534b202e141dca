"""The suite's own machinery (tests/conftest.py): every run keeps what each test took, and
the next run hands the xdist workers the longest work units first; ``VPOD_TEST_CPU`` records
each test's CPU; the test process keeps the modules pytest rewrote."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import load_durations, longest_first

REPO = Path(__file__).parent.parent
SMALL_MODULES = ("tests/domain/test_naming.py", "tests/domain/test_topology.py")


def test_units_are_ordered_by_their_tests_last_durations() -> None:
    units = {
        "a.py": {"a.py::one": False, "a.py::two": False},
        "b.py": {"b.py::slow": False},
        "c.py": {"c.py::quick": False},
    }
    known = {"a.py::one": 1.0, "a.py::two": 2.0, "b.py::slow": 30.0, "c.py::quick": 0.5}
    assert longest_first(units, known) == ["b.py", "a.py", "c.py"]


def test_a_test_never_timed_counts_as_the_median_one() -> None:
    units = {
        "old.py": {"old.py::t": False},
        "new.py": {f"new.py::t{i}": False for i in range(3)},
    }
    known = {"old.py::t": 2.5, "x::a": 1.0, "x::b": 1.0}  # median 1.0: new.py is about 3 s
    assert longest_first(units, known) == ["new.py", "old.py"]


def test_without_earlier_runs_the_order_stays_as_collected() -> None:
    units = {"z.py": {"z.py::t": False}, "a.py": {"a.py::t": False}}
    assert longest_first(units, {}) == ["z.py", "a.py"]


def test_an_unreadable_durations_file_is_no_knowledge(tmp_path: Path) -> None:
    assert load_durations(tmp_path / "missing.json") == {}
    (tmp_path / "bad.json").write_text("{not json")
    assert load_durations(tmp_path / "bad.json") == {}
    (tmp_path / "list.json").write_text("[1, 2]")
    assert load_durations(tmp_path / "list.json") == {}


def test_a_parallel_run_records_every_test_and_keeps_older_entries(tmp_path: Path) -> None:
    """Two xdist workers: the controller writes the durations its workers reported, merged
    over what the file held."""
    durations = tmp_path / "durations.json"
    durations.write_text(json.dumps({"tests/gone.py::kept": 4.0}))
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2",
         *SMALL_MODULES],
        cwd=REPO, env={**os.environ, "VPOD_TEST_DURATIONS": str(durations)},
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:]
    recorded = load_durations(durations)
    assert recorded["tests/gone.py::kept"] == 4.0
    ran = {nodeid for nodeid in recorded if nodeid.startswith(SMALL_MODULES)}
    passed = int(done.stdout.rsplit(" passed", 1)[0].rsplit(None, 1)[-1])
    assert len(ran) == passed
    assert all(recorded[nodeid] >= 0 for nodeid in ran)


@pytest.fixture(scope="module")
def burnt(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory where one pytest run (this suite's conftest as its plugin, bytecode off as
    on the shared machines, ``VPOD_TEST_CPU`` set) ran a module of two tests that burn CPU:
    one in a child process, one in itself."""
    root = tmp_path_factory.mktemp("burnt")
    (root / "test_burn.py").write_text(
        "import subprocess, sys\n"
        "def test_in_a_child():\n"
        "    subprocess.run([sys.executable, '-c', 'sum(range(5_000_000))'], check=True)\n"
        "def test_in_itself():\n"
        "    sum(range(5_000_000))\n"
    )
    env = {**os.environ, "VPOD_TEST_CPU": str(root / "cpu.jsonl"), "PYTHONDONTWRITEBYTECODE": "1"}
    ran = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "tests.conftest",
         "--rootdir", str(root), str(root / "test_burn.py")],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stdout + ran.stderr
    return root


def test_the_test_process_keeps_the_modules_it_rewrote(burnt: Path) -> None:
    """With PYTHONDONTWRITEBYTECODE set, the rewritten test module is still cached, so the
    next process (every xdist worker) need not parse and rewrite it again."""
    assert list((burnt / "__pycache__").glob("test_burn.*-pytest-*.pyc"))


def test_each_tests_cpu_is_recorded_with_what_its_children_spent(burnt: Path) -> None:
    """``VPOD_TEST_CPU``: a line per test with the CPU of the test process and of the
    processes it reaped; ``tools/test_cpu.py`` sums them by module."""
    log = burnt / "cpu.jsonl"
    lines = {json.loads(text)["test"]: json.loads(text) for text in log.read_text().splitlines()}
    assert set(lines) == {"test_burn.py::test_in_a_child", "test_burn.py::test_in_itself"}
    child, itself = lines["test_burn.py::test_in_a_child"], lines["test_burn.py::test_in_itself"]
    assert child["children"] > itself["children"]
    assert itself["own"] > 0
    summed = subprocess.run(
        [sys.executable, str(REPO / "tools" / "test_cpu.py"), str(log),
         "--json", str(burnt / "m.json")],
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    assert "test_burn.py" in summed.stdout
    assert "all (1 modules)" in summed.stdout
    totals = json.loads((burnt / "m.json").read_text())["test_burn.py"]
    assert totals["tests"] == 2
    assert totals["own"] + totals["children"] == pytest.approx(
        sum(line["own"] + line["children"] for line in lines.values())
    )


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (None, "cannot read"),
        ("{not json\n", "cannot read"),
        ('{"test": "a.py::t"}\n', "cannot read"),
        ('["a", "b"]\n', "cannot read"),
        ("", "records no test"),
    ],
)
def test_the_cpu_summary_says_what_to_fix_for_a_log_it_cannot_use(
    tmp_path: Path, content: str | None, says: str
) -> None:
    log = tmp_path / "cpu.jsonl"
    if content is not None:
        log.write_text(content)
    ran = subprocess.run(
        [sys.executable, str(REPO / "tools" / "test_cpu.py"), str(log)],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert ran.returncode == 2
    assert "Traceback" not in ran.stderr
    assert len(ran.stderr.strip().splitlines()) == 1
    assert says in ran.stderr
    assert "cpu.jsonl" in ran.stderr
