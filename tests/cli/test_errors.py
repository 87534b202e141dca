"""Failures: one line on stderr that says what to fix, and the documented exit status."""

from __future__ import annotations

from pathlib import Path

import grpc
import pytest

from tests.cli.conftest import Run
from tests.cli.fake_controller import RunningFake
from tests.ports import free_port
from vpod.cli.errors import run_cli


def one_error_line(stderr: str, prog: str = "vipu") -> str:
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith(f"{prog}: error: ")
    assert "Traceback" not in stderr
    return lines[0].removeprefix(f"{prog}: error: ")


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["create", "partition", "p1", "--size", "abc"], "'abc' is not a whole number"),
        (["create", "partition", "p1", "--size", "0"], "0 is too small: use 1 or more"),
        (["create", "partition", "p1"], "Missing option '--size'"),
        (["create", "partition", "p1", "--size", "4", "--sync-type", "x"], "unknown sync type"),
        (
            ["create", "partition", "p1", "--size", "4", "--sync-type", "gs2-independent-rails"],
            "is not supported",
        ),
        (["list", "partition"], "No such command 'partition'"),
        (["--api-port", "99999", "list", "partitions"], "'--api-port'"),
        (["get", "partition"], "Missing argument 'ID'"),
    ],
)
def test_usage_errors_exit_2_with_one_line(vipu: Run, args: list[str], fragment: str) -> None:
    """Bad or missing arguments: exit 2, one line naming the problem and the help to read."""
    result = vipu(*args)
    assert result.exit_code == 2
    line = one_error_line(result.stderr)
    assert fragment in line
    assert line.endswith("--help')")
    assert result.stdout == ""


def test_incomplete_command_shows_its_help(vipu: Run) -> None:
    """'vipu create' alone lists what can be created, on stderr, exit 2."""
    result = vipu("create")
    assert result.exit_code == 2
    assert "partition  Create partition ID" in result.stderr


def test_server_invalid_argument_exits_2_with_its_sentence(vipu: Run) -> None:
    """INVALID_ARGUMENT is a usage error too: the fix is in the command line."""
    result = vipu("create", "partition", "p1", "--size", "3")
    assert result.exit_code == 2
    assert one_error_line(result.stderr) == (
        "a partition of 3 IPUs is not possible: use 1, 2, 4, 8, 16, 64 or a multiple of 64"
    )


@pytest.mark.parametrize(
    "code",
    [
        grpc.StatusCode.NOT_FOUND,
        grpc.StatusCode.ALREADY_EXISTS,
        grpc.StatusCode.RESOURCE_EXHAUSTED,
        grpc.StatusCode.FAILED_PRECONDITION,
        grpc.StatusCode.PERMISSION_DENIED,
        grpc.StatusCode.UNAVAILABLE,
        grpc.StatusCode.INTERNAL,
    ],
)
def test_other_server_errors_exit_1_with_the_servers_sentence(
    vipu: Run, fake: RunningFake, code: grpc.StatusCode
) -> None:
    """The controller's sentence is shown as it is, also its own UNAVAILABLE (agents down)."""
    sentence = f"the controller says {code.name.lower()}: do something about it"
    fake.state.fail_next["ListPartitions"] = (code, sentence)
    result = vipu("list", "partitions")
    assert result.exit_code == 1
    assert one_error_line(result.stderr) == sentence


def test_real_not_found_and_already_exists(vipu: Run) -> None:
    """Errors from the double's model, not injected ones, come through the same way."""
    assert one_error_line(vipu("remove", "partition", "nope").stderr) == (
        "partition nope does not exist: see vipu list partitions"
    )
    vipu("create", "partition", "p1", "--size", "4")
    again = vipu("create", "partition", "p1", "--size", "4")
    assert again.exit_code == 1
    assert one_error_line(again.stderr) == "partition p1 exists already"


def test_unreachable_controller(vipu: Run) -> None:
    """Nothing listening: exit 1, 'cannot reach ... is it running? (check ...)'."""
    port = free_port()
    result = vipu("list", "partitions", "--api-port", str(port))
    assert result.exit_code == 1
    assert one_error_line(result.stderr) == (
        f"cannot reach the V-IPU controller at 127.0.0.1:{port}: connection refused;"
        " is it running? (check --api-host/--api-port or vipu-cli.hcl)"
    )


