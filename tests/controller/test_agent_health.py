"""What the controller remembers of each agent between heartbeats (AgentHealthBook)."""

from __future__ import annotations

from vpod.agent.model import IpuHealth, LinkHealth, LinkKind, MachineHealth
from vpod.controller.agent_health import AgentHealthBook
from vpod.domain.entities import Cluster, default_gw_topology
from vpod.store.records import AgentHealthState


def _health(agent_id: str, *, sick_ipu: int | None = None, gw_down: bool = False) -> MachineHealth:
    ipus = tuple(
        IpuHealth(device_id=d, healthy=d != sick_ipu, fault="overheating" if d == sick_ipu else "")
        for d in range(4)
    )
    links = (
        LinkHealth("ipulink0", LinkKind.IPU_LINK, 0, True),
        LinkHealth("gwlink0", LinkKind.GW_LINK, None, not gw_down, "cable" if gw_down else ""),
    )
    return MachineHealth(agent_id=agent_id, boot_id="boot-1", ipus=ipus, links=links)


def test_silence_counts_from_the_first_question_and_resets_with_an_answer() -> None:
    book = AgentHealthBook()
    book.expecting("ag1", now=10.0)
    assert book.missed("ag1", now=10.0) == 0.0
    assert book.missed("ag1", now=13.5) == 3.5
    book.answered("ag1", now=14.0)
    assert book.missed("ag1", now=15.0) == 1.0


def test_an_agent_answers_steadily_after_two_heartbeats_in_a_row() -> None:
    """A registration alone does not count, and a missed heartbeat starts over."""
    book = AgentHealthBook()
    assert book.registered("ag1", "boot-1", "10.0.0.1", now=0.0)
    assert not book.steadily_answering("ag1")
    book.answered("ag1", now=1.0)
    assert not book.steadily_answering("ag1")
    book.answered("ag1", now=2.0)
    assert book.steadily_answering("ag1")
    book.missed("ag1", now=3.0)
    assert not book.steadily_answering("ag1")


def test_a_registration_says_whether_the_agent_rebooted() -> None:
    book = AgentHealthBook()
    assert book.registered("ag1", "boot-1", "10.0.0.1", now=0.0)
    assert not book.registered("ag1", "boot-1", "", now=1.0)
    assert book.registered("ag1", "boot-2", "", now=2.0)
    assert (book.boot_id("ag1"), book.ipuof_address("ag1")) == ("boot-2", "10.0.0.1")


def test_belief_in_reachability_is_recorded_with_the_previous_one() -> None:
    book = AgentHealthBook()
    assert book.believed("ag1") is None
    assert book.believe("ag1", AgentHealthState.UNREACHABLE) is None
    assert book.believe("ag1", AgentHealthState.REACHABLE) is AgentHealthState.UNREACHABLE
    assert book.believed("ag1") is AgentHealthState.REACHABLE


def test_faults_change_only_when_the_heartbeat_says_something_new() -> None:
    """A faulty IPU leaves placement at its slot; a GW-Link down is a machine fault."""
    book = AgentHealthBook()
    assert not book.note_health("ag2", _health("ag2"))
    assert book.note_health("ag2", _health("ag2", sick_ipu=1))
    assert not book.note_health("ag2", _health("ag2", sick_ipu=1))
    assert book.device_faults("ag2") == {1: "IPU 1 of agent ag2 failed: overheating"}
    cluster = Cluster(id="c", agent_ids=("ag1", "ag2"), gw_topology=default_gw_topology(2))
    assert book.faulty_slots(cluster) == frozenset({cluster.pod().slot_of_device(1, 1)})
    assert book.note_health("ag2", _health("ag2", gw_down=True))
    assert book.device_faults("ag2") == {}
    assert book.machine_link_faults("ag2") == ["gwlink0 of agent ag2 is down: cable"]
