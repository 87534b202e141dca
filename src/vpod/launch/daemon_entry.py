"""The console-script entry of a vpod daemon (an agent program): it dies with its parent, and
click's errors become an exit status instead of a traceback."""

from __future__ import annotations

import click

from vpod.client.command_line import run_click

from .parent_death import die_with_parent


def run_daemon(command: click.Command, argv: list[str] | None, prog_name: str) -> int:
    """Run ``command`` with ``argv``; returns the exit status."""
    die_with_parent()
    return run_click(command, argv, prog_name)
