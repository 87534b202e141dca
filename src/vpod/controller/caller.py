"""Who is calling: the identity every use-case receives from its transport."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Caller:
    """An authenticated (or, in open mode, anonymous) caller.

    ``allocation_ids`` is ``None`` when the caller may use every allocation:
    admins, and anyone on a server started without ``--secure`` (the open
    behaviour of the spec). ``source`` is where the call came from, for the
    audit log.
    """

    user_id: str
    admin: bool = False
    allocation_ids: frozenset[str] | None = None
    source: str = ""

    def may_use(self, allocation_id: str) -> bool:
        return self.allocation_ids is None or allocation_id in self.allocation_ids


ANONYMOUS = Caller(user_id="anonymous")
"""The caller of a server started without ``--secure``: sees every allocation."""

SYSTEM = Caller(user_id="system", admin=True)
"""The controller itself (reconciliation, auto-reset), for the audit log."""
