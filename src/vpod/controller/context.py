"""What every use-case shares: settings, clock, store, agents, the placement cache, audit.

Built once by :func:`vpod.controller.app.build_controller`; no globals. Use-cases
that need another use-case (the inventory, the fleet) get it in their
constructor, not from here.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from vpod.store.records import AuditEvent

from .agent_gateway import AgentGateway
from .caller import Caller
from .clock import Clock
from .db import Db
from .occupancy import OccupancyCache
from .settings import Settings

log = logging.getLogger("vpod.audit")


@dataclass(frozen=True)
class Context:
    settings: Settings
    clock: Clock
    db: Db
    gateway: AgentGateway
    occupancy: OccupancyCache
    owner: str = ""
    """This controller as the owner of the operations it runs (``replica/boot``, see
    :mod:`.operation_owners`)."""

    def audit_event(
        self, caller: Caller, action: str, target: str, outcome: str, detail: str = ""
    ) -> AuditEvent:
        """An audit entry to commit in the same transaction as the change it describes."""
        log.info("%s %s %s %s %s", caller.user_id, action, target, outcome, detail)
        return AuditEvent(
            time=self.clock.now(),
            actor=caller.user_id,
            action=action,
            target=target,
            outcome=outcome,
            source=caller.source,
            detail=detail,
        )

    async def audit(
        self, caller: Caller, action: str, target: str, outcome: str, detail: str = ""
    ) -> None:
        """Record a change in the audit log (who, what, when, outcome, from where)."""
        entry = self.audit_event(caller, action, target, outcome, detail)
        await self.db(self.db.store.append_events, [entry])
