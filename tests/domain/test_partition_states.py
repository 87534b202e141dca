"""The partition state machine: every state x event either moves as listed or is refused."""

import pytest

from vpod.domain.errors import IllegalTransition
from vpod.domain.partition_states import (
    ABSENT,
    ALL_STATES,
    TRANSITIONS,
    Event,
    OperationState,
    PartitionState,
    ReadyState,
    allowed,
    allowed_events,
    auto_reset_due,
    reachable_states,
    transition,
)


def st(text: str) -> PartitionState:
    ready, operation = text.split("/")
    return PartitionState(ReadyState[ready], OperationState[operation])


# Written out by hand, independently of the module's table: the specification.
EXPECTED: dict[tuple[str, str], str] = {
    ("REMOVED/IDLE", "create_requested"): "PENDING/CREATING",
    ("REMOVED/FAILED", "create_requested"): "PENDING/CREATING",
    ("PENDING/CREATING", "configured"): "ACTIVE/IDLE",
    ("PENDING/CREATING", "configure_failed"): "REMOVED/FAILED",
    ("PENDING/CREATING", "force_remove_requested"): "PENDING/REMOVING",
    ("PENDING/REMOVING", "force_remove_requested"): "PENDING/REMOVING",
    ("PENDING/REMOVING", "removed"): "REMOVED/IDLE",
    ("PENDING/REMOVING", "remove_failed"): "ERROR/FAILED",
    ("ACTIVE/IDLE", "remove_requested"): "ACTIVE/REMOVING",
    ("ACTIVE/IDLE", "force_remove_requested"): "ACTIVE/REMOVING",
    ("ACTIVE/IDLE", "reset_requested"): "ACTIVE/RESETTING",
    ("ACTIVE/IDLE", "auto_reset_requested"): "ACTIVE/RESETTING",
    ("ACTIVE/IDLE", "fault_detected"): "ERROR/IDLE",
    ("ACTIVE/REMOVING", "force_remove_requested"): "ACTIVE/REMOVING",
    ("ACTIVE/REMOVING", "removed"): "REMOVED/IDLE",
    ("ACTIVE/REMOVING", "remove_failed"): "ERROR/FAILED",
    ("ACTIVE/REMOVING", "fault_detected"): "ERROR/REMOVING",
    ("ACTIVE/RESETTING", "force_remove_requested"): "ACTIVE/REMOVING",
    ("ACTIVE/RESETTING", "reset_done"): "ACTIVE/IDLE",
    ("ACTIVE/RESETTING", "reset_failed"): "ERROR/FAILED",
    ("ACTIVE/RESETTING", "fault_detected"): "ERROR/RESETTING",
    ("ERROR/IDLE", "remove_requested"): "ERROR/REMOVING",
    ("ERROR/IDLE", "force_remove_requested"): "ERROR/REMOVING",
    ("ERROR/IDLE", "reset_requested"): "ERROR/RESETTING",
    ("ERROR/IDLE", "auto_reset_requested"): "ERROR/RESETTING",
    ("ERROR/IDLE", "fault_detected"): "ERROR/IDLE",
    ("ERROR/IDLE", "relocate_requested"): "ERROR/RESETTING",
    ("ERROR/REMOVING", "force_remove_requested"): "ERROR/REMOVING",
    ("ERROR/REMOVING", "removed"): "REMOVED/IDLE",
    ("ERROR/REMOVING", "remove_failed"): "ERROR/FAILED",
    ("ERROR/REMOVING", "fault_detected"): "ERROR/REMOVING",
    ("ERROR/RESETTING", "force_remove_requested"): "ERROR/REMOVING",
    ("ERROR/RESETTING", "reset_done"): "ACTIVE/IDLE",
    ("ERROR/RESETTING", "reset_failed"): "ERROR/FAILED",
    ("ERROR/RESETTING", "fault_detected"): "ERROR/RESETTING",
    ("ERROR/RESETTING", "relocated"): "ACTIVE/IDLE",
    ("ERROR/RESETTING", "relocate_failed"): "ERROR/FAILED",
    ("ERROR/FAILED", "remove_requested"): "ERROR/REMOVING",
    ("ERROR/FAILED", "force_remove_requested"): "ERROR/REMOVING",
    ("ERROR/FAILED", "reset_requested"): "ERROR/RESETTING",
    ("ERROR/FAILED", "auto_reset_requested"): "ERROR/RESETTING",
    ("ERROR/FAILED", "fault_detected"): "ERROR/FAILED",
    ("ERROR/FAILED", "relocate_requested"): "ERROR/RESETTING",
}

EVERY_CELL = [(state, event) for state in ALL_STATES for event in Event]


def test_states_and_values_mirror_the_wire() -> None:
    """Ready and operation states carry the wire numbers (UNDEFINED = 0 is not a state)."""
    assert {s.name: s.value for s in ReadyState} == {
        "PENDING": 1,
        "ACTIVE": 2,
        "REMOVED": 3,
        "ERROR": 4,
    }
    assert {s.name: s.value for s in OperationState} == {
        "IDLE": 1,
        "CREATING": 2,
        "REMOVING": 3,
        "RESETTING": 4,
        "FAILED": 5,
    }
    assert len(ALL_STATES) == 20


def test_the_table_is_exactly_the_specification() -> None:
    """The module's table holds every listed move and nothing else."""
    got = {(str(s), e.value): str(n) for (s, e), n in TRANSITIONS.items()}
    assert got == EXPECTED


