"""The life cycle of a partition: ready and operation states and the events between them.

A partition's state is a pair (:class:`ReadyState`, :class:`OperationState`)
as the wire reports it (``PartitionStatus``). :data:`TRANSITIONS` lists every
allowed move; anything else raises :class:`IllegalTransition` naming the
partition, its state and what would allow the event. The controller asks
:func:`transition` before it acts and records the result in the same
database transaction, so two controllers cannot both start an operation.

How a controller uses it (vipu-system.md §4):

* create: ``ABSENT --create_requested--> PENDING/CREATING``, then
  ``configured`` (every agent succeeded) to ``ACTIVE/IDLE``, or
  ``configure_failed`` (the reservation is undone) to ``REMOVED/FAILED``.
* remove: ``remove_requested`` from ``ACTIVE`` or ``ERROR`` keeps the ready
  state and sets ``REMOVING``; ``removed`` ends in ``REMOVED/IDLE``,
  ``remove_failed`` in ``ERROR/FAILED``. ``force_remove_requested`` is allowed in
  every state but ``REMOVED``, even while another operation is under way, so
  a stuck partition can always be cleaned up; the controller then ignores
  agent errors and reports ``removed``.
* reset (user or automatic): from ``ACTIVE/IDLE`` or ``ERROR`` to
  ``RESETTING``, then ``reset_done`` to ``ACTIVE/IDLE`` or ``reset_failed``
  to ``ERROR/FAILED``.
* faults: ``fault_detected`` turns any ``ACTIVE`` state into ``ERROR``
  keeping the operation under way, and repeats harmlessly in ``ERROR``.
* relocation: ``relocate_requested`` from ``ERROR`` (the IPUs failed) to
  ``ERROR/RESETTING`` while the partition moves to new IPUs, then
  ``relocated`` to ``ACTIVE/IDLE`` or ``relocate_failed`` to ``ERROR/FAILED``.

Decision: a partition that does not exist is ``REMOVED/IDLE`` (:data:`ABSENT`),
so re-creating a removed id is the same move as creating a new one.
"""

from __future__ import annotations

import enum
from collections import deque
from dataclasses import dataclass

from .errors import IllegalTransition


class ReadyState(enum.Enum):
    """Whether the partition can be used; values are the wire numbers (``PS_*``)."""

    PENDING = 1
    ACTIVE = 2
    REMOVED = 3
    ERROR = 4


class OperationState(enum.Enum):
    """What the controller is doing to the partition; values are the wire numbers (``POS_*``)."""

    IDLE = 1
    CREATING = 2
    REMOVING = 3
    RESETTING = 4
    FAILED = 5
    """The last operation failed; nothing is under way."""


class Event(enum.StrEnum):
    """Something that happens to a partition: a request or an outcome."""

    CREATE_REQUESTED = "create_requested"
    CONFIGURED = "configured"
    CONFIGURE_FAILED = "configure_failed"
    REMOVE_REQUESTED = "remove_requested"
    FORCE_REMOVE_REQUESTED = "force_remove_requested"
    REMOVED = "removed"
    REMOVE_FAILED = "remove_failed"
    RESET_REQUESTED = "reset_requested"
    AUTO_RESET_REQUESTED = "auto_reset_requested"
    RESET_DONE = "reset_done"
    RESET_FAILED = "reset_failed"
    FAULT_DETECTED = "fault_detected"
    RELOCATE_REQUESTED = "relocate_requested"
    RELOCATED = "relocated"
    RELOCATE_FAILED = "relocate_failed"


@dataclass(frozen=True, slots=True)
class PartitionState:
    """A partition's ready state and operation state."""

    ready: ReadyState
    operation: OperationState

    @property
    def label(self) -> str:
        """A word for messages: the operation under way, else the ready state."""
        if self.operation is OperationState.IDLE:
            return self.ready.name
        if self.operation is OperationState.FAILED:
            return f"{self.ready.name} after a FAILED operation"
        return self.operation.name

    @property
    def busy(self) -> bool:
        """Whether an operation is under way (creating, removing or resetting)."""
        return self.operation in _BUSY

    @property
    def holds_its_configuration(self) -> bool:
        """Whether the IPUs it holds are those every agent was configured on: ``ACTIVE``,
        or ``ERROR`` with no operation under way or failed (a fault found afterwards: a
        failed IPU or link, an agent that stopped answering). Not while it is created,
        reset, moved or removed from ERROR, nor after an operation failed, when what the
        agents hold is uncertain."""
        if self.ready is ReadyState.ACTIVE:
            return True
        return self.ready is ReadyState.ERROR and self.operation is OperationState.IDLE

    @property
    def holds_ipus(self) -> bool:
        """Whether the partition's IPUs are reserved (every state but ``REMOVED``)."""
        return self.ready is not ReadyState.REMOVED

    def __str__(self) -> str:
        return f"{self.ready.name}/{self.operation.name}"


