"""Fault.of_kind keeps only the target a fault's kind uses (one rule for gRPC and REST)."""

from __future__ import annotations

import pytest

from vpod.agent.model import Fault, FaultKind

TARGETS = {"device_id": 2, "link_id": "ipulink3", "delay_s": 1.5, "reason": "drill"}


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        (FaultKind.IPU, Fault(FaultKind.IPU, device_id=2, reason="drill")),
        (FaultKind.LINK_DOWN, Fault(FaultKind.LINK_DOWN, link_id="ipulink3", reason="drill")),
        (FaultKind.AGENT_SLOW, Fault(FaultKind.AGENT_SLOW, delay_s=1.5, reason="drill")),
        (FaultKind.AGENT_HANG, Fault(FaultKind.AGENT_HANG, reason="drill")),
    ],
)
def test_only_the_kinds_own_target_is_kept(kind: FaultKind, expected: Fault) -> None:
    assert Fault.of_kind(kind, **TARGETS) == expected
