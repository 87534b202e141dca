"""Which detaches call for an automatic reset: the rule the heartbeat monitor applies to an
agent's event log (the whole log at first contact, then each new batch)."""

from __future__ import annotations

from vpod.agent.model import AgentEvent, EventKind
from vpod.controller.heartbeats import awaiting_reset

A, D, C, R, X = (
    EventKind.ATTACHED,
    EventKind.DETACHED,
    EventKind.CONFIGURED,
    EventKind.RESET,
    EventKind.RELEASED,
)


def _log(*entries: tuple[EventKind, str] | tuple[EventKind, str, bool]) -> list[AgentEvent]:
    events = []
    for n, entry in enumerate(entries, start=1):
        kind, pid, *rest = entry
        events.append(
            AgentEvent(sequence=n, kind=kind, time=float(n), partition_id=pid, evicted=bool(rest))
        )
    return events


def test_a_detach_nothing_followed_calls_for_a_reset() -> None:
    assert awaiting_reset(_log((C, "p"), (A, "p"), (D, "p"))) == {"p"}


def test_a_reset_release_reconfiguration_or_new_attach_supersedes_the_detach() -> None:
    for later in (R, X, C, A):
        assert awaiting_reset(_log((C, "p"), (A, "p"), (D, "p"), (later, "p"))) == set()


def test_an_eviction_by_the_agent_is_not_an_application_leaving() -> None:
    assert awaiting_reset(_log((C, "p"), (A, "p"), (D, "p", True))) == set()


def test_partitions_are_judged_apart_and_faults_do_not_count() -> None:
    events = _log((A, "p"), (A, "q"), (D, "p"), (D, "q"), (R, "q"))
    events.append(AgentEvent(sequence=9, kind=EventKind.FAULT_INJECTED, time=9.0, device_id=0))
    assert awaiting_reset(events) == {"p"}
