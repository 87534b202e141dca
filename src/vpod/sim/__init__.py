"""Trace-replay simulator over the real placement engine.

Public surface::

    jobs = read_trace("itp-cluster02.csv")                # the only I/O
    result = compare(jobs, 256, Policy.BACKFILL)          # engine, bound, first_fit
    result.summaries["engine"].mean_wait_s, result.ratio("engine")
    report = result.as_dict()                             # JSON-ready
    one = replay(jobs, FirstFitPlacer(pod_for_ipus(64)), 64, Policy.FIFO)

The figure for ``--plot`` is :func:`vpod.sim.plot.comparison_figure`
(imported on demand: matplotlib is slow to import). The rules and the
definitions of every figure are in ``docs/simulator.md``.
"""

from .compare import BOUND, DEFAULT_PLACERS, ENGINE, FIRST_FIT, Comparison, compare, pod_for_ipus
from .engine_placer import EnginePlacer
from .event_replay import Policy, Replay, Timeline, replay
from .first_fit import FirstFitPlacer
from .jobs import Job, TraceError, jobs_from_rows, make_job, split_oversized
from .metrics import Summary, summarize
from .placers import BoundPlacer, Placer, Reservation
from .trace_csv import read_trace

__all__ = [
    "BOUND",
    "DEFAULT_PLACERS",
    "ENGINE",
    "FIRST_FIT",
    "BoundPlacer",
    "Comparison",
    "EnginePlacer",
    "FirstFitPlacer",
    "Job",
    "Placer",
    "Policy",
    "Replay",
    "Reservation",
    "Summary",
    "Timeline",
    "TraceError",
    "compare",
    "jobs_from_rows",
    "make_job",
    "pod_for_ipus",
    "read_trace",
    "replay",
    "split_oversized",
    "summarize",
]
