"""Plain text tables and one-line errors for the console scripts of :mod:`vpod.ipuof`."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from functools import wraps
from typing import Any, NoReturn, ParamSpec, TypeVar

import click

from .errors import IpuofError

P = ParamSpec("P")
R = TypeVar("R")


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """Columns padded to their widest cell, headers first; scripts may split on 2+ spaces."""
    cells = [[str(h) for h in headers], *[["" if c is None else str(c) for c in r] for r in rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in cells
    )


def echo_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, sort_keys=False))


def fail(message: str, code: int) -> NoReturn:
    click.echo(f"{_program()}: {' '.join(message.split())}", err=True)
    sys.exit(code)


def one_line_errors(command: Callable[P, R]) -> Callable[P, R]:
    """Turn an :class:`IpuofError` into one line on stderr and its exit code."""

    @wraps(command)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return command(*args, **kwargs)
        except IpuofError as exc:
            fail(str(exc), exc.exit_code)

    return run


def _program() -> str:
    context = click.get_current_context(silent=True)
    return context.find_root().info_name or "vpod" if context else "vpod"


def percent(ratio: float) -> str:
    return f"{ratio * 100:.0f}%"
