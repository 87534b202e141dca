"""`vipu-server -a/--autodiscovery-listen-interfaces` (spec §6): agents announce themselves on
the named interfaces, where nothing but registration is served."""

from __future__ import annotations

import re
from pathlib import Path

import grpc
import pytest

from tests.security.procs import run_tool, start_agents, start_server, wait_for_agents
from vpod.wire import admin_pb2 as apb
from vpod.wire import admin_pb2_grpc as apb_grpc

pytestmark = [pytest.mark.e2e]
T = 30.0


def test_agents_register_on_an_autodiscovery_interface(tmp_path: Path) -> None:
    """Admin API on 127.0.0.2 only; `-a lo` (127.0.0.1): agents told to register at
    127.0.0.1:ADMIN_PORT are admitted, and that listener answers no admin call."""
    server = start_server(tmp_path / "ctl", "--admin-host", "127.0.0.2", "-a", "lo", "--no-cloud")
    agents = None
    try:
        port = int(re.search(r"admin API 127\.0\.0\.2:(\d+)", server.ready_line)[1])  # type: ignore[index]
        agents = start_agents(f"127.0.0.1:{port}", 2, tmp_path / "agents.log")
        with grpc.insecure_channel(f"127.0.0.2:{port}") as admin_channel:
            wait_for_agents(apb_grpc.AdminServiceStub(admin_channel), (), agents.ids)
        with grpc.insecure_channel(f"127.0.0.1:{port}") as discovery:
            with pytest.raises(grpc.RpcError) as refused:
                apb_grpc.AdminServiceStub(discovery).ListAgents(apb.ListAgentsRequest(), timeout=T)
            assert refused.value.code() == grpc.StatusCode.UNIMPLEMENTED
    finally:
        if agents is not None:
            agents.stop()
        server.stop()


def test_an_unknown_interface_is_a_usage_error(tmp_path: Path) -> None:
    """One line naming the entry and the interfaces there are; exit 2, nothing served."""
    done = run_tool("vipu-server", "--data-dir", str(tmp_path), "-a", "lo,nosuch9")
    assert done.returncode == 2
    assert done.stderr.startswith("error: -a/--autodiscovery-listen-interfaces: 'nosuch9'")
    assert "interfaces here: " in done.stderr
    assert "lo" in done.stderr.split("interfaces here: ")[1]
    assert len(done.stderr.strip().splitlines()) == 1
