"""A bounded, sequence-numbered log of machine events with listeners.

The controller reads events to learn that an application detached (its cue
for an automatic reset) without polling every IPU. Sequences start at 1 for
each boot; readers keep the last sequence they saw and ask for what came
after. The log keeps the newest ``capacity`` events and says when a reader
asked for events it no longer holds. Listeners are called synchronously on
the emitting thread (the agent's event loop), so they must be quick.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

from .model import AgentEvent, EventBatch, EventKind

EventListener = Callable[[AgentEvent], None]


class EventLog:
    def __init__(self, boot_id: str, clock: Callable[[], float], capacity: int = 1024) -> None:
        if capacity < 1:
            raise ValueError(f"an event log holds at least 1 event, not {capacity}")
        self.boot_id = boot_id
        self._clock = clock
        self._events: deque[AgentEvent] = deque(maxlen=capacity)
        self._last = 0
        self._listeners: list[EventListener] = []

    @property
    def last_sequence(self) -> int:
        return self._last

    def emit(
        self,
        kind: EventKind,
        *,
        partition_id: str = "",
        device_id: int | None = None,
        generation: int = 0,
        client: str = "",
        evicted: bool = False,
        detail: str = "",
    ) -> AgentEvent:
        self._last += 1
        event = AgentEvent(
            sequence=self._last,
            kind=kind,
            time=self._clock(),
            partition_id=partition_id,
            device_id=device_id,
            generation=generation,
            client=client,
            evicted=evicted,
            detail=detail,
        )
        self._events.append(event)
        for listener in tuple(self._listeners):
            listener(event)
        return event

    def since(self, sequence: int, limit: int | None = None) -> EventBatch:
        """Events with a sequence above ``sequence``, oldest first (at most ``limit``)."""
        oldest = self._events[0].sequence if self._events else self._last + 1
        truncated = sequence + 1 < oldest and sequence < self._last
        if sequence >= self._last:
            events: tuple[AgentEvent, ...] = ()
        else:
            skip = max(0, sequence + 1 - oldest)
            picked = list(self._events)[skip:]
            events = tuple(picked if limit is None else picked[:limit])
        return EventBatch(
            boot_id=self.boot_id, events=events, last_event=self._last, truncated=truncated
        )

    def subscribe(self, listener: EventListener) -> Callable[[], None]:
        """Call ``listener`` with every new event; returns a function that unsubscribes."""
        self._listeners.append(listener)

        def unsubscribe() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return unsubscribe
