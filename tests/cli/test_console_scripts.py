"""The installed console scripts, run as real processes against the controller double."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import grpc
import pytest

from tests.cli.conftest import endpoint_env, table_rows
from tests.cli.fake_controller import FakeState, RunningFake, serve
from tests.cli.test_tls import issue_certificate
from tests.ports import free_port

BIN = Path(sys.executable).parent


def run(
    program: str, *args: str, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """Run .venv/bin/<program>; GRPC_VERBOSITY is left unset to test the CLI's own default."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("VIPU_CLI_", "GRPC_"))}
    return subprocess.run(
        [str(BIN / program), *args],
        env={**base, **(env or {})},
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.fixture(autouse=True)
def _installed() -> None:
    if not (BIN / "vipu").exists() or not (BIN / "vipu-admin").exists():
        pytest.skip("the vipu console scripts are not installed in this environment")


def test_help_of_both_scripts() -> None:
    """--help works and shows examples; exit 0."""
    vipu = run("vipu", "--help")
    admin = run("vipu-admin", "--help")
    assert (vipu.returncode, admin.returncode) == (0, 0)
    assert "vipu create partition training --size 16" in vipu.stdout
    assert "vipu-admin create user alice" in admin.stdout


def test_partition_round_trip(fake: RunningFake) -> None:
    """server version, create, list and remove through the real executable."""
    env = endpoint_env(fake)
    version = run("vipu", "--server-version", env=env)
    assert version.stdout == f"version: 1.18.0\nhost: 127.0.0.1:{fake.user_port}\n"
    assert run("vipu", "create", "partition", "p1", "--size", "4", env=env).returncode == 0
    listed = run("vipu", "list", "partitions", env=env)
    assert table_rows(listed.stdout)[1] == ["p1", "c1", "1", "-", "DNC", "4", "1", "ACTIVE"]
    removed = run("vipu", "remove", "partition", "p1", env=env)
    assert (removed.returncode, removed.stdout) == (0, "remove partition (p1): success.\n")


def test_errors_are_one_line_with_exit_status() -> None:
    """Unreachable controller: exit 1; usage error: exit 2; one stderr line each, no traceback."""
    port = free_port()
    down = run("vipu", "--api-port", str(port), "list", "partitions")
    assert down.returncode == 1
    assert down.stderr == (
        f"vipu: error: cannot reach the V-IPU controller at localhost:{port}: connection refused;"
        " is it running? (check --api-host/--api-port or vipu-cli.hcl)\n"
    )
    usage = run("vipu-admin", "create", "allocation", "a1", "--cluster", "c", "--size", "many")
    assert usage.returncode == 2
    assert usage.stderr.startswith("vipu-admin: error: Invalid value for '--size': 'many'")
    assert len(usage.stderr.splitlines()) == 1


def test_created_user_config_works_for_vipu(fake: RunningFake, tmp_path: Path) -> None:
    """vipu-admin create user writes ./ID.vipu-cli.hcl; vipu --config with it gets in."""
    created = run("vipu-admin", "create", "user", "dana", env=endpoint_env(fake), cwd=tmp_path)
    assert created.returncode == 0, created.stderr
    assert "access key: key-of-dana" in created.stdout
    fake.state.credentials = ("dana", "key-of-dana")
    listed = run("vipu", "--config", "dana.vipu-cli.hcl", "list", "partitions", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr


def test_grpc_core_logs_stay_off_stderr(tmp_path: Path) -> None:
    """A TLS handshake failure gives our one line only, not gRPC core's own log line."""
    ca = issue_certificate("CA", None, ca=True)
    server = issue_certificate("controller", ca)
    stranger = tmp_path / "stranger.pem"
    stranger.write_bytes(issue_certificate("another CA", None, ca=True).cert)
    credentials = grpc.ssl_server_credentials([(server.key, server.cert)])
    with serve(FakeState(), server_credentials=credentials) as fake:
        env = {**endpoint_env(fake), "VIPU_CLI_TLS_CA": str(stranger)}
        result = run("vipu", "list", "partitions", env=env)
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        f"vipu: error: cannot reach the V-IPU controller at 127.0.0.1:{fake.user_port}:"
        " the controller's certificate is not signed by tls-ca; check tls-ca, tls-cert and tls-key"
    ]


REPO = Path(__file__).resolve().parents[2]
PROGRAMS = sorted(tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"])
"""Every console script vpod installs, click's and argparse's and the Slurm hooks' alike."""


def _help_into(program: str, stdout: int) -> subprocess.CompletedProcess[str]:
    """``program --help`` with its output into the file descriptor ``stdout``."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("VIPU_CLI_", "GRPC_"))}
    return subprocess.run(
        [str(BIN / program), "--help"],
        env=base,
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        timeout=60,
        check=False,
    )


def test_every_program_is_walked() -> None:
    assert {"vpod", "vipu", "vpod-slurm-prolog", "vpod-slurm-bridge", "vpod-run"} <= set(PROGRAMS)


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full on this system")
@pytest.mark.parametrize("program", PROGRAMS)
def test_output_that_cannot_be_written_is_one_line_not_a_traceback(program: str) -> None:
    # /dev/full refuses every write (ENOSPC), as a full disk under `> out.txt` does
    with open("/dev/full", "w") as full:
        done = _help_into(program, full.fileno())
    assert done.returncode == 1
    assert done.stderr == f"{program}: error: No space left on device\n"


@pytest.mark.parametrize("program", PROGRAMS)
def test_a_reader_that_leaves_early_ends_the_program_quietly(program: str) -> None:
    """``program --help | head``, the reader gone before the help is written: exit 1 with
    nothing on stderr (no traceback, no error line), as a program killed by SIGPIPE."""
    read_end, write_end = os.pipe()
    os.close(read_end)  # nobody will read: the first write fails with EPIPE
    try:
        done = _help_into(program, write_end)
    finally:
        os.close(write_end)
    assert (done.returncode, done.stderr) == (1, "")


def _result_into(stdout: int) -> subprocess.CompletedProcess[str]:
    """A program printing its result as ``vpod-slurm-reconcile`` does, into ``stdout``."""
    program = (
        "from vpod.client.command_line import BoundedArgumentParser\n"
        "BoundedArgumentParser(prog='demo').print_result('{\"removed\": []}')\n"
    )
    return subprocess.run(
        [sys.executable, "-c", program],
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full on this system")
def test_a_result_that_cannot_be_written_is_one_line_or_quiet() -> None:
    """The argparse programs print their results as they print their help: a full disk is one
    line and status 1, a reader gone (``| head``) a quiet status 1, never a traceback."""
    with open("/dev/full", "w") as full:
        done = _result_into(full.fileno())
    assert (done.returncode, done.stderr) == (1, "demo: error: No space left on device\n")
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = _result_into(write_end)
    finally:
        os.close(write_end)
    assert (done.returncode, done.stderr) == (1, "")
