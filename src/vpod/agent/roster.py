"""The machines one agent process serves right now, for the batched heartbeat.

A process hosting many emulated machines answers ``FleetHealth`` for all of
them in one call. It may only speak for a machine whose own service is up
and well: a stopped machine leaves the roster, and a hung or slow one is left
out of the answer, so the controller then asks that machine itself and
learns the truth from its deadline (see :meth:`AgentService.FleetHealth`).
"""

from __future__ import annotations

import uuid
from typing import Protocol


class RosterMember(Protocol):
    @property
    def answers_promptly(self) -> bool: ...


class FleetRoster:
    """The services of one process by agent id, under one ``fleet_id`` per process run.

    ``in_memory``: the members are emulated machines, whose partition calls finish without
    waiting on anything, so a fleet call runs their parts one after another: a task each,
    to run them side by side, cost more than the parts themselves."""

    def __init__(self, fleet_id: str | None = None, *, in_memory: bool = False) -> None:
        self.fleet_id = fleet_id or uuid.uuid4().hex
        self.in_memory = in_memory
        self._serving: dict[str, RosterMember] = {}

    def join(self, agent_id: str, service: RosterMember) -> None:
        self._serving[agent_id] = service

    def leave(self, agent_id: str) -> None:
        self._serving.pop(agent_id, None)

    def prompt(self, agent_id: str) -> RosterMember | None:
        """The machine's service when it is serving and would answer without delay."""
        member = self._serving.get(agent_id)
        return member if member is not None and member.answers_promptly else None
