"""The ``vipu-agent`` console script: starts agents, prints one ready line, stops on SIGTERM."""

from __future__ import annotations

import asyncio
import re
import signal
import sys
from pathlib import Path

import pytest

from vpod.agent.client import ChannelPool
from vpod.launch.agent_main import main

VIPU_AGENT = Path(sys.executable).parent / "vipu-agent"


@pytest.mark.e2e
@pytest.mark.anyio
async def test_console_script_serves_and_stops_on_sigterm(tmp_path: Path) -> None:
    """Two machines in one process answer gRPC to their --key-file key; SIGTERM ends the
    process with status 0."""
    key = "k" * 40
    (tmp_path / "agent.key").write_text(key + "\n")
    proc = await asyncio.create_subprocess_exec(
        str(VIPU_AGENT),
        "--key-file",
        str(tmp_path / "agent.key"),
        "--machines",
        "2",
        "--id-prefix",
        "cli",
        "--address-base",
        "127.85.0.1",
        "--agent-port",
        "0",
        "--ipuof-server-port",
        "0",
        "--ipuof-rdma-port",
        "0",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        assert proc.stdout is not None
        line = (await asyncio.wait_for(proc.stdout.readline(), timeout=60)).decode()
        agents = dict(re.findall(r"(\S+)=(\S+)", line))
        assert line.startswith("vipu-agent ready: ")
        assert list(agents) == ["cli1", "cli2"]
        assert agents["cli2"].startswith("127.85.0.2:")
        async with ChannelPool() as pool:
            for agent_id, address in agents.items():
                ident = await pool.client(address, key=key).get_identity()
                assert (ident.agent_id, ident.management_address) == (agent_id, address)
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGTERM)
        _, err = await asyncio.wait_for(proc.communicate(), timeout=60)
    assert proc.returncode == 0, err.decode()


def test_conflicting_address_options_are_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["--address-base", "127.1.0.1", "--single-address", "127.0.0.1"])
    assert status == 2
    assert "not both" in capsys.readouterr().err


def test_bad_plan_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["--machines", "20", "--address-base", "127.255.255.250"])
    assert status == 2
    assert "leave 127.0.0.0/8" in capsys.readouterr().err


@pytest.mark.parametrize("count", ["0", "1025", str(2**70)])
def test_a_machine_count_no_pod_has_is_a_usage_error(
    count: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # 2**70 machines used to be planned one by one, and the agent never started nor said why
    assert main(["--machines", count]) == 2
    assert "'--machines'" in capsys.readouterr().err


def test_unknown_machine_type_lists_the_known_ones(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--machine-type", "c600"]) == 2
    assert "IPU-M2000" in capsys.readouterr().err


def test_help_lists_the_address_options(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for option in ("--machines", "--address-base", "--single-address", "--register"):
        assert option in out
