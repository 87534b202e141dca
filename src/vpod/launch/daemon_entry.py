"""The console-script entry of a vpod daemon (an agent program): it dies with its parent, and
click's errors become an exit status instead of a traceback."""

from __future__ import annotations

import click

from .parent_death import die_with_parent


def run_daemon(command: click.Command, argv: list[str] | None, prog_name: str) -> int:
    """Run ``command`` with ``argv``; returns the exit status."""
    die_with_parent()
    try:
        command.main(args=argv, prog_name=prog_name, standalone_mode=False)
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except click.Abort:
        click.echo("Aborted.", err=True)
        return 1
    return 0