@pytest.mark.parametrize(("state", "event"), EVERY_CELL, ids=lambda v: str(v))
def test_every_state_and_event(state: PartitionState, event: Event) -> None:
    """Each of the 20 x 15 cells either transitions as specified or raises IllegalTransition."""
    expected = EXPECTED.get((str(state), event.value))
    assert allowed(state, event) == (expected is not None)
    if expected is not None:
        assert transition(state, event, partition_id="p1") == st(expected)
    else:
        with pytest.raises(IllegalTransition, match=r"^partition p1 is .+: .+ is not allowed"):
            transition(state, event, partition_id="p1")


@pytest.mark.parametrize(
    ("state", "event", "message"),
    [
        (
            "ACTIVE/REMOVING",
            Event.RESET_REQUESTED,
            "partition job7 is REMOVING: reset is not allowed until it is ACTIVE or ERROR",
        ),
        (
            "PENDING/CREATING",
            Event.REMOVE_REQUESTED,
            r"partition job7 is CREATING: remove is not allowed until it is ACTIVE or ERROR"
            r" \(or use force\)",
        ),
        (
            "ACTIVE/IDLE",
            Event.CREATE_REQUESTED,
            "partition job7 is ACTIVE: create is not allowed until it is REMOVED",
        ),
        (
            "REMOVED/IDLE",
            Event.FORCE_REMOVE_REQUESTED,
            "partition job7 is REMOVED: remove --force is not allowed as it is already REMOVED",
        ),
        (
            "REMOVED/FAILED",
            Event.RESET_REQUESTED,
            "partition job7 is REMOVED after a FAILED operation: reset is not allowed",
        ),
        (
            "ACTIVE/IDLE",
            Event.RELOCATE_REQUESTED,
            "partition job7 is ACTIVE: relocate is not allowed until it is ERROR",
        ),
    ],
)
def test_refusals_name_the_partition_its_state_and_what_would_allow_it(
    state: str, event: Event, message: str
) -> None:
    with pytest.raises(IllegalTransition, match=f"^{message}"):
        transition(st(state), event, partition_id="job7")


def test_reachable_states_are_the_ones_the_table_uses() -> None:
    """From ABSENT the machine reaches 11 states; the other 9 accept no event at all."""
    reachable = reachable_states()
    assert reachable == {
        st(s)
        for s in (
            "REMOVED/IDLE",
            "REMOVED/FAILED",
            "PENDING/CREATING",
            "PENDING/REMOVING",
            "ACTIVE/IDLE",
            "ACTIVE/REMOVING",
            "ACTIVE/RESETTING",
            "ERROR/IDLE",
            "ERROR/REMOVING",
            "ERROR/RESETTING",
            "ERROR/FAILED",
        )
    }
    for state in ALL_STATES:
        if state not in reachable:
            assert allowed_events(state) == ()


def test_every_reachable_state_can_end_removed() -> None:
    """No partition gets stuck: from every reachable state some path leads back to ABSENT."""
    for start in reachable_states():
        seen, frontier = {start}, [start]
        while frontier:
            state = frontier.pop()
            for event in allowed_events(state):
                nxt = transition(state, event, partition_id="p")
                if nxt not in seen:
                    seen.add(nxt)
                    frontier.append(nxt)
        assert ABSENT in seen, start


def test_a_full_life_cycle() -> None:
    """Create, fault, auto-reset, fail, relocate, remove: the path a controller walks."""
    path = [
        (Event.CREATE_REQUESTED, "PENDING/CREATING"),
        (Event.CONFIGURED, "ACTIVE/IDLE"),
        (Event.FAULT_DETECTED, "ERROR/IDLE"),
        (Event.AUTO_RESET_REQUESTED, "ERROR/RESETTING"),
        (Event.RESET_FAILED, "ERROR/FAILED"),
        (Event.RELOCATE_REQUESTED, "ERROR/RESETTING"),
        (Event.RELOCATED, "ACTIVE/IDLE"),
        (Event.REMOVE_REQUESTED, "ACTIVE/REMOVING"),
        (Event.REMOVED, "REMOVED/IDLE"),
    ]
    state = ABSENT
    for event, expected in path:
        state = transition(state, event, partition_id="p1")
        assert str(state) == expected


def test_state_helpers() -> None:
    """Labels name the operation under way; busy and holds_ipus follow the states."""
    assert st("ACTIVE/IDLE").label == "ACTIVE"
    assert st("ERROR/RESETTING").label == "RESETTING"
    assert st("ERROR/FAILED").label == "ERROR after a FAILED operation"
    assert st("PENDING/CREATING").busy
    assert not st("ERROR/FAILED").busy
    assert st("PENDING/CREATING").holds_ipus
    assert not st("REMOVED/FAILED").holds_ipus
    assert st("REMOVED/IDLE") == ABSENT


def test_which_reachable_states_hold_their_configuration() -> None:
    """ACTIVE whatever is under way, and ERROR after a fault with nothing under way: the
    IPUs are those every agent was configured on. Never while creating, nor in ERROR while
    a reset or move is under way or after an operation failed."""
    holding = {str(s) for s in reachable_states() if s.holds_its_configuration}
    assert holding == {"ACTIVE/IDLE", "ACTIVE/REMOVING", "ACTIVE/RESETTING", "ERROR/IDLE"}


@pytest.mark.parametrize(
    ("reconfigurable", "disabled", "count", "max_retries", "due"),
    [
        (False, False, 0, 3, True),
        (False, False, 2, 3, True),
        (False, False, 3, 3, False),
        (False, True, 0, 3, False),
        (True, False, 0, 3, False),
        (False, False, 0, 0, False),
    ],
)
def test_auto_reset_due(
    reconfigurable: bool, disabled: bool, count: int, max_retries: int, due: bool
) -> None:
    """Only non-reconfigurable partitions without disable_auto_reset, below the retry limit."""
    assert (
        auto_reset_due(
            reconfigurable=reconfigurable,
            disable_auto_reset=disabled,
            retry_count=count,
            max_retries=max_retries,
        )
        is due
    )
