"""Reading a trace file: the simulator's only I/O.

Everything else in :mod:`vpod.sim` works on the jobs this returns.
"""

from __future__ import annotations

import csv
from pathlib import Path

from .jobs import COLUMNS, Job, TraceError, jobs_from_rows


def read_trace(path: str | Path) -> list[Job]:
    """The jobs of a CSV trace with the columns ``job_id,submission_time,duration,num_gpu``."""
    path = Path(path)
    try:
        with path.open(newline="", encoding="utf-8") as handle:
            reader = csv.DictReader(handle)
            header = reader.fieldnames or []
            missing = [c for c in COLUMNS if c not in header]
            if missing:
                raise TraceError(
                    f"{path}: the header lacks {', '.join(missing)};"
                    f" a trace has the columns {','.join(COLUMNS)}"
                )
            return jobs_from_rows(reader)
    except OSError as exc:
        raise TraceError(f"cannot read trace {path}: {exc.strerror or exc}") from exc
    except TraceError as exc:
        if str(exc).startswith(str(path)):
            raise
        raise TraceError(f"{path}, {exc}") from exc
