"""What keeps a row from being removed: the rows of another table that name it (a cluster's
allocations, an allocation's partitions). A removal checks them first and refuses, naming
them; a removal the database refused is explained the same way, or as a race."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import Column, Connection

from .errors import StoreError, removal_raced, still_holding
from .row_records import children_of


@dataclass(frozen=True)
class Dependants:
    kind: str
    """What the row is (``cluster``)."""
    dependant: str
    """What the rows that depend on it are (``allocation``)."""
    column: Column[Any]
    """The dependants' column naming the row (``allocations.cluster_id``)."""

    def of(self, conn: Connection, row_id: str) -> list[str]:
        """The ids of the rows that depend on ``row_id``, in order."""
        return children_of(conn, self.column, self.column.table.c.id, row_id)

    def refuse_while_held(self, conn: Connection, row_id: str) -> None:
        """Raise a non-retryable Conflict naming the dependants, if there are any."""
        held = self.of(conn, row_id)
        if held:
            raise still_holding(self.kind, row_id, self.dependant, held)

    def explain_refusal(self, conn: Connection, row_id: str) -> StoreError:
        """Why the database refused to remove ``row_id``: its dependants, else a race."""
        held = self.of(conn, row_id)
        if held:
            return still_holding(self.kind, row_id, self.dependant, held)
        return removal_raced(self.kind, row_id)
