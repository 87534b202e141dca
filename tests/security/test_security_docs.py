"""docs/security.md names every security option of vipu-server and vipu-agent."""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest

from vpod.launch.agent_main import cli as vipu_agent
from vpod.launch.server_main import main as vipu_server

DOC = Path(__file__).resolve().parents[2] / "docs" / "security.md"
SECURITY_WORDS = ("secure", "init", "tls", "insecure", "default-user-id", "admin-key")


def options(command: click.Command) -> list[str]:
    return [
        name
        for param in command.params
        if isinstance(param, click.Option)
        for name in param.opts
        if name.startswith("--") and any(word in name for word in SECURITY_WORDS)
    ]


@pytest.mark.parametrize("option", options(vipu_server) + options(vipu_agent))
def test_every_security_option_is_documented(option: str) -> None:
    """The option appears as itself (``--tls`` is not found inside ``--tls-init``)."""
    assert re.search(rf"(?<![\w-]){re.escape(option)}(?![\w-])", DOC.read_text()), option


def test_the_option_lists_are_not_empty() -> None:
    """Guard against the filter above silently matching nothing."""
    assert "--tls-client-auth" in options(vipu_server)
    assert "--tls-cert" in options(vipu_agent)