_BUSY = frozenset({OperationState.CREATING, OperationState.REMOVING, OperationState.RESETTING})

_R, _O = ReadyState, OperationState


def _s(ready: ReadyState, operation: OperationState) -> PartitionState:
    return PartitionState(ready, operation)


ABSENT = _s(_R.REMOVED, _O.IDLE)
"""The state of a partition id nobody has created (or that was removed)."""

ALL_STATES: tuple[PartitionState, ...] = tuple(_s(r, o) for r in ReadyState for o in OperationState)

_ACTIVE_IDLE = _s(_R.ACTIVE, _O.IDLE)
_ERROR_IDLE = _s(_R.ERROR, _O.IDLE)
_ERROR_FAILED = _s(_R.ERROR, _O.FAILED)
_RESETTABLE = (_ACTIVE_IDLE, _ERROR_IDLE, _ERROR_FAILED)
_REMOVING_STATES = (
    _s(_R.PENDING, _O.REMOVING),
    _s(_R.ACTIVE, _O.REMOVING),
    _s(_R.ERROR, _O.REMOVING),
)
_RESETTING_STATES = (_s(_R.ACTIVE, _O.RESETTING), _s(_R.ERROR, _O.RESETTING))


def _busy_with(state: PartitionState, operation: OperationState) -> PartitionState:
    return _s(state.ready, operation)


def _build_table() -> dict[tuple[PartitionState, Event], PartitionState]:
    e = Event
    table: dict[tuple[PartitionState, Event], PartitionState] = {}
    for start in (ABSENT, _s(_R.REMOVED, _O.FAILED)):
        table[start, e.CREATE_REQUESTED] = _s(_R.PENDING, _O.CREATING)
    table[_s(_R.PENDING, _O.CREATING), e.CONFIGURED] = _ACTIVE_IDLE
    table[_s(_R.PENDING, _O.CREATING), e.CONFIGURE_FAILED] = _s(_R.REMOVED, _O.FAILED)
    for start in _RESETTABLE:
        table[start, e.REMOVE_REQUESTED] = _busy_with(start, _O.REMOVING)
        table[start, e.RESET_REQUESTED] = _busy_with(start, _O.RESETTING)
        table[start, e.AUTO_RESET_REQUESTED] = _busy_with(start, _O.RESETTING)
    # the escape hatch: whatever is under way, a partition holding IPUs can be cleaned up
    for start in (_s(_R.PENDING, _O.CREATING), *_RESETTABLE, *_RESETTING_STATES, *_REMOVING_STATES):
        table[start, e.FORCE_REMOVE_REQUESTED] = _busy_with(start, _O.REMOVING)
    for start in _REMOVING_STATES:
        table[start, e.REMOVED] = ABSENT
        table[start, e.REMOVE_FAILED] = _ERROR_FAILED
    for start in _RESETTING_STATES:
        table[start, e.RESET_DONE] = _ACTIVE_IDLE
        table[start, e.RESET_FAILED] = _ERROR_FAILED
    for operation in (_O.IDLE, _O.RESETTING, _O.REMOVING):
        table[_s(_R.ACTIVE, operation), e.FAULT_DETECTED] = _s(_R.ERROR, operation)
    for operation in (_O.IDLE, _O.RESETTING, _O.REMOVING, _O.FAILED):
        table[_s(_R.ERROR, operation), e.FAULT_DETECTED] = _s(_R.ERROR, operation)
    for start in (_ERROR_IDLE, _ERROR_FAILED):
        table[start, e.RELOCATE_REQUESTED] = _s(_R.ERROR, _O.RESETTING)
    table[_s(_R.ERROR, _O.RESETTING), e.RELOCATED] = _ACTIVE_IDLE
    table[_s(_R.ERROR, _O.RESETTING), e.RELOCATE_FAILED] = _ERROR_FAILED
    return table


