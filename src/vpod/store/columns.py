"""The store's one ``metadata``, the column types every table shares, and the helpers that
declare the columns tables have in common.

:mod:`.schema` (the V-IPU tables) and :mod:`.cloud_schema` (the cloud's)
both build on it, so neither needs the other. A table lists its plain columns
as one declaration (``*required(host=TEXT_SHORT, port=Integer)``) and spells
out only the columns with something to say (a key, a comment, a default).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Column, DateTime, ForeignKey, MetaData, String, Table, UniqueConstraint
from sqlalchemy.engine import Dialect
from sqlalchemy.sql.schema import SchemaItem
from sqlalchemy.types import TypeDecorator, TypeEngine

from vpod.domain.naming import ID_MAX_LENGTH

ID = String(ID_MAX_LENGTH)
NAME = String(32)
"""Enumeration member names."""
LABEL = String(64)
"""Short labels chosen by callers: event actions and outcomes, lease names."""
TEXT_SHORT = String(255)

metadata = MetaData(
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_N_name)s",
        "uq": "uq_%(table_name)s_%(column_0_N_name)s",
        "ck": "ck_%(table_name)s_%(constraint_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
    }
)


class UtcDateTime(TypeDecorator[datetime]):
    """A timezone-aware UTC ``datetime`` on both dialects.

    PostgreSQL keeps ``timestamp with time zone``; SQLite has no such type,
    so the value is stored as naive UTC text and made aware again on reading.
    Naive datetimes are refused: every time comes from the caller's clock,
    which is timezone-aware.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError(f"naive datetime {value} given to the store: pass an aware UTC time")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: Any, _dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        assert isinstance(value, datetime)
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


ColumnType = TypeEngine[Any] | type[TypeEngine[Any]]


def required(**types: ColumnType) -> list[Column[Any]]:
    """One ``NOT NULL`` column per keyword, named by it, in the order given."""
    return [Column(name, type_, nullable=False) for name, type_ in types.items()]


def optional(**types: ColumnType) -> list[Column[Any]]:
    """One nullable column per keyword, named by it, in the order given."""
    return [Column(name, type_, nullable=True) for name, type_ in types.items()]


def id_key() -> Column[Any]:
    """The ``id`` primary key of a table whose rows the API names by id."""
    return Column("id", ID, primary_key=True)


def stamps() -> list[Column[Any]]:
    """``created_at`` and ``updated_at`` of a row that changes after it is made."""
    return required(created_at=UtcDateTime, updated_at=UtcDateTime)


def reference(
    name: str,
    target: str,
    *,
    cascade: bool = False,
    index: bool | None = None,
    nullable: bool = False,
    **options: Any,
) -> Column[Any]:
    """An id column naming a row of ``target`` (``table.id``); with ``cascade`` the row goes
    with the one it names, without it the named row cannot be removed while this one stands."""
    key = ForeignKey(target, ondelete="CASCADE" if cascade else None)
    return Column(name, ID, key, nullable=nullable, index=index, **options)


def project_resource(name: str, *columns: SchemaItem) -> Table:
    """A table of a project's named resources: an id, the project (which cannot be removed
    while it holds one), and a name unique within the project, then ``columns``."""
    return Table(
        name,
        metadata,
        id_key(),
        reference("project_id", "cloud_projects.id", index=True),
        Column("name", ID, nullable=False),
        *columns,
        UniqueConstraint("project_id", "name"),
    )


def cluster_grant(name: str, *columns: SchemaItem) -> Table:
    """A table of what a cluster is given (its keypairs, its dataset storage): rows keyed by
    the cluster (``cluster_id`` first in the primary key), which go with it, then ``columns``."""
    return Table(
        name,
        metadata,
        reference("cluster_id", "cloud_clusters.id", cascade=True, primary_key=True),
        *columns,
    )
