"""docs/cli.md documents every command and option of vipu and vipu-admin (datasette-style).

Each command has a ``### <command path>`` section holding its ``--help``
output between ``<!-- generated:help:<path> -->`` markers; the tests below
recompute the help and compare. After changing a command, refresh the blocks
with ``UPDATE_CLI_DOCS=1 .venv/bin/pytest tests/cli/test_cli_docs.py`` and
write the prose around them by hand.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import click
import pytest

from vpod.cli.vipu_admin_main import cli as vipu_admin_cli
from vpod.cli.vipu_main import cli as vipu_cli

DOC = Path(__file__).resolve().parents[2] / "docs" / "cli.md"
WIDTH = 88
ROOTS: dict[str, click.Group] = {"vipu": vipu_cli, "vipu-admin": vipu_admin_cli}


def walk() -> Iterator[tuple[str, click.Command, click.Context]]:
    """Every command with its full path and a context for rendering its help."""
    for name, root in ROOTS.items():
        settings = {**root.context_settings, "max_content_width": WIDTH}
        root_ctx = click.Context(root, info_name=name, terminal_width=WIDTH, **settings)
        yield name, root, root_ctx
        for group_name in sorted(root.list_commands(root_ctx)):
            group = root.get_command(root_ctx, group_name)
            assert isinstance(group, click.Group)
            group_ctx = click.Context(
                group, info_name=group_name, parent=root_ctx, **group.context_settings
            )
            for leaf_name in sorted(group.list_commands(group_ctx)):
                leaf = group.get_command(group_ctx, leaf_name)
                assert leaf is not None
                leaf_ctx = click.Context(
                    leaf, info_name=leaf_name, parent=group_ctx, **leaf.context_settings
                )
                yield f"{name} {group_name} {leaf_name}", leaf, leaf_ctx


COMMANDS = {path: (command, ctx) for path, command, ctx in walk()}


def help_block(path: str) -> str:
    command, ctx = COMMANDS[path]
    return f"```text\n{command.get_help(ctx)}\n```\n"


def block_pattern(path: str) -> re.Pattern[str]:
    name = re.escape(path)
    start, end = f"<!-- generated:help:{name} -->", f"<!-- /generated:help:{name} -->"
    return re.compile(rf"{start}\n(.*?){end}", re.S)


def section(text: str, path: str) -> str:
    """The text under '### `path`' up to the next heading of the same or higher level."""
    match = re.search(rf"^### `{re.escape(path)}`\n(.*?)(?=^#{{1,3}} |\Z)", text, re.S | re.M)
    assert match is not None, f"docs/cli.md has no section ### `{path}`"
    return match.group(1)


def _update_doc() -> None:
    text = DOC.read_text()
    for path in COMMANDS:
        text = block_pattern(path).sub(
            lambda _m, p=path: (
                f"<!-- generated:help:{p} -->\n{help_block(p)}<!-- /generated:help:{p} -->"
            ),
            text,
        )
    DOC.write_text(text)


if os.environ.get("UPDATE_CLI_DOCS"):
    _update_doc()


@pytest.mark.parametrize("path", list(COMMANDS))
def test_every_command_has_a_section_with_its_current_help(path: str) -> None:
    """The section exists and its generated --help block matches the code."""
    body = section(DOC.read_text(), path)
    match = block_pattern(path).search(body)
    assert match is not None, f"section {path} has no generated help block"
    assert match.group(1) == help_block(path), (
        f"the help of '{path}' changed: UPDATE_CLI_DOCS=1 pytest {Path(__file__).name}"
    )


@pytest.mark.parametrize("path", list(COMMANDS))
def test_every_option_is_named_in_its_section(path: str) -> None:
    """Each visible option of the command appears in its section."""
    command, _ = COMMANDS[path]
    body = section(DOC.read_text(), path)
    for param in command.params:
        if isinstance(param, click.Option) and not param.hidden:
            assert any(name in body for name in param.opts), f"{path}: {param.opts} undocumented"


def test_no_section_documents_a_command_that_does_not_exist() -> None:
    """Every '### `vipu ...`' heading names a real command."""
    headings = re.findall(r"^### `((?:vipu|vipu-admin)(?: [^`]*)?)`$", DOC.read_text(), re.M)
    assert headings, "docs/cli.md has no command sections"
    assert sorted(set(headings) - set(COMMANDS)) == []


def test_every_config_key_and_its_variable_is_documented() -> None:
    """The settings table names every key the CLIs read and its VIPU_CLI_ variable."""
    from vpod.cli.config import KEYS, env_var

    text = DOC.read_text()
    for key in KEYS:
        assert f"`{key}`" in text, key
        assert f"`{env_var(key)}`" in text, env_var(key)
