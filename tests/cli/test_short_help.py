"""No CLI lists a command with a cut word or an ellipsis in its one-line help.

Every group of every console script (vpod, vipu, vipu-admin, vipu-server, ...)
is rendered with ``--help`` at 80 columns, as a terminal shows it; each line
of its ``Commands:`` list must end in a whole word of the command's help, never
in ``...``. :func:`fitting_short_help` is also checked on texts of each shape.
"""

from __future__ import annotations

import re

import click
import pytest
from click.testing import CliRunner

from vpod.cli.short_help import FITS, fitting_short_help

from .console_scripts import scripts, subcommands

WIDTH = 80


def _groups() -> list[tuple[str, tuple[str, ...], click.Group]]:
    found: list[tuple[str, tuple[str, ...], click.Group]] = []
    for name, script in scripts().items():
        if isinstance(script.command, click.Group):
            found.append((name, (), script.command))
            found += [
                (name, path, command)
                for path, command, _ in subcommands(script.command)
                if isinstance(command, click.Group)
            ]
    return found


def _listed(help_text: str) -> dict[str, str]:
    """Command name -> its short help as shown (continuation lines joined)."""
    section = help_text.split("\nCommands:\n", 1)[1]
    listed: dict[str, str] = {}
    last = ""
    for line in section.splitlines():
        if not line.strip():
            break
        entry = re.match(r"^  (\S+)\s+(.*)$", line)
        if entry and not line.startswith("   "):
            last = entry.group(1)
            listed[last] = entry.group(2).strip()
        elif last:
            listed[last] += " " + line.strip()
    return listed


GROUPS = _groups()


def test_every_cli_with_commands_is_checked() -> None:
    assert {"vpod", "vipu", "vipu-admin"} <= {name for name, _, _ in GROUPS}


@pytest.mark.parametrize(
    ("script", "path", "group"), GROUPS, ids=[" ".join((n, *p)) for n, p, _ in GROUPS]
)
def test_no_short_help_is_cut(script: str, path: tuple[str, ...], group: click.Group) -> None:
    root = scripts()[script].command
    assert root is not None
    shown = CliRunner().invoke(root, [*path, "--help"], prog_name=script, terminal_width=WIDTH)
    assert shown.exit_code == 0, shown.output
    listed = _listed(shown.output)
    assert listed, f"{script} {' '.join(path)} --help lists no commands"
    ctx = click.Context(group)
    for name, short in listed.items():
        command = group.get_command(ctx, name)
        assert command is not None
        assert not short.endswith(("...", "…")), f"{script} {' '.join(path)} {name}: {short!r}"
        last_word = short.split()[-1].strip(".,;:")
        full = " ".join((command.help or command.short_help or "").split())
        assert re.search(rf"(?<![\w-]){re.escape(last_word)}(?![\w-])", full), (
            f"{script} {' '.join(path)} {name}: {short!r} ends in a cut word"
        )


@pytest.mark.parametrize(
    ("help_text", "short"),
    [
        (
            "Remove user ID: its key stops working at once.",
            "Remove user ID: its key stops working at once",
        ),
        (
            "Show partition ID: its spec, status and IPUs, or its IPUoF configs.",
            "Show partition ID",
        ),
        (
            "Run a controller on SQLite and emulated pods until Ctrl-C (or SIGTERM).\n\nMore.",
            "Run a controller on SQLite and emulated pods until Ctrl-C",
        ),
        (  # no clause says enough alone: the whole sentence, wrapped, never cut
            "Replay TRACE (CSV: job_id,submission_time,duration,num_gpu) on a pod of --ipus IPUs.",
            "Replay TRACE (CSV: job_id,submission_time,duration,num_gpu) on a pod of --ipus IPUs",
        ),
        ("The catalog. Each flavor has a price.", "The catalog"),
    ],
)
def test_a_short_help_is_a_sentence_or_clause_of_whole_words(help_text: str, short: str) -> None:
    made = fitting_short_help(help_text)
    assert made == short
    assert len(made) <= FITS or " (" in help_text.split(".")[0]
