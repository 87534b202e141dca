"""What ``scripts/test`` runs, in which order, and when the OpenStack stage is skipped.

The real ``scripts/test`` runs in a copy of the repository's layout whose tools are stand-ins
that record their arguments (``.venv/bin/pytest``, ``ruff``, ``mypy``, ``lint-imports``,
``scripts/bootstrap``, ``scripts/ensure-system-deps``, ``scripts/openstack-up``): the subject
is the script's own logic (stages, order, skips, exit status), not the suite it runs, which
takes half an hour. ``.ci/run`` is checked to call exactly ``scripts/test``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

RECORDER = """#!/usr/bin/env bash
# Record this call; fail where the test asked this tool (or this pytest stage) to fail.
echo "{name} $*" >> "$STAGES_LOG"
case "{name} $*" in
  *"$STAGES_FAIL"*) [ -n "$STAGES_FAIL" ] && exit 1 ;;
esac
exit 0
"""

OPENSTACK_UP = """#!/usr/bin/env bash
# scripts/openstack-up's stand-in: `check` answers as the test asks.
if [ "${1:-}" = check ]; then
  [ -z "$STAGES_CANNOT" ] || { echo "$STAGES_CANNOT"; exit 1; }
  echo "this machine can run the test OpenStack"; exit 0
