"""The comparison as a figure: utilisation and queue length over time, per placer.

A replay's timeline is a step function with one step per event (thousands),
which drawn raw is a solid band. Each curve is therefore the time-weighted
average over equal windows of the trace span; the window is in the legend.
This module builds the figure; saving it is the caller's business.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from typing import TYPE_CHECKING

from .compare import Comparison

if TYPE_CHECKING:
    from matplotlib.figure import Figure

DAY_S = 86_400.0
DEFAULT_WINDOWS = 400


def window_averages(
    times: Sequence[float], values: Sequence[float], start: float, end: float, windows: int
) -> list[float]:
    """Time-weighted means of a step function over ``windows`` equal windows of [start, end].

    ``values[k]`` holds from ``times[k]`` until ``times[k + 1]``; the last value
    holds until ``end``. Before ``times[0]`` the function is 0.
    """
    if windows < 1 or end <= start:
        raise ValueError("need at least one window over a span of positive length")
    width = (end - start) / windows
    edges = [start + k * width for k in range(windows)] + [end]
    sums = [0.0] * windows
    for k, value in enumerate(values):
        if not value:
            continue
        left = max(times[k], start)
        right = min(times[k + 1] if k + 1 < len(times) else end, end)
        window = max(0, bisect_right(edges, left) - 1)
        while left < right and window < windows:
            piece_end = min(right, edges[window + 1])
            sums[window] += value * (piece_end - left)
            left = piece_end
            window += 1
    return [total / width for total in sums]


def comparison_figure(comparison: Comparison, *, windows: int = DEFAULT_WINDOWS) -> Figure:
    """A matplotlib figure (Agg backend): utilisation above, queue length below.

    matplotlib is imported here, not at module level: it costs a noticeable
    part of a second, and most runs draw nothing.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    start = min(line.timeline.times[0] for line in comparison.replays.values())
    end = max(line.timeline.times[-1] for line in comparison.replays.values())
    if end <= start:
        end = start + 1.0
    width_h = (end - start) / windows / 3600
    figure = Figure(figsize=(11, 6.5), layout="constrained")
    FigureCanvasAgg(figure)
    util_axes, queue_axes = figure.subplots(2, 1, sharex=True)
    centres = [(k + 0.5) * (end - start) / windows / DAY_S for k in range(windows)]
    for name, result in comparison.replays.items():
        line = result.timeline
        busy = window_averages(line.times, line.busy, start, end, windows)
        queued = window_averages(line.times, line.queued, start, end, windows)
        util_axes.plot(centres, [b / comparison.num_ipus for b in busy], label=name, lw=1)
        queue_axes.plot(centres, queued, label=name, lw=1)
    util_axes.set_ylabel("utilisation (busy IPUs ÷ pod)")
    util_axes.set_ylim(0, 1.02)
    queue_axes.set_ylabel("queued jobs")
    queue_axes.set_xlabel("days since the first submission")
    util_axes.set_title(
        f"{comparison.num_ipus} IPUs, {comparison.policy} — means over windows of {width_h:.1f} h"
    )
    util_axes.legend(loc="best")
    queue_axes.legend(loc="best")
    for axes in (util_axes, queue_axes):
        axes.grid(alpha=0.3)
    return figure
