"""Fixtures for the CLI tests: a controller double on loopback and ways to run the CLIs.

- ``fake``: the double (:mod:`tests.cli.fake_controller`) serving the user and
  admin APIs on two free loopback ports; ``fake.state`` is its model and log.
- ``vipu`` / ``vipu_admin``: run a CLI in-process with Click's CliRunner,
  pointed at the double through ``VIPU_CLI_*`` environment variables unless
  the test says otherwise; they return the result (``exit_code``,
  ``stdout``, ``stderr``).
- Every test runs in an empty working directory with no ``VIPU_CLI_*``
  variables inherited, so no stray ``vipu-cli.hcl`` is read.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import click
import pytest
from click.testing import CliRunner, Result

from tests.cli.fake_controller import FakeState, RunningFake, serve
from vpod.cli.vipu_admin_main import cli as vipu_admin_cli
from vpod.cli.vipu_main import cli as vipu_cli

Run = Callable[..., Result]


@pytest.fixture(autouse=True)
def _clean_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("VIPU_CLI_"):
            monkeypatch.delenv(name)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)


@pytest.fixture
def fake() -> Iterator[RunningFake]:
    with serve(FakeState()) as running:
        yield running


def endpoint_env(fake: RunningFake) -> dict[str, str]:
    """Environment that points both CLIs at the double."""
    return {
        "VIPU_CLI_API_HOST": "127.0.0.1",
        "VIPU_CLI_API_PORT": str(fake.user_port),
        "VIPU_CLI_ADMIN_API_PORT": str(fake.admin_port),
        "VIPU_CLI_TIMEOUT": "10",
    }


def _runner(command: click.Group, prog: str, default_env: dict[str, str]) -> Run:
    def run(*args: str, env: dict[str, str] | None = None, use_default_env: bool = True) -> Result:
        merged: dict[str, str | None] = dict(default_env) if use_default_env else {}
        merged.update(env or {})
        return CliRunner().invoke(command, list(args), env=merged, prog_name=prog)

    return run


@pytest.fixture
def vipu(fake: RunningFake) -> Run:
    return _runner(vipu_cli, "vipu", endpoint_env(fake))


@pytest.fixture
def vipu_admin(fake: RunningFake) -> Run:
    return _runner(vipu_admin_cli, "vipu-admin", endpoint_env(fake))


def table_rows(text: str) -> list[list[str]]:
    """Parse a table the way a script would: split on '|', strip, skip the rule line."""
    lines = text.strip("\n").splitlines()
    return [[cell.strip() for cell in line.split("|")] for i, line in enumerate(lines) if i != 1]
