"""docs/agent-protocol.md stays complete: every rpc, fault kind, event kind and reason is there."""

from __future__ import annotations

from pathlib import Path

import pytest

from vpod.agent.errors import Reason
from vpod.wire import agent_pb2

DOC = Path(__file__).resolve().parents[2] / "docs" / "agent-protocol.md"
TEXT = DOC.read_text()
RPCS = [m.name for m in agent_pb2.DESCRIPTOR.services_by_name["AgentService"].methods]


@pytest.mark.parametrize("rpc", RPCS)
def test_every_rpc_has_a_section(rpc: str) -> None:
    assert f"### {rpc}" in TEXT or f"### InjectFault / {rpc}" in TEXT


@pytest.mark.parametrize(
    "name",
    [v.name for v in agent_pb2.FaultKind.DESCRIPTOR.values if v.number]
    + [v.name.removeprefix("EVENT_") for v in agent_pb2.EventKind.DESCRIPTOR.values if v.number],
)
def test_every_fault_and_event_kind_is_documented(name: str) -> None:
    assert f"`{name}`" in TEXT


@pytest.mark.parametrize("reason", [r.value for r in Reason if r is not Reason.UNKNOWN])
def test_every_refusal_reason_is_documented(reason: str) -> None:
    assert f"`{reason}`" in TEXT