fi
echo "openstack-up $*" >> "$STAGES_LOG"
[ "$STAGES_FAIL" != "openstack-up" ] || exit 1
"""


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "scripts").mkdir(parents=True)
    (root / ".venv" / "bin").mkdir(parents=True)
    (root / "tools").mkdir()
    shutil.copy(REPO / "scripts" / "test", root / "scripts" / "test")
    tools = {
        root / "scripts" / "bootstrap": "bootstrap",
        root / "scripts" / "ensure-system-deps": "ensure-system-deps",
        **{root / ".venv" / "bin" / n: n for n in ("ruff", "mypy", "lint-imports", "pytest")},
    }
    for path, name in tools.items():
        path.write_text(RECORDER.replace("{name}", name))
    (root / "scripts" / "openstack-up").write_text(OPENSTACK_UP)
    (root / ".venv" / "bin" / "python").write_text('#!/usr/bin/env bash\necho "python $*"\n')
    for path in [*(root / "scripts").iterdir(), *(root / ".venv" / "bin").iterdir()]:
        path.chmod(0o755)
    return root


def run(repo: Path, *args: str, **env: str) -> tuple[int, str, list[str]]:
    """``scripts/test ARGS`` with ``env``: its exit status, output and the calls made."""
    log = repo / "calls.log"
    log.unlink(missing_ok=True)
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("VPOD_", "STAGES_"))}
    clean.update({"STAGES_LOG": str(log), "STAGES_FAIL": "", "STAGES_CANNOT": "", **env})
    done = subprocess.run(
        ["bash", str(repo / "scripts" / "test"), *args],
        capture_output=True,
        text=True,
        env=clean,
        timeout=60,
        check=False,
    )
    calls = log.read_text().splitlines() if log.exists() else []
    return done.returncode, done.stdout + done.stderr, calls


def pytest_calls(calls: list[str]) -> list[str]:
    """The pytest and OpenStack calls, in order."""
    return [c for c in calls if c.startswith(("pytest", "openstack-up"))]


ONLY_VPOD = (
    "-m not openstack and not system and not fuzz --ignore=tests/faults --ignore=tests/stress"
)
MAIN = [f"pytest -p no:cacheprovider -n 3 {ONLY_VPOD}"]
FAULTS = "pytest -p no:cacheprovider -m not openstack tests/faults tests/stress"
SYSTEM = (
    "pytest -p no:cacheprovider -n 3 -m (system or fuzz) and not openstack"
    " --ignore=tests/faults --ignore=tests/stress"
)
HEAVY = [FAULTS, SYSTEM]
STAGE = ["openstack-up ", "pytest -p no:cacheprovider -m openstack tests/openstack"]


def test_the_whole_run_is_the_main_suite_then_the_heavy_stages(repo: Path) -> None:
    code, out, calls = run(repo)
    assert code == 0, out
    assert calls[:2] == ["bootstrap ", "ensure-system-deps "]
    assert pytest_calls(calls) == MAIN + HEAVY + STAGE
    headings = [
        "== pytest: the main suite, 3 workers",
        "== main suite:",
        "== pytest: faults and stress, alone",
        "== faults and stress:",
        "== pytest: the system stage, 3 workers",
        "== system stage:",
        "== OpenStack (scripts/openstack-up)",
        "== OpenStack stage:",
    ]
    places = [out.index(h) for h in headings]
    assert places == sorted(places), out


def test_each_stage_says_how_long_it_took(repo: Path) -> None:
    code, out, _ = run(repo)
    assert code == 0, out
    for stage in ("main suite", "faults and stress", "system stage", "OpenStack stage"):
        assert re.search(rf"^== {stage}: \d+ s$", out, re.MULTILINE), (stage, out)


def test_the_stage_is_skipped_saying_why_where_the_machine_cannot_run_it(repo: Path) -> None:
    code, out, calls = run(repo, STAGES_CANNOT="needs root (Debian packages, Linux bridges)")
    assert code == 0, out
    assert pytest_calls(calls) == MAIN + HEAVY
    assert "== OpenStack stage skipped: needs root (Debian packages, Linux bridges)" in out


@pytest.mark.parametrize("value", ["1", "yes"])
def test_a_developer_leaves_the_stage_out(repo: Path, value: str) -> None:
    code, out, calls = run(repo, VPOD_SKIP_OPENSTACK=value)
    assert code == 0, out
    assert pytest_calls(calls) == MAIN + HEAVY
    assert f"OpenStack stage skipped: VPOD_SKIP_OPENSTACK={value}" in out


@pytest.mark.parametrize("value", ["1", "yes"])
def test_a_developer_runs_the_main_suite_alone(repo: Path, value: str) -> None:
    code, out, calls = run(repo, VPOD_SKIP_HEAVY=value)
    assert code == 0, out
    assert pytest_calls(calls) == MAIN
    assert f"== heavy stages skipped: VPOD_SKIP_HEAVY={value}" in out


@pytest.mark.parametrize("variable", ["VPOD_SKIP_OPENSTACK", "VPOD_SKIP_HEAVY"])
def test_zero_is_no_opt_out(repo: Path, variable: str) -> None:
    code, out, calls = run(repo, **{variable: "0"})
    assert code == 0, out
    assert pytest_calls(calls) == MAIN + HEAVY + STAGE


def test_a_failing_main_suite_fails_the_run_after_everything_ran(repo: Path) -> None:
    code, out, calls = run(repo, STAGES_FAIL="not system")
    assert code == 1, out
    assert pytest_calls(calls) == MAIN + HEAVY + STAGE


def test_a_failing_main_suite_alone_fails(repo: Path) -> None:
    code, out, calls = run(repo, STAGES_FAIL="not system", VPOD_SKIP_HEAVY="1")
    assert code == 1, out
    assert pytest_calls(calls) == MAIN


@pytest.mark.parametrize("failing", ["tests/faults tests/stress", "(system or fuzz)"])
def test_a_failing_heavy_stage_fails_the_run_after_everything_ran(repo: Path, failing: str) -> None:
    code, out, calls = run(repo, STAGES_FAIL=failing)
    assert code == 1, out
    assert pytest_calls(calls) == MAIN + HEAVY + STAGE


@pytest.mark.parametrize("failing", ["openstack-up", "-m openstack tests/openstack"])
def test_a_failing_stage_fails_the_run(repo: Path, failing: str) -> None:
    code, out, calls = run(repo, STAGES_FAIL=failing)
    assert code == 1, out
    expected = MAIN + HEAVY + (STAGE[:1] if failing == "openstack-up" else STAGE)
    assert pytest_calls(calls) == expected


def test_dash_m_openstack_sets_up_and_runs_the_stage_alone(repo: Path) -> None:
    code, out, calls = run(repo, "-m", "openstack", STAGES_CANNOT="ignored: asked for")
    assert code == 0, out
    assert pytest_calls(calls) == STAGE


def test_serial_runs_have_the_same_stages_one_test_at_a_time(repo: Path) -> None:
    code, out, calls = run(repo, VPOD_TEST_WORKERS="0")
    assert code == 0, out
    serial = [c.replace(" -n 3", "") for c in MAIN + HEAVY]
    assert pytest_calls(calls) == [*serial, *STAGE]
    assert "== pytest: the main suite\n" in out


def test_a_part_of_the_suite_runs_without_the_stage(repo: Path) -> None:
    code, out, calls = run(repo, "tests/cloud", "-x")
    assert code == 0, out
    assert pytest_calls(calls) == [
        "pytest -p no:cacheprovider -n 3 -m not openstack tests/cloud -x"
    ]


def test_ci_runs_exactly_the_readme_test_command() -> None:
    lines = [
        line
        for line in (REPO / ".ci" / "run").read_text().splitlines()
        if line and not line.startswith("#")
    ]
    assert lines[-1] == "exec scripts/test"
    assert "scripts/test" in (REPO / "README.md").read_text()