def test_unreachable_user_endpoint_for_allocations_names_the_user_keys(vipu: Run) -> None:
    """'vipu list allocations' talks to the user port, as every vipu command: the hint says
    how to set that one."""
    port = free_port()
    result = vipu("list", "allocations", "--api-port", str(port))
    assert result.exit_code == 1
    assert one_error_line(result.stderr) == (
        f"cannot reach the V-IPU controller at 127.0.0.1:{port}: connection refused;"
        " is it running? (check --api-host/--api-port or vipu-cli.hcl)"
    )


def test_deadline_of_a_live_controller(vipu: Run, fake: RunningFake) -> None:
    """A controller that does not answer in time: say so and suggest --timeout."""
    fake.state.hang.add("ListPartitions")
    result = vipu("list", "partitions", "--timeout", "0.3")
    fake.state.release.set()
    assert result.exit_code == 1
    assert one_error_line(result.stderr) == (
        f"the V-IPU controller at 127.0.0.1:{fake.user_port} did not answer within 0.3 s:"
        " raise --timeout, or look at the controller's log"
    )


def test_wrong_endpoint_says_so(vipu: Run, fake: RunningFake) -> None:
    """vipu pointed at the admin port (no UserService there): UNIMPLEMENTED, explained."""
    result = vipu("list", "partitions", "--api-port", str(fake.admin_port))
    assert result.exit_code == 1
    assert "does not serve this call" in one_error_line(result.stderr)


def test_broken_config_file_is_a_usage_error(vipu: Run, tmp_path: Path) -> None:
    """A config line that cannot be parsed: exit 2 with file:line."""
    config = tmp_path / "bad.hcl"
    config.write_text('api-host="ok"\napi-port 8090\n')
    result = vipu("--config", str(config), "list", "partitions")
    assert result.exit_code == 2
    assert one_error_line(result.stderr).startswith(f"{config}:2: expected key")


def test_bad_environment_value_is_a_usage_error(vipu: Run) -> None:
    """VIPU_CLI_API_PORT=http: exit 2 naming the variable."""
    result = vipu("list", "partitions", env={"VIPU_CLI_API_PORT": "http"})
    assert result.exit_code == 2
    assert one_error_line(result.stderr) == "VIPU_CLI_API_PORT must be a port number, not 'http'"


def test_missing_tls_ca_file_is_a_usage_error(vipu: Run, tmp_path: Path) -> None:
    """tls-ca naming no file: exit 2 before any call."""
    result = vipu("list", "partitions", env={"VIPU_CLI_TLS_CA": str(tmp_path / "none.pem")})
    assert result.exit_code == 2
    assert one_error_line(result.stderr).startswith("cannot read tls-ca file")


def test_bug_prints_one_line_not_a_traceback(vipu: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    """An unexpected exception still ends in one line and exit 1."""

    def explode(*_args: object) -> object:
        raise RuntimeError("boom")

    monkeypatch.setattr("vpod.cli.vipu_main.partition_row", explode)
    vipu("create", "partition", "p1", "--size", "4")
    result = vipu("list", "partitions")
    assert result.exit_code == 1
    assert one_error_line(result.stderr).startswith("internal error: RuntimeError: boom;")


@pytest.mark.parametrize(
    ("error", "line"),
    [
        (FileNotFoundError(2, "No such file or directory", "/proc/x"), "/proc/x: No such file"),
        (
            PermissionError(13, "Permission denied", "/a", None, "/b"),
            "/a -> /b: Permission denied",
        ),
        (OSError("address in use"), "address in use"),
    ],
)
def test_a_launcher_names_the_file_an_os_error_is_about(
    error: OSError, line: str, capsys: pytest.CaptureFixture[str]
) -> None:
    def body() -> None:
        raise error

    with pytest.raises(SystemExit) as stopped:
        run_cli(body)
    assert stopped.value.code == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: {line}")
    assert "Errno" not in err
    assert err.count("\n") == 1
