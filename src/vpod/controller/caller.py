"""Who is calling: the identity every use-case receives from its transport."""

from __future__ import annotations

from dataclasses import dataclass

from . import errors


@dataclass(frozen=True)
class Caller:
    """An authenticated (or, in open mode, anonymous) caller.

    ``allocation_ids`` is ``None`` when the caller may use every allocation:
    admins, and anyone on a server started without ``--secure`` (the open
    behaviour of the spec). ``source`` is where the call came from, for the
    audit log.

    A caller holding a partition key (``partition_scope`` set) may use no
    allocation (``allocation_ids`` is empty: it lists none, creates nothing)
    and sees one partition, ``partition_scope``, while the key's owner may
    still use that partition's allocation (``owner_allocation_ids``, ``None``
    for an administrator owner).
    """

    user_id: str
    admin: bool = False
    allocation_ids: frozenset[str] | None = None
    source: str = ""
    partition_scope: str | None = None
    owner_allocation_ids: frozenset[str] | None = None

    def may_use(self, allocation_id: str) -> bool:
        return self.allocation_ids is None or allocation_id in self.allocation_ids

    def may_see(self, partition_id: str, allocation_id: str) -> bool:
        """Whether the caller may read and use this partition of this allocation."""
        if self.partition_scope is None:
            return self.may_use(allocation_id)
        return partition_id == self.partition_scope and (
            self.owner_allocation_ids is None or allocation_id in self.owner_allocation_ids
        )


def refuse_scoped(caller: Caller, what: str) -> None:
    """PERMISSION_DENIED, saying why, when the caller holds a partition key."""
    if caller.partition_scope is not None:
        raise errors.PermissionDenied(
            f"{caller.user_id} is a key for partition {caller.partition_scope} only:"
            f" it may get, reset and attach that partition, not {what}"
        )


ANONYMOUS = Caller(user_id="anonymous")
"""The caller of a server started without ``--secure``: sees every allocation."""

SYSTEM = Caller(user_id="system", admin=True)
"""The controller itself (reconciliation, auto-reset), for the audit log."""
