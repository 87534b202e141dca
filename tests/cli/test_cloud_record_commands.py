"""A cloud resource's ``list`` and ``show REF`` commands, as ``cloud_options`` declares them.

Each resource group (cluster, volume, storage, keypair) gets both from
:func:`~vpod.cli.cloud_options.list_command` and
:func:`~vpod.cli.cloud_options.show_command`: the connection options and
``--json`` on both, ``show`` taking one name-or-id argument under the
resource's own metavar, and a missing one refused as a usage error (exit 2).
"""

from __future__ import annotations

import click
import pytest
from click.testing import CliRunner

from vpod.cli.cloud_options import list_command, show_command
from vpod.cli.vpod_main import cli

RESOURCES = {"cluster": "CLUSTER", "volume": "VOLUME", "storage": "STORAGE", "keypair": "NAME"}


@pytest.mark.parametrize(("group", "metavar"), RESOURCES.items())
def test_each_resource_lists_and_shows_one_by_its_metavar(group: str, metavar: str) -> None:
    runner = CliRunner()
    listed = runner.invoke(cli, [group, "list", "--help"])
    assert listed.exit_code == 0, listed.output
    assert f"Usage: cli {group} list [OPTIONS]\n" in listed.output
    shown = runner.invoke(cli, [group, "show", "--help"])
    assert shown.exit_code == 0, shown.output
    assert f"Usage: cli {group} show [OPTIONS] {metavar}\n" in shown.output
    for options in (listed.output, shown.output):
        assert all(o in options for o in ("--url URL", "--token TOKEN", "--config FILE", "--json"))
    missing = runner.invoke(cli, [group, "show"])
    assert missing.exit_code == 2
    assert f"Missing argument '{metavar}'" in missing.output


def test_the_declared_commands_carry_their_help_and_take_one_reference() -> None:
    group = click.Group("things")
    list_command(group, lambda client: [], lambda rows: "", "Your project's things.")
    show_command(group, "THING", lambda client, ref: client.get_volume(ref), str, "One thing.")
    assert sorted(group.commands) == ["list", "show"]
    assert group.commands["list"].help == "Your project's things."
    assert group.commands["show"].help == "One thing."
    (argument,) = [p for p in group.commands["show"].params if isinstance(p, click.Argument)]
    assert (argument.metavar, argument.required, argument.nargs) == ("THING", True, 1)
    assert not [p for p in group.commands["list"].params if isinstance(p, click.Argument)]
