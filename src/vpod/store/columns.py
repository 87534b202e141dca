"""The store's one ``metadata`` and the column types every table shares.

:mod:`.schema` (the V-IPU tables) and :mod:`.cloud_schema` (the cloud's)
both build on it, so neither needs the other.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import DateTime, MetaData, String
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator

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
