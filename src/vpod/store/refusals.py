"""Why a write was refused, asked after the rollback: the questions every ``explain_*``
function of the V-IPU tables asks. Is the id taken? Which of the units (machines, IPU
slots) it wanted does another row hold already?"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from sqlalchemy import Column, Connection, select

from .errors import AlreadyExists


def id_taken(
    conn: Connection, id_column: Column[Any], kind: str, row_id: str
) -> AlreadyExists | None:
    """AlreadyExists naming ``kind`` ``row_id`` when a row of ``id_column``'s table has that id."""
    if conn.scalar(select(id_column).where(id_column == row_id)) is None:
        return None
    return AlreadyExists(
        f"{kind} {row_id} exists already: pick another id, or remove the {kind} first"
    )


def first_held(
    conn: Connection,
    unit: Column[Any],
    holder: Column[Any],
    cluster_id: str,
    units: Collection[int],
    *,
    besides: str | None = None,
) -> tuple[int, str] | None:
    """The lowest of ``units`` of cluster ``cluster_id`` that a holder (other than ``besides``)
    holds, and that holder: ``unit`` and ``holder`` are columns of one table keyed by cluster."""
    table = unit.table
    query = select(unit, holder).where(table.c.cluster_id == cluster_id, unit.in_(units))
    if besides is not None:
        query = query.where(holder != besides)
    row = conn.execute(query.order_by(unit)).first()
    return None if row is None else (row[0], row[1])
