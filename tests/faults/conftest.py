"""Fixtures of the fault suite: one emulated POD16 shared by the agent and IPU fault tests.

The pod is a real ``vipu-server`` (SQLite, the embedded default) and four
``vipu-agent`` processes of one machine each (``ag1``..``ag4``), so a test
can kill, hang or restart one machine's agent without touching the others.
``--agent-timeout 2`` keeps the slow-agent test short. Starting processes
costs seconds on a shared machine, so the pod lives for the whole package
and :func:`pod` puts it back in order before every test: no partitions, no
faults, every agent process alive, answering and reachable.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial

import grpc
import pytest

from vpod.wire import admin_pb2 as apb
from vpod.wire import admin_pb2_grpc as apb_grpc

from .live import LivePod, UserClient, agent_states, build_pod, clear_all, wait_until

AGENT_TIMEOUT_S = 2.0


@dataclass
class FaultPod:
    """The shared pod, with a user-API client and an admin-API stub on its controller."""

    live: LivePod
    user: UserClient
    admin: apb_grpc.AdminServiceStub

    def online(self, agent_id: str) -> bool:
        return agent_states(self.admin)[agent_id].state == apb.AGENT_ONLINE

    def healthy(self) -> bool:
        """Every agent online with no fault in the controller's view (its last heartbeat)."""
        agents = agent_states(self.admin)
        return all(
            agents[a].state == apb.AGENT_ONLINE and not agents[a].faults
            for a in self.live.agent_ids
        )

    def offline(self, agent_id: str) -> bool:
        return agent_states(self.admin)[agent_id].state == apb.AGENT_OFFLINE


@pytest.fixture(scope="package")
def fault_pod(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FaultPod]:
    workdir = tmp_path_factory.mktemp("faultpod")
    url = f"sqlite:///{workdir / 'vpod.db'}"
    live = build_pod(
        workdir,
        url,
        machines=4,
        agents_per_process=1,
        controller_options=("--agent-timeout", str(AGENT_TIMEOUT_S)),
    )
    try:
        yield FaultPod(live, live.controller.user(), live.controller.admin())
    finally:
        live.close()


def _cleared(pod: FaultPod, agent_id: str) -> bool:
    try:
        clear_all(pod.admin, agent_id)
    except grpc.RpcError:
        return False
    return True


@pytest.fixture
def pod(fault_pod: FaultPod) -> FaultPod:
    """The shared pod, emptied and healed: every test starts from a healthy, idle pod."""
    live = fault_pod.live
    for proc in live.agents:
        if not proc.child.alive():
            proc.restart(live.controller.admin_address)
        else:
            proc.resume()
    for agent_id in live.agent_ids:
        # A restarted agent may need a moment before the controller's channel reconnects.
        wait_until(partial(_cleared, fault_pod, agent_id), f"faults of {agent_id} cleared")
    fault_pod.user.remove_all()
    wait_until(
        lambda: fault_pod.healthy() and not fault_pod.user.ids(),
        "the shared pod is healthy and empty before the test",
    )
    return fault_pod
