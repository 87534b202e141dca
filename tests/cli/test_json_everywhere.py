"""Every ``vipu`` and ``vipu-admin`` command offers ``--json`` for scripts (vipu-system.md §6:
"offer --json for machines"), changes as well as listings; what each prints is checked
against a real pod in ``tests/e2e/test_cli_commands.py``."""

from __future__ import annotations

from tests.cli.test_cli_docs import COMMANDS


def test_every_command_offers_json() -> None:
    leaves = {path: command for path, (command, _) in COMMANDS.items() if path.count(" ") == 2}
    assert len(leaves) > 20  # the walk reached the commands, not only the groups
    without = sorted(
        path
        for path, command in leaves.items()
        if not any("--json" in param.opts for param in command.params)
    )
    assert without == []
