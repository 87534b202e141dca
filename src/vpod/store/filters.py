"""The optional filters of a listing: each is a value and how it narrows the query; only
those given (not ``None``) apply, so a listing declares its filters once, as a table.
Conditions are built only for the values given (``time >= None`` is no SQL)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from sqlalchemy import ColumnElement, Select

S = TypeVar("S", bound=Select[Any])

Filter = tuple[object | None, Callable[[], ColumnElement[bool]]]
"""A value, and the condition it makes when given."""


def where_given(query: S, *filters: Filter) -> S:
    """``query`` narrowed by the condition of every filter whose value is not ``None``."""
    conditions = [condition() for value, condition in filters if value is not None]
    return query.where(*conditions) if conditions else query
