"""The installed console scripts of vpod, loaded in this process: their click commands
(walked for help texts and options) or, for the argparse ones, their ``--help`` text."""

from __future__ import annotations

import contextlib
import importlib.metadata
import io
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import click


@dataclass(frozen=True)
class Script:
    name: str
    command: click.Command | None
    """The click command it runs, or None for an argparse script."""
    main: Callable[..., object]

    def argparse_help(self) -> str:
        """``NAME --help`` of an argparse script, run in this process."""
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
            self.main(["--help"])
        return out.getvalue()


def _click_command_of(main: object) -> click.Command | None:
    if isinstance(main, click.Command):
        return main
    module = sys.modules[getattr(main, "__module__", "")]
    cli = getattr(module, "cli", None)
    return cli if isinstance(cli, click.Command) else None


def scripts() -> dict[str, Script]:
    """Every console script the vpod distribution installs, by name."""
    found = {}
    for entry in importlib.metadata.distribution("vpod").entry_points:
        if entry.group == "console_scripts":
            main = entry.load()
            found[entry.name] = Script(entry.name, _click_command_of(main), main)
    return found


def subcommands(
    group: click.Command, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], click.Command, click.Group]]:
    """(path, command, its parent group) of every command below ``group``, depth first."""
    if not isinstance(group, click.Group):
        return
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        if command is None or command.hidden:
            continue
        yield (*path, name), command, group
        yield from subcommands(command, (*path, name))
