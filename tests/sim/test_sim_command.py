"""``vpod sim`` end to end: in process through Click, and as a real process."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from vpod.cli.sim_command import format_seconds, sim

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
PLACERS = ("engine", "bound", "first_fit")


@pytest.fixture
def trace_slice(real_trace: Path, tmp_path: Path) -> Path:
    """The first 600 jobs of a real trace: enough to queue on a small pod."""
    lines = real_trace.read_text().splitlines()[:601]
    path = tmp_path / "slice.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


def check_report(report: dict[str, object], ipus: int, policy: str) -> None:
    assert {"jobs", "wall_s", *PLACERS} <= set(report)
    assert (report["ipus"], report["policy"]) == (ipus, policy)
    assert isinstance(report["wall_s"], float)
    assert report["wall_s"] > 0
    jobs = report["jobs"]
    for name in PLACERS:
        figures = report[name]
        assert isinstance(figures, dict)
        assert figures["jobs"] == jobs
        assert 0 < figures["utilization"] <= 1
        assert figures["mean_wait_s"] >= 0
        assert figures["p99_wait_s"] >= 0
        assert figures["makespan_s"] > 0
        assert 0 <= figures["fragmentation_blocked"] <= jobs
    bound = report["bound"]
    assert isinstance(bound, dict)
    assert bound["fragmentation_blocked"] == 0
    ratios = report["mean_wait_over_bound"]
    assert isinstance(ratios, dict)
    assert set(ratios) == {"engine", "first_fit"}


def test_sim_prints_a_table_and_writes_json_and_png(trace_slice: Path, tmp_path: Path) -> None:
    """The table shows the three placers; the JSON has every key; the plot is a PNG."""
    out_json, out_png = tmp_path / "r.json", tmp_path / "r.png"
    outputs = ["--json", str(out_json), "--plot", str(out_png)]
    result = CliRunner().invoke(
        sim,
        [str(trace_slice), "--ipus", "64", "--policy", "backfill", *outputs],
    )
    assert result.exit_code == 0, result.output
    for name in PLACERS:
        assert name in result.output
    assert "600 jobs replayed, 0 dropped" in result.output
    check_report(json.loads(out_json.read_text()), 64, "backfill")
    assert out_png.read_bytes().startswith(PNG_SIGNATURE)


def test_sim_warns_about_dropped_jobs(trace_slice: Path) -> None:
    """On a pod smaller than some jobs, the run goes on and says how many were dropped."""
    result = CliRunner().invoke(sim, [str(trace_slice), "--ipus", "16"])
    assert result.exit_code == 0, result.output
    assert "need more IPUs than the pod's 16 and were dropped" in result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--ipus", "100"], "use a multiple of 64, e.g. 128"),
        (["--ipus", "-4"], "a Bow pod has a multiple of 4 IPUs"),
        (["--ipus", str(2**70)], "a pod has at most 4096 IPUs (1024 machines)"),
        (["--ipus", "64", "--policy", "lifo"], "'lifo' is not one of 'fifo', 'backfill'"),
    ],
)
def test_sim_rejects_bad_options(tmp_path: Path, args: list[str], message: str) -> None:
    """Bad options end with a usage error saying what to use instead, not a traceback."""
    trace = tmp_path / "small.csv"  # options are refused before a job is read
    trace.write_text("job_id,submission_time,duration,num_gpu\na,0,10,4\n")
    result = CliRunner().invoke(sim, [str(trace), *args])
    assert result.exit_code == 2
    assert message in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_sim_rejects_a_malformed_trace(tmp_path: Path) -> None:
    """A trace with a bad value names the file and line."""
    path = tmp_path / "bad.csv"
    path.write_text("job_id,submission_time,duration,num_gpu\na,0,10,one\n")
    result = CliRunner().invoke(sim, [str(path), "--ipus", "64"])
    assert result.exit_code == 2
    assert "bad.csv, line 2: num_gpu 'one' is not a whole number" in result.output


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(5, "5.0 s"), (600, "10.0 min"), (7_200, "2.0 h"), (259_200, "3.0 d")],
)
def test_durations_are_shown_in_readable_units(seconds: float, text: str) -> None:
    """Waits and makespans read in seconds, minutes, hours or days."""
    assert format_seconds(seconds) == text


@pytest.mark.e2e
def test_sim_runs_as_a_module_in_a_real_process(trace_slice: Path, tmp_path: Path) -> None:
    """``python -m vpod.cli.sim_command`` replays, prints the table and writes both files."""
    out_json, out_png = tmp_path / "p.json", tmp_path / "p.png"
    outputs = ["--json", str(out_json), "--plot", str(out_png)]
    completed = subprocess.run(
        [sys.executable, "-m", "vpod.cli.sim_command", str(trace_slice), "--ipus", "64", *outputs],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    assert "first_fit" in completed.stdout
    check_report(json.loads(out_json.read_text()), 64, "fifo")
    assert out_png.read_bytes().startswith(PNG_SIGNATURE)
