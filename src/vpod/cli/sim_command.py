"""``vpod sim``: replay a job trace through the placement engine, beside two references.

The command parses options, reads the trace, runs :func:`vpod.sim.compare`
with a progress bar, and renders: a table on stdout, optionally a JSON report
and a PNG plot. All the simulation lives in :mod:`vpod.sim`; see
``docs/simulator.md`` for the rules and the definitions of the figures.

Register it on a Click group with ``group.add_command(sim)``; until the
``vpod`` group exists, ``python -m vpod.cli.sim_command`` runs it alone.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path

import click
from rich import box
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from vpod.domain.errors import InvalidSpec
from vpod.sim.compare import BOUND, Comparison, compare, pod_for_ipus
from vpod.sim.event_replay import Policy
from vpod.sim.jobs import TraceError
from vpod.sim.trace_csv import read_trace


def format_seconds(seconds: float) -> str:
    """A duration a person reads at a glance: seconds, minutes, hours or days."""
    if seconds < 120:
        return f"{seconds:,.1f} s"
    if seconds < 7_200:
        return f"{seconds / 60:,.1f} min"
    if seconds < 172_800:
        return f"{seconds / 3_600:,.1f} h"
    return f"{seconds / 86_400:,.1f} d"


def _ratio_text(value: float | None) -> str:
    return "∞" if value is None else f"{value:.3f}"


def result_table(comparison: Comparison, title: str) -> Table:
    """The placers side by side, with each one's mean wait over the bound's."""
    table = Table(title=title, box=box.SIMPLE_HEAD, collapse_padding=True)
    table.add_column("\nplacer", no_wrap=True)
    headings = (
        "utilization",
        "mean\nwait",
        "p99\nwait",
        "makespan",
        "frag.\nblocked",
        "mean wait\n÷ bound",
    )
    for heading in headings:
        table.add_column(heading, justify="right", no_wrap=True)
    for name, summary in comparison.summaries.items():
        share = summary.fragmentation_blocked / summary.jobs
        table.add_row(
            name,
            f"{summary.utilization:.4f}",
            format_seconds(summary.mean_wait_s),
            format_seconds(summary.p99_wait_s),
            format_seconds(summary.makespan_s),
            f"{summary.fragmentation_blocked} ({share:.1%})",
            _ratio_text(comparison.ratio(name)) if BOUND in comparison.summaries else "",
        )
    return table


def _dropped_message(comparison: Comparison) -> str:
    sizes = Counter(job.size for job in comparison.dropped)
    listed = ", ".join(f"{count} × {size}" for size, count in sorted(sizes.items()))
    return (
        f"{len(comparison.dropped)} of {comparison.trace_jobs} jobs need more IPUs than the"
        f" pod's {comparison.num_ipus} and were dropped (jobs × IPUs: {listed});"
        " use --ipus with a larger pod to replay them"
    )


class BadTrace(click.ClickException):
    """The trace (or the pod against it) cannot be replayed: bad input, so exit 2 as a usage
    error does, without the usage lines."""

    exit_code = 2


def _pod_size(_ctx: click.Context, _param: click.Parameter, ipus: int) -> int:
    """``--ipus`` when a Bow pod of that many IPUs can be built: a usage error otherwise."""
    try:
        pod_for_ipus(ipus)
    except InvalidSpec as exc:
        raise click.BadParameter(str(exc)) from None
    return ipus


@click.command("sim", context_settings={"show_default": True})
@click.argument("trace", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--ipus",
    type=int,
    required=True,
    callback=_pod_size,
    help="IPUs of the simulated Bow pod: a multiple of 4 up to 64, then multiples of 64.",
)
@click.option(
    "--policy",
    type=click.Choice([p.value for p in Policy]),
    default=Policy.FIFO.value,
    help="Queue discipline: strict head of line, or EASY backfill.",
)
@click.option(
    "--json",
    "json_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the figures as JSON to this file.",
)
@click.option(
    "--plot",
    "plot_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Draw utilisation and queue length over time to this PNG file.",
)
def sim(
    trace: Path, ipus: int, policy: str, json_path: Path | None, plot_path: Path | None
) -> None:
    """Replay TRACE (CSV: job_id,submission_time,duration,num_gpu) on a pod of --ipus IPUs.

    Each job gets the smallest partition that holds it and runs for its
    duration. The real placement engine is replayed beside a topology-free
    bound and a naive first-fit placer, under the same queue policy.
    """
    out = Console()
    err = Console(stderr=True)
    try:
        jobs = read_trace(trace)
        if not jobs:
            raise BadTrace(f"{trace} holds no jobs: nothing to replay")
        progress = Progress(
            TextColumn("replaying"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=err,
            transient=True,
            disable=not err.is_terminal,
        )
        with progress:
            task = progress.add_task("replay", total=3 * len(jobs))
            began = time.perf_counter()
            comparison = compare(
                jobs,
                ipus,
                Policy(policy),
                progress=lambda done: progress.update(task, completed=done),
            )
            wall_s = time.perf_counter() - began
    except (TraceError, InvalidSpec) as exc:
        raise BadTrace(str(exc)) from exc
    if comparison.dropped:
        err.print(f"[yellow]warning:[/] {_dropped_message(comparison)}", highlight=False)
    replayed = comparison.trace_jobs - len(comparison.dropped)
    title = (
        f"{trace.name} on {ipus} IPUs, {policy}: {replayed:,} jobs replayed,"
        f" {len(comparison.dropped)} dropped, {wall_s:.1f} s"
    )
    out.print(result_table(comparison, title))
    if json_path is not None:
        report = {"trace": str(trace), "wall_s": wall_s, **comparison.as_dict()}
        _write(json_path, json.dumps(report, indent=2) + "\n")
        err.print(f"wrote {json_path}", highlight=False)
    if plot_path is not None:
        from vpod.sim.plot import comparison_figure

        try:
            comparison_figure(comparison).savefig(plot_path, format="png", dpi=110)
        except OSError as exc:
            raise click.ClickException(f"cannot write {plot_path}: {exc.strerror}") from exc
        err.print(f"wrote {plot_path}", highlight=False)


def _write(path: Path, text: str) -> None:
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise click.ClickException(f"cannot write {path}: {exc.strerror}") from exc


if __name__ == "__main__":
    sim(prog_name="vpod sim")
