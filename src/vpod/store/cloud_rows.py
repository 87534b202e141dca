"""What the cloud layer's tables share: reading a row by its id, or a project's row by id or
name; an update by id that checks its columns; the tables of resources one task at a time
works on (clusters, volumes: :class:`ClaimableRows`); and the removal of a row clusters
may hold (a keypair, a dataset storage), refused while any does."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from sqlalchemy import (
    Column,
    ColumnElement,
    Connection,
    Row,
    Table,
    and_,
    case,
    delete,
    or_,
    select,
    update,
)

from .cloud_schema import cloud_clusters
from .engine import Database
from .errors import AlreadyExists, Conflict, NotFound


class Claimable(Protocol):
    """A record a task can claim (``ClusterRecord``, ``VolumeRecord``)."""

    @property
    def name(self) -> str: ...

    @property
    def status(self) -> str: ...

    @property
    def active_task_id(self) -> str | None: ...


def one_by_id(
    conn: Connection, table: Table, row_id: str, not_found: Callable[[str], NotFound]
) -> Row[Any]:
    """The row of ``table`` whose id is ``row_id``; ``not_found(row_id)`` when there is none."""
    row = conn.execute(select(table).where(table.c.id == row_id)).one_or_none()
    if row is None:
        raise not_found(row_id)
    return row


def find_in_project(
    conn: Connection, table: Table, project_id: str, ref: str, *, ids: bool = True
) -> Row[Any] | None:
    """The project's row whose id is ``ref`` (with ``ids``), else the one named ``ref``.

    Names are unique within a project, so at most two rows match: the id wins.
    """
    named = table.c.name == ref
    match = or_(table.c.id == ref, named) if ids else named
    query = select(table).where(table.c.project_id == project_id, match)
    return conn.execute(query.order_by(case((table.c.id == ref, 0), else_=1))).first()


def name_taken(
    conn: Connection, named: Iterable[tuple[Table, str, str, str]]
) -> AlreadyExists | None:
    """Why a new resource could not be recorded, if a name is taken: of the ``named``
    (table, kind, project id, name), the first whose project has one of that name."""
    for table, kind, project_id, name in named:
        if find_in_project(conn, table, project_id, name, ids=False) is not None:
            return AlreadyExists(
                f"project {project_id} has a {kind} named {name} already: pick another name"
            )
    return None


def update_by_id(
    conn: Connection,
    table: Table,
    row_id: str,
    changes: Mapping[str, Any],
    *,
    plural: str,
    not_found: Callable[[str], NotFound],
) -> None:
    """Apply ``changes`` to the row ``row_id``; ValueError naming a change that is no column."""
    unknown = set(changes) - set(table.c.keys())
    if unknown:
        raise ValueError(f"{plural} have no column {sorted(unknown)[0]}")
    done = conn.execute(update(table).where(table.c.id == row_id).values(**changes))
    if done.rowcount == 0:
        raise not_found(row_id)


def idle_in(table: Table, row_id: str, statuses: Collection[str]) -> ColumnElement[bool]:
    """The row ``row_id`` while no task holds it and its status is one of ``statuses``."""
    return and_(
        table.c.id == row_id,
        table.c.active_task_id.is_(None),
        table.c.status.in_(list(statuses)),
    )


R = TypeVar("R", bound=Claimable)


@dataclass(frozen=True)
class ClaimableRows(Generic[R]):
    """A table of a project's resources that one task at a time works on (clusters,
    volumes): read by id or by id or name, changed by id, claimed by a task and released."""

    table: Table
    record: Callable[[Row[Any]], R]
    """A row as its record."""
    not_found: Callable[[str], NotFound]
    kind: str
    """What a row is, for messages (``cluster``)."""

    def get(self, conn: Connection, row_id: str) -> R:
        return self.record(one_by_id(conn, self.table, row_id, self.not_found))

    def find(self, conn: Connection, project_id: str, ref: str) -> R | None:
        """The project's row with id ``ref``, else the one named ``ref``."""
        row = find_in_project(conn, self.table, project_id, ref)
        return None if row is None else self.record(row)

    def update(self, conn: Connection, row_id: str, changes: Mapping[str, Any]) -> None:
        plural = f"{self.kind}s"
        update_by_id(conn, self.table, row_id, changes, plural=plural, not_found=self.not_found)

    def claim(
        self,
        conn: Connection,
        row_id: str,
        task_id: str,
        allowed: Collection[str],
        changes: Mapping[str, Any],
    ) -> None:
        """Make ``task_id`` the row's one running task (and apply ``changes``), or refuse.

        Refused with a non-retryable Conflict when another task holds the row or its
        status is not in ``allowed``: the message says which.
        """
        table = self.table
        done = conn.execute(
            update(table)
            .where(idle_in(table, row_id, allowed))
            .values(active_task_id=task_id, **changes)
        )
        if done.rowcount:
            return
        found = self.get(conn, row_id)
        if found.active_task_id is not None:
            raise Conflict(
                f"{self.kind} {found.name} is busy with task {found.active_task_id}: wait for it"
                f" to finish (`vpod task show {found.active_task_id} --wait`)",
                retryable=False,
            )
        raise Conflict(
            f"{self.kind} {found.name} is {found.status}: the operation cannot start from there",
            retryable=False,
        )

    def unclaim(self, conn: Connection, row_id: str, task_id: str) -> None:
        """Release the row if ``task_id`` holds it."""
        table = self.table
        conn.execute(
            update(table)
            .where(table.c.id == row_id, table.c.active_task_id == task_id)
            .values(active_task_id=None)
        )


def clusters_holding(conn: Connection, link: Column[Any], row_id: str) -> list[str]:
    """The names of the clusters holding ``row_id``: those of the rows of ``link``'s table
    (keyed by ``cluster_id``) whose ``link`` is ``row_id``, in order."""
    held = link.table
    rows = conn.execute(
        select(cloud_clusters.c.name)
        .select_from(held.join(cloud_clusters, cloud_clusters.c.id == held.c.cluster_id))
        .where(link == row_id)
        .order_by(cloud_clusters.c.name)
    )
    return [str(r[0]) for r in rows]


def delete_unless_held(
    database: Database,
    table: Table,
    row_id: str,
    link: Column[Any],
    *,
    held: Callable[[str], str],
    raced: str,
) -> None:
    """Delete the row ``row_id`` of ``table`` unless a cluster holds it through ``link``.

    Refused with a non-retryable Conflict saying ``held(cluster names)``, or ``raced``
    when a cluster took it between the check and the delete (the database refused).
    """

    def explain() -> Conflict:
        return Conflict(raced, retryable=False)

    with database.write(explain=explain) as conn:
        holders = clusters_holding(conn, link, row_id)
        if holders:
            raise Conflict(held(", ".join(holders)), retryable=False)
        conn.execute(delete(table).where(table.c.id == row_id))
