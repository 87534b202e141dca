"""A command line that cannot be parsed gets one short error, whatever it was given.

click and argparse repeat a bad value in full, so a 10,000-character argument made a
10,000-character error. Every console script vpod installs is run as a real process with
an option it does not have, 10,000 characters long, and some with a typed option given
such a value: each exits 2 and quotes at most an excerpt (docs/cli.md, "Errors").
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.console_scripts import scripts

BIN = Path(sys.executable).parent
HUGE = "7" + "x" * 10_000
MAX_ERROR_BYTES = 1_500
"""The usage line, a hint and a bounded message fit well within this."""

NO_COMMAND_LINE = {
    "vpod-slurm-prolog": "a Slurm hook: Slurm runs it with no options (its settings file is"
    " its only argument)",
    "vpod-slurm-epilog": "a Slurm hook, as vpod-slurm-prolog",
    "vpod-slurm-task-prolog": "a Slurm hook, as vpod-slurm-prolog",
}


CLOUD = {"VPOD_URL": "http://127.0.0.1:9", "VPOD_TOKEN": "vpod_0123.unused"}
"""A cloud endpoint nothing answers at: the commands must refuse their input before calling."""


def _run(*argv: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [str(BIN / argv[0]), *argv[1:]],
        env={**os.environ, **CLOUD},
        capture_output=True,
        timeout=60,
        check=False,
        stdin=subprocess.DEVNULL,
    )


def _installed() -> list[str]:
    names = sorted(scripts())
    return [n for n in names if n not in NO_COMMAND_LINE]


def test_every_script_is_checked_or_excused() -> None:
    names = set(scripts())
    assert set(NO_COMMAND_LINE) <= names
    assert len(_installed()) >= 10


@pytest.mark.parametrize("script", _installed())
def test_an_unknown_huge_option_gets_a_short_usage_error(script: str) -> None:
    answer = _run(script, f"--{HUGE}")
    assert answer.returncode == 2, answer.stderr[-300:]
    assert len(answer.stderr) + len(answer.stdout) < MAX_ERROR_BYTES, answer.stderr[:300]
    assert b"xxxxx" in answer.stderr  # it still quotes the start of what was given


@pytest.mark.parametrize(
    "argv",
    [
        ("vipu", "create", "partition", "p1", "--size", HUGE),
        ("vipu-admin", "create", "cluster", "c1", "--num-ipulinkdomains", HUGE),
        ("vipu", HUGE),
        ("vpod", HUGE),
        ("vipu-server", "--port", HUGE),
        ("vipu-agent", "--machines", HUGE),
        ("vpod-gpu-agent", "--interval", HUGE),
        ("ipu-monitor", "--watch", HUGE),
        ("vpod-run", "--num-instances", HUGE, "true"),
        ("vpod", "keypair", "create", HUGE),
    ],
    ids=lambda argv: " ".join(a if len(a) < 20 else "HUGE" for a in argv),
)
def test_a_huge_value_is_quoted_as_an_excerpt(argv: tuple[str, ...]) -> None:
    answer = _run(*argv)
    assert answer.returncode == 2, answer.stderr[-300:]
    assert len(answer.stderr) + len(answer.stdout) < MAX_ERROR_BYTES, answer.stderr[:300]
    assert b"characters)" in answer.stderr  # the excerpt says how long the value was
