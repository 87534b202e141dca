"""Every number and time a ``vipu`` or ``vipu-admin`` option takes is checked where it is
parsed: a value the V-IPU wire cannot carry (``2**70`` in a ``uint32``, a time that leaves
years 1 to 9999 once in UTC, an age reaching back before year 1) is a usage error (exit 2,
one line saying what to give), never an internal error on the way out.

The commands and options are found by walking both command trees, so a new option is
covered by being declared with these types."""

from __future__ import annotations

import importlib
from collections.abc import Iterator

import click
import pytest
from click.testing import CliRunner

from tests.cli.test_cli_docs import COMMANDS, ROOTS
from vpod.cli.vipu_admin_events import Moment
from vpod.cli.vipu_group import WholeNumber
from vpod.client.command_line import FiniteFloatRange
from vpod.client.wire_values import UINT32_MAX

TOO_LARGE = [str(2**70), str(UINT32_MAX + 1), "9" * 5000]
TIMES_OUT_OF_RANGE = [
    "0001-01-01T00:00:00+14:00",  # before year 1 in UTC
    "9999-12-31T23:59:59-14:00",  # after year 9999 in UTC
    "99999999999w",  # an age past what a timedelta holds
    "9" * 400 + "s",  # an age of infinite seconds
    "3000000d",  # an age reaching back before year 1
]


def _options_of(kind: type[click.ParamType]) -> list[tuple[str, str]]:
    found = [
        (path, option.opts[0])
        for path, (command, _) in COMMANDS.items()
        for option in command.params
        if isinstance(option, click.Option) and isinstance(option.type, kind)
    ]
    return sorted(found)


NUMBER_OPTIONS = _options_of(WholeNumber)
TIME_OPTIONS = _options_of(Moment)


def _run(path: str, option: str, value: str) -> tuple[int, str]:
    """Run the command at ``path`` with ``option value`` (and a stand-in for each of its
    arguments), pointed at an address where nothing listens: a value refused while parsing
    never gets that far."""
    root, *names = path.split(" ")
    command, _ = COMMANDS[path]
    arguments = ["x" for param in command.params if isinstance(param, click.Argument)]
    result = CliRunner().invoke(
        ROOTS[root],
        [*names, *arguments, option, value],
        env={"VIPU_CLI_API_HOST": "127.0.0.1", "VIPU_CLI_API_PORT": "9", "VIPU_CLI_TIMEOUT": "2"},
        prog_name=root,
    )
    return result.exit_code, result.stderr


def _one_usage_line(code: int, stderr: str, option: str, max_chars: int) -> str:
    """The one line a usage error prints, checked: exit 2, it names ``option``, it is short."""
    assert code == 2, stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert len(lines[0]) < max_chars
    assert option in lines[0]
    return lines[0]


def test_the_walk_found_the_options() -> None:
    # a walk that found nothing would pass every case below
    paths = {path for path, _ in NUMBER_OPTIONS}
    assert {"vipu create partition", "vipu-admin create allocation"} <= paths
    assert ("vipu-admin list events", "--since") in TIME_OPTIONS


@pytest.mark.parametrize("value", TOO_LARGE, ids=["2^70", "uint32+1", "5000-digits"])
@pytest.mark.parametrize(
    ("path", "option"), NUMBER_OPTIONS, ids=[" ".join(o) for o in NUMBER_OPTIONS]
)
def test_a_number_beyond_the_wire_is_a_usage_error(path: str, option: str, value: str) -> None:
    code, stderr = _run(path, option, value)
    line = _one_usage_line(code, stderr, option, 300)
    assert "too large: use at most" in line
    assert "internal error" not in stderr


@pytest.mark.parametrize(
    ("path", "option"), NUMBER_OPTIONS, ids=[" ".join(o) for o in NUMBER_OPTIONS]
)
def test_a_negative_number_is_a_usage_error(path: str, option: str) -> None:
    code, stderr = _run(path, option, "-1")
    assert code == 2, stderr
    assert "too small: use" in stderr
    assert "internal error" not in stderr


