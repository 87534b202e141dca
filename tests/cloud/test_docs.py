"""docs/cloud.md stays complete: every route, command, flavor, quota, phase and table."""

from __future__ import annotations

from pathlib import Path
from unittest.mock import MagicMock

import click
import pytest
from fastapi import FastAPI

from vpod.cli.cloud_commands import cloud_commands
from vpod.cloud.api.router import PREFIX, cloud_router
from vpod.cloud.flavors import CATALOG
from vpod.cloud.quotas import QUOTA_NAMES
from vpod.cloud.states import Phase
from vpod.store.cloud_schema import cloud_projects

DOC = (Path(__file__).parents[2] / "docs" / "cloud.md").read_text()


def _routes() -> list[str]:
    app = FastAPI()
    app.include_router(cloud_router(MagicMock()))
    return sorted(
        f"{method.upper()} {path.removeprefix(PREFIX)}"
        for path, operations in app.openapi()["paths"].items()
        for method in operations
    )


def _commands() -> list[str]:
    found = []
    for command in cloud_commands():
        if isinstance(command, click.Group):
            found += [f"vpod {command.name} {name}" for name in command.commands]
        else:
            found.append(f"vpod {command.name}")
    return sorted(found)


@pytest.mark.parametrize("route", _routes())
def test_every_route_is_in_the_api_table(route: str) -> None:
    """The REST table names each route as `METHOD /path`."""
    assert f"| `{route}` |" in DOC


@pytest.mark.parametrize("command", _commands())
def test_every_command_is_in_the_cli_table(command: str) -> None:
    """The CLI table has a row for each vpod cloud command."""
    assert f"| `{command}" in DOC


@pytest.mark.parametrize("name", [f.name for f in CATALOG])
def test_every_flavor_is_in_the_catalog_table(name: str) -> None:
    """The flavor table lists each flavor."""
    assert f"| `{name}` |" in DOC


@pytest.mark.parametrize("name", [*QUOTA_NAMES, *(p.value for p in Phase)])
def test_every_quota_and_phase_is_explained(name: str) -> None:
    """Quota names and task phases appear in the text."""
    assert name in DOC


@pytest.mark.parametrize(
    "table", sorted(t for t in cloud_projects.metadata.tables if t.startswith("cloud_"))
)
def test_every_cloud_table_is_described(table: str) -> None:
    """The store section has a row per cloud table."""
    assert f"| `{table}` |" in DOC
