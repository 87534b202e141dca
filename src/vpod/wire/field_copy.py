"""Build one shape from a value whose fields carry the same names.

A record and the shape it is shown as (a sample, a filter, a wire message)
often share most field names; copying them by hand names every field twice
and lets a field added to both be forgotten in one. :func:`copy_fields`
reads the names from the shape's own declaration (a dataclass, a pydantic
model or a protobuf message) instead, and takes the
fields whose names or values differ as explicit overrides.

Two strictnesses, one declaration reader: :func:`copy_fields` leaves a field the source
lacks at the shape's default (a wire message's unset fields, a record's optional ones);
:func:`copy_all_fields` wants every declared field from the source or an override and
refuses an override the shape does not declare, so a rename on either side fails loudly.
"""

from __future__ import annotations

import dataclasses
import functools
import keyword
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

T = TypeVar("T")
_ABSENT = object()


_DECLARED: dict[type[Any], tuple[str, ...]] = {}
"""Each shape's field names, read once (conversions run on the heartbeat path)."""


def declared_fields(shape: type[Any]) -> tuple[str, ...]:
    """The field names a dataclass, a pydantic model or a protobuf message class declares."""
    names = _DECLARED.get(shape)
    if names is None:
        names = _DECLARED[shape] = _read_fields(shape)
    return names


def _read_fields(shape: type[Any]) -> tuple[str, ...]:
    if dataclasses.is_dataclass(shape):
        return tuple(f.name for f in dataclasses.fields(shape) if f.init)
    model_fields = getattr(shape, "model_fields", None)
    if isinstance(model_fields, dict):
        return tuple(model_fields)
    descriptor = getattr(shape, "DESCRIPTOR", None)
    if descriptor is None:
        raise TypeError(
            f"{shape.__name__} is neither a dataclass, a pydantic model nor a protobuf message"
        )
    return tuple(f.name for f in descriptor.fields)


_Copier = Callable[[Any, dict[str, Any]], Any]
_COPIERS: dict[tuple[type[Any], type[Any], tuple[str, ...]], _Copier] = {}
"""Per shape, source type and overridden names: a function that builds the shape from a
source and the overrides: compiled to read each field as ``source.name`` where the source's
type fixes its attributes, else reading each source name by name (:func:`_by_name`)."""


def copy_fields(shape: type[T], source: object, /, **overrides: Any) -> T:
    """``shape`` built from ``source``'s attributes of the same names, ``overrides`` first.

    A field that ``source`` lacks and no override gives keeps the shape's default.
    """
    key = (shape, type(source), tuple(overrides))
    copier = _COPIERS.get(key)
    if copier is None:
        copier = _COPIERS[key] = _copier(shape, source, overrides)
    result: T = copier(source, overrides)
    return result


def _by_name(shape: type[T], source: object, overrides: dict[str, Any]) -> T:
    values = overrides  # a fresh dict each call: filled in place
    for name in declared_fields(shape):
        if name not in values:
            value = getattr(source, name, _ABSENT)
            if value is not _ABSENT:
                values[name] = value
    return shape(**values)


def _attributes_fixed_by_type(kind: type[Any]) -> bool:
    """Whether every instance of ``kind`` has the same attributes: a frozen dataclass, a
    protobuf message, a pydantic model that takes no extra fields (none can gain one)."""
    if dataclasses.is_dataclass(kind):
        return bool(getattr(kind, "__dataclass_params__").frozen)  # noqa: B009 (no stub)
    if hasattr(kind, "DESCRIPTOR"):
        return True
    if isinstance(getattr(kind, "model_fields", None), dict):
        return getattr(kind, "model_config", {}).get("extra") != "allow"
    return False


def _copier(shape: type[Any], source: object, overrides: Mapping[str, Any]) -> _Copier:
    """The copying function for sources of ``source``'s type, compiled once, as
    dataclasses compile their ``__init__`` (conversions run on the heartbeat path, where a
    pod4096 decodes a thousand machines' answers a second); :func:`_by_name` where the
    type does not fix what a source holds, or a name cannot be written as an attribute."""
    by_name = functools.partial(_by_name, shape)
    if not _attributes_fixed_by_type(type(source)):
        return by_name
    names = [n for n in declared_fields(shape) if n not in overrides and hasattr(source, n)]
    if not all(n.isidentifier() and not keyword.iskeyword(n) for n in names):
        return by_name
    reads = "".join(f"{n}=source.{n}, " for n in names)
    code = f"def copy(source, overrides):\n    return shape({reads}**overrides)\n"
    scope: dict[str, Any] = {"shape": shape}
    exec(code, scope)  # the names are identifiers and no keyword (checked above)
    copier: _Copier = scope["copy"]
    return copier


def copy_all_fields(shape: type[T], source: object, /, **overrides: Any) -> T:
    """``shape`` with every field it declares read from ``source``'s attribute of that name,
    except those given in ``overrides``: a declared field ``source`` lacks raises
    AttributeError, an override ``shape`` does not declare raises TypeError."""
    names = declared_fields(shape)
    stray = overrides.keys() - set(names)
    if stray:
        raise TypeError(f"{shape.__name__} declares no field {', '.join(sorted(stray))}")
    values = {n: overrides[n] if n in overrides else getattr(source, n) for n in names}
    return shape(**values)
