"""One value made from another whose fields share its names: a REST shape (pydantic) from a
record, a record (dataclass) from another layer's record.

The target's own declaration says which fields to copy, so a field added to both sides is
copied without touching the conversion; what differs (a renamed field, a computed value) is
passed explicitly and stands out.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TypeVar

from pydantic import BaseModel

T = TypeVar("T")

__all__ = ["copy_fields", "declared_fields"]


def declared_fields(shape: type[object]) -> tuple[str, ...]:
    """The names ``shape``'s constructor takes: a pydantic model's fields or a dataclass's
    ``init`` fields."""
    if issubclass(shape, BaseModel):
        return tuple(shape.model_fields)
    if dataclasses.is_dataclass(shape):
        return tuple(f.name for f in dataclasses.fields(shape) if f.init)
    raise TypeError(f"{shape.__name__} is neither a pydantic model nor a dataclass")


def copy_fields(shape: type[T], source: object, /, **overrides: object) -> T:
    """``shape`` with every field it declares read from ``source``'s attribute of that name,
    except those given in ``overrides``.

    Strict both ways, so a rename on one side fails loudly instead of copying a default: a
    declared field ``source`` lacks raises AttributeError, an override ``shape`` does not
    declare raises TypeError.
    """
    names = declared_fields(shape)
    stray = overrides.keys() - set(names)
    if stray:
        raise TypeError(f"{shape.__name__} declares no field {', '.join(sorted(stray))}")
    values = {n: overrides[n] if n in overrides else getattr(source, n) for n in names}
    build: Callable[..., T] = shape
    return build(**values)