TRANSITIONS: dict[tuple[PartitionState, Event], PartitionState] = _build_table()
"""Every allowed move: (state, event) -> next state. Anything not listed is refused."""

_ACTIONS: dict[Event, tuple[str, str]] = {
    # event: (what is refused, when it would be allowed)
    Event.CREATE_REQUESTED: ("create", "until it is REMOVED"),
    Event.CONFIGURED: ("configured", "unless it is CREATING"),
    Event.CONFIGURE_FAILED: ("configure failed", "unless it is CREATING"),
    Event.REMOVE_REQUESTED: ("remove", "until it is ACTIVE or ERROR (or use force)"),
    Event.FORCE_REMOVE_REQUESTED: ("remove --force", "as it is already REMOVED"),
    Event.REMOVED: ("removed", "unless it is REMOVING"),
    Event.REMOVE_FAILED: ("remove failed", "unless it is REMOVING"),
    Event.RESET_REQUESTED: ("reset", "until it is ACTIVE or ERROR"),
    Event.AUTO_RESET_REQUESTED: ("auto-reset", "until it is ACTIVE or ERROR"),
    Event.RESET_DONE: ("reset done", "unless it is RESETTING"),
    Event.RESET_FAILED: ("reset failed", "unless it is RESETTING"),
    Event.FAULT_DETECTED: ("fault", "unless it is ACTIVE or ERROR"),
    Event.RELOCATE_REQUESTED: ("relocate", "until it is ERROR"),
    Event.RELOCATED: ("relocated", "unless it is relocating (ERROR and RESETTING)"),
    Event.RELOCATE_FAILED: ("relocate failed", "unless it is relocating (ERROR and RESETTING)"),
}


def allowed(state: PartitionState, event: Event) -> bool:
    """Whether ``event`` may happen to a partition in ``state``."""
    return (state, event) in TRANSITIONS


def allowed_events(state: PartitionState) -> tuple[Event, ...]:
    """The events a partition in ``state`` accepts, in :class:`Event` order."""
    return tuple(e for e in Event if (state, e) in TRANSITIONS)


def transition(state: PartitionState, event: Event, *, partition_id: str) -> PartitionState:
    """The state after ``event``; raise :class:`IllegalTransition` if the event is refused.

    The message names the partition, e.g. ``partition p1 is REMOVING: reset
    is not allowed until it is ACTIVE or ERROR``.
    """
    try:
        return TRANSITIONS[state, event]
    except KeyError:
        action, when = _ACTIONS[event]
        raise IllegalTransition(
            f"partition {partition_id} is {state.label}: {action} is not allowed {when}"
        ) from None


def reachable_states() -> frozenset[PartitionState]:
    """States reachable from :data:`ABSENT` (the others are never recorded)."""
    seen, todo = {ABSENT}, deque([ABSENT])
    while todo:
        state = todo.popleft()
        for event in allowed_events(state):
            nxt = TRANSITIONS[state, event]
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return frozenset(seen)


def auto_reset_due(
    *,
    reconfigurable: bool,
    disable_auto_reset: bool,
    retry_count: int,
    max_retries: int,
) -> bool:
    """Whether the controller should reset a partition whose application detached.

    Non-reconfigurable partitions are reset automatically unless
    ``disable_auto_reset``, up to ``max_retries`` attempts (vipu-system.md §4);
    reconfigurable ones are shared, so detaching one application never resets them.
    """
    return not reconfigurable and not disable_auto_reset and retry_count < max_retries


def render_transition_table() -> str:
    """The table as Markdown, one row per allowed move (docs/domain.md embeds it)."""
    lines = ["| state | event | next state |", "|---|---|---|"]
    order = {s: i for i, s in enumerate(ALL_STATES)}
    events = list(Event)
    for (state, event), nxt in sorted(
        TRANSITIONS.items(), key=lambda item: (order[item[0][0]], events.index(item[0][1]))
    ):
        lines.append(f"| {state} | `{event.value}` | {nxt} |")
    return "\n".join(lines) + "\n"
