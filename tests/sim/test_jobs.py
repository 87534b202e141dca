"""Reading traces into jobs: sizes, checks and the messages that point at the bad line."""

from __future__ import annotations

from pathlib import Path

import pytest

from vpod.sim.jobs import TraceError, jobs_from_rows, make_job, split_oversized
from vpod.sim.trace_csv import read_trace

HEADER = "job_id,submission_time,duration,num_gpu\n"


def row(
    job_id: str = "a", submit: str = "0", duration: str = "10", gpus: str = "1"
) -> dict[str, str]:
    return {"job_id": job_id, "submission_time": submit, "duration": duration, "num_gpu": gpus}


@pytest.mark.parametrize(
    ("gpus", "size"),
    [
        (1, 1),
        (2, 2),
        (3, 4),
        (4, 4),
        (8, 8),
        (9, 16),
        (16, 16),
        (17, 64),
        (32, 64),
        (64, 64),
        (65, 128),
    ],
)
def test_a_job_gets_the_smallest_partition_that_holds_it(gpus: int, size: int) -> None:
    """32 is not a partition size, so a job asking for 32 accelerators holds 64 IPUs."""
    job = make_job(0, 0, 1, gpus)
    assert (job.requested, job.size) == (gpus, size)


def test_rows_become_jobs_in_trace_order() -> None:
    """Row order is the job index; times stay whole numbers when the trace has them."""
    jobs = jobs_from_rows([row("x", "5", "7", "2"), row("y", "5.5", "1", "32")])
    assert [(j.index, j.job_id, j.submit, j.duration, j.size) for j in jobs] == [
        (0, "x", 5, 7, 2),
        (1, "y", 5.5, 1, 64),
    ]
    assert isinstance(jobs[0].submit, int)
    assert jobs[0].name != jobs[1].name


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (row(submit="soon"), "line 3: submission_time 'soon' is not a number"),
        (row(duration="-1"), "line 3: duration -1 is negative"),
        (row(duration="inf"), "line 3: duration 'inf' is not a finite number"),
        (row(gpus="1.5"), "line 3: num_gpu '1.5' is not a whole number"),
        (row(gpus="0"), "line 3: num_gpu is 0; a job needs at least 1"),
        ({"job_id": "a", "duration": "1"}, "line 3: missing column(s) submission_time, num_gpu"),
    ],
)
def test_a_bad_row_is_named_by_its_line(bad: dict[str, str], message: str) -> None:
    """Messages give the file line (header is line 1) and what is wrong with the value."""
    with pytest.raises(TraceError, match=message.replace("(", r"\(").replace(")", r"\)")):
        jobs_from_rows([row(), bad])


def test_oversized_jobs_are_split_off() -> None:
    """Jobs whose partition exceeds the pod go to the second list, order kept."""
    jobs = [make_job(i, 0, 1, g) for i, g in enumerate([1, 32, 16, 64, 17])]
    fits, too_big = split_oversized(jobs, 16)
    assert [j.index for j in fits] == [0, 2]
    assert [j.index for j in too_big] == [1, 3, 4]


def test_read_trace_reads_a_csv_file(tmp_path: Path) -> None:
    """The reader takes the header's columns, in any order, and ignores extra ones."""
    path = tmp_path / "t.csv"
    path.write_text("num_gpu,extra,job_id,duration,submission_time\n4,x,j1,60,100\n1,y,j2,5,101\n")
    jobs = read_trace(path)
    assert [(j.job_id, j.submit, j.duration, j.size) for j in jobs] == [
        ("j1", 100, 60, 4),
        ("j2", 101, 5, 1),
    ]


def test_read_trace_names_the_file_and_line_of_a_bad_row(tmp_path: Path) -> None:
    """A bad value deep in a file is reported with the file and its line number."""
    path = tmp_path / "t.csv"
    path.write_text(HEADER + "a,0,10,1\nb,1,ten,1\n")
    with pytest.raises(TraceError, match=r"t\.csv, line 3: duration 'ten'"):
        read_trace(path)


def test_read_trace_rejects_a_file_without_the_columns(tmp_path: Path) -> None:
    """A CSV with another header says which columns are missing."""
    path = tmp_path / "t.csv"
    path.write_text("id,start,gpus\n1,2,3\n")
    with pytest.raises(TraceError, match="the header lacks job_id, submission_time"):
        read_trace(path)


def test_read_trace_reports_a_missing_file(tmp_path: Path) -> None:
    """An unreadable trace is a TraceError naming the path, not an OSError."""
    with pytest.raises(TraceError, match="cannot read trace"):
        read_trace(tmp_path / "absent.csv")
