"""Rows to records and back through the record's own declaration: a record's fields are
named as its table's columns, so each conversion names only the fields it converts; and a
parent's child rows, gathered by parent."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import fields
from enum import StrEnum
from functools import cache
from typing import TYPE_CHECKING, Any, TypeVar, cast

from sqlalchemy import Column, Connection, Row, select

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

R = TypeVar("R", bound="DataclassInstance")
E = TypeVar("E", bound=StrEnum)


@cache
def _field_names(kind: type[DataclassInstance]) -> tuple[str, ...]:
    return tuple(f.name for f in fields(kind))


def record_of(kind: type[R], row: Row[Any], **converted: Any) -> R:
    """``row`` as a ``kind``: every field from the column of its name, but those ``converted``."""
    columns = row._mapping
    values = {name: columns[name] for name in _field_names(kind) if name not in converted}
    return kind(**values, **converted)


def member_of(kind: type[E], stored: str) -> E:
    """The member of ``kind`` that ``stored`` names (a status read back). The store checks no
    status on its way in, so one no member names (written by a later version, or by hand)
    is read as the string stored rather than refused: it is still that string."""
    try:
        return kind(stored)
    except ValueError:
        return cast(E, stored)


def grouped(
    conn: Connection, key: Column[Any], value: Column[Any], order: Column[Any] | None = None
) -> dict[Any, list[Any]]:
    """Each ``key`` with its ``value``s (a parent's children), in the order of ``key`` and
    ``order`` (the values themselves unless given)."""
    found: dict[Any, list[Any]] = defaultdict(list)
    query = select(key, value).order_by(key, value if order is None else order)
    for k, v in conn.execute(query):
        found[k].append(v)
    return found


def children_of(
    conn: Connection,
    key: Column[Any],
    value: Column[Any],
    parent: object,
    order: Column[Any] | None = None,
) -> list[Any]:
    """``value`` of the rows whose ``key`` is ``parent`` (its children), in the order of
    ``order`` (the values themselves unless given)."""
    query = select(value).where(key == parent).order_by(value if order is None else order)
    return list(conn.scalars(query))


def values_of(record: DataclassInstance, **converted: Any) -> dict[str, Any]:
    """``record`` as column values: every field under its name, but those ``converted``."""
    return {f.name: getattr(record, f.name) for f in fields(record)} | converted
