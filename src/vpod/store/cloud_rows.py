"""What the cloud layer's tables share: an update by id that checks its columns, and the
claim of a row (a cluster or a volume) by the one task that may run on it."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from typing import Any, Protocol

from sqlalchemy import Connection, Table, update

from .errors import Conflict, NotFound


class Claimable(Protocol):
    """A record a task can claim (``ClusterRecord``, ``VolumeRecord``)."""

    @property
    def name(self) -> str: ...

    @property
    def status(self) -> str: ...

    @property
    def active_task_id(self) -> str | None: ...


def update_by_id(
    conn: Connection,
    table: Table,
    row_id: str,
    changes: Mapping[str, Any],
    *,
    columns: Collection[str],
    plural: str,
    not_found: Callable[[str], NotFound],
) -> None:
    """Apply ``changes`` to the row ``row_id``; ValueError naming a change that is no column."""
    unknown = set(changes) - set(columns)
    if unknown:
        raise ValueError(f"{plural} have no column {sorted(unknown)[0]}")
    done = conn.execute(update(table).where(table.c.id == row_id).values(**changes))
    if done.rowcount == 0:
        raise not_found(row_id)


def claim(
    conn: Connection,
    table: Table,
    row_id: str,
    task_id: str,
    allowed: Collection[str],
    changes: Mapping[str, Any],
    *,
    kind: str,
    current: Callable[[], Claimable],
) -> None:
    """Make ``task_id`` the row's one running task (and apply ``changes``), or refuse.

    Refused with a non-retryable Conflict when another task holds the row or
    its status is not in ``allowed``; ``current`` reads the row to say which.
    """
    done = conn.execute(
        update(table)
        .where(
            table.c.id == row_id,
            table.c.active_task_id.is_(None),
            table.c.status.in_(list(allowed)),
        )
        .values(active_task_id=task_id, **changes)
    )
    if done.rowcount:
        return
    found = current()
    if found.active_task_id is not None:
        raise Conflict(
            f"{kind} {found.name} is busy with task {found.active_task_id}: wait for it"
            f" to finish (`vpod task show {found.active_task_id} --wait`)",
            retryable=False,
        )
    raise Conflict(
        f"{kind} {found.name} is {found.status}: the operation cannot start from there",
        retryable=False,
    )
