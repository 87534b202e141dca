"""Build one shape from a value whose fields carry the same names.

A record and the shape it is shown as (a sample, a filter, a wire message)
often share most field names; copying them by hand names every field twice
and lets a field added to both be forgotten in one. :func:`copy_fields`
reads the names from the shape's own declaration instead, and takes the
fields whose names or values differ as explicit overrides.
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

T = TypeVar("T")


def declared_fields(shape: type[Any]) -> tuple[str, ...]:
    """The field names a dataclass or a protobuf message class declares."""
    if dataclasses.is_dataclass(shape):
        return tuple(f.name for f in dataclasses.fields(shape) if f.init)
    descriptor = getattr(shape, "DESCRIPTOR", None)
    if descriptor is None:
        raise TypeError(f"{shape.__name__} is neither a dataclass nor a protobuf message")
    return tuple(f.name for f in descriptor.fields)


def copy_fields(shape: type[T], source: object, /, **overrides: Any) -> T:
    """``shape`` built from ``source``'s attributes of the same names, ``overrides`` first.

    A field that ``source`` lacks and no override gives keeps the shape's default.
    """
    values = {
        name: getattr(source, name)
        for name in declared_fields(shape)
        if name not in overrides and hasattr(source, name)
    }
    return shape(**values, **overrides)