@pytest.mark.parametrize("value", TIMES_OUT_OF_RANGE)
@pytest.mark.parametrize(("path", "option"), TIME_OPTIONS, ids=[" ".join(o) for o in TIME_OPTIONS])
def test_a_time_outside_years_1_to_9999_is_a_usage_error(
    path: str, option: str, value: str
) -> None:
    code, stderr = _run(path, option, value)
    line = _one_usage_line(code, stderr, option, 400)
    assert "out of range" in line or "before year 1" in line


@pytest.mark.parametrize(
    "value", ["0001-01-01T00:00:00", "9999-12-31T23:59:59.999999", "0001-01-01T00:00:00-01:00"]
)
def test_times_at_the_edge_that_fit_are_taken(value: str) -> None:
    parsed = Moment().convert(value, None, None)
    assert parsed.utcoffset() is not None
    assert parsed.year in (1, 9999)


# -- every program vpod installs: fractional numbers are finite, deadlines bounded -----------

PROGRAMS: dict[str, str] = {
    "vpod": "vpod.cli.vpod_main:cli",
    "vipu": "vpod.cli.vipu_main:cli",
    "vipu-admin": "vpod.cli.vipu_admin_main:cli",
    "vipu-server": "vpod.launch.server_main:main",
    "vipu-agent": "vpod.launch.agent_main:cli",
    "vpod-gpu-agent": "vpod.launch.gpu_agent_main:cli",
    "ipu-info": "vpod.ipuof.tools:info_main",
    "ipu-monitor": "vpod.ipuof.tools:monitor_main",
    "vpod-workload": "vpod.ipuof.workload:main",
    "vpod-run": "vpod.ipuof.launcher:main",
}


def _program(name: str) -> click.Command:
    module, attribute = PROGRAMS[name].split(":")
    command = getattr(importlib.import_module(module), attribute)
    assert isinstance(command, click.Command), name
    return command


def _walk(
    command: click.Command, path: list[str], ctx: click.Context | None
) -> Iterator[tuple[list[str], click.Command]]:
    yield path, command
    if isinstance(command, click.Group):
        own = click.Context(command, info_name=path[-1] if path else None, parent=ctx)
        for name in command.list_commands(own):
            sub = command.get_command(own, name)
            if sub is not None:
                yield from _walk(sub, [*path, name], own)


FLOAT_TYPES: dict[tuple[str, str, str], click.ParamType] = {
    (program, " ".join(path), option.opts[0]): option.type
    for program in PROGRAMS
    for path, command in _walk(_program(program), [], None)
    for option in command.params
    if isinstance(option, click.Option) and isinstance(option.type, click.FloatRange)
}
FLOAT_OPTIONS = sorted(FLOAT_TYPES)


def test_every_fractional_option_refuses_nan_and_the_infinities() -> None:
    assert len(FLOAT_OPTIONS) >= 6  # the walk reached the programs' options
    plain = [o for o, kind in FLOAT_TYPES.items() if not isinstance(kind, FiniteFloatRange)]
    assert plain == []


@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
@pytest.mark.parametrize(
    ("program", "path", "option"), FLOAT_OPTIONS, ids=[" ".join(o) for o in FLOAT_OPTIONS]
)
def test_nan_or_an_infinity_is_a_usage_error(
    program: str, path: str, option: str, value: str
) -> None:
    arguments = path.split()
    result = CliRunner().invoke(_program(program), [*arguments, f"{option}={value}"])
    assert result.exit_code == 2, result.output
    assert f"Invalid value for '{option}'" in result.output


@pytest.mark.parametrize("value", ["inf", "1e10", str(7 * 86400 + 1)])
def test_a_deadline_past_a_week_is_a_usage_error(value: str) -> None:
    code, stderr = _run("vipu list partitions", "--timeout", value)
    assert code == 2, stderr
    assert "too long: use at most 604800" in stderr


def test_a_deadline_past_a_week_in_the_environment_is_a_usage_error() -> None:
    result = CliRunner().invoke(
        ROOTS["vipu"], ["list", "partitions"], env={"VIPU_CLI_TIMEOUT": "inf"}, prog_name="vipu"
    )
    assert result.exit_code == 2, result.stderr
    assert "VIPU_CLI_TIMEOUT must be a positive number of seconds, at most 604800" in result.stderr
