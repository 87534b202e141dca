"""Reading JSON replies of the HTTP APIs into the client's frozen dataclasses.

:func:`from_json` fills a dataclass from a JSON object by field name,
converting by the field's annotation: ``datetime`` from RFC 3339, ``Decimal``
from money strings, enums by
value (then by name), nested dataclasses, ``tuple[X, ...]`` and
``Mapping[str, X]``, ``X | None``. Keys the record does not name are
ignored, so a server that adds fields does not break older clients; a
missing key takes the field's default. A field named ``raw`` receives the
JSON object itself, for tools that print what the API said (``--json``).

A record marked :func:`shaped` is read through the server's own definition of
the reply (a shape of :mod:`vpod.wire.rest`) first: a reply that is not one is
the server's fault, said as :class:`~.errors.ServerError`. Where the record
needs nothing the shape lacks (money as ``Decimal``, immutable tuples), it is
the shape itself: a :class:`WireRecord` subclass of it, read-only. Where it
needs a few fields typed its own way, it subclasses the part of the shape it
takes as is (``FlavorSpec`` of ``FlavorOut``), declares only the others, and is
marked :func:`shaped` with the whole shape.
"""

from __future__ import annotations

import dataclasses
import enum
import types
import typing
from collections.abc import Callable, Mapping
from datetime import datetime
from decimal import Decimal
from functools import cache, partial
from typing import Any, Self, TypeVar, Union

from pydantic import (
    BaseModel,
    ConfigDict,
    ModelWrapValidatorHandler,
    PrivateAttr,
    ValidationError,
    model_validator,
)

from .errors import ServerError

R = TypeVar("R")

_SHAPES: dict[type, type[BaseModel]] = {}


class WireRecord(BaseModel):
    """A record that is the API's shape of a reply (its subclass: ``class Host(HostOut,
    WireRecord)``), read-only; ``raw`` is the JSON object it was read from (nested ones too)."""

    model_config = ConfigDict(frozen=True)
    _raw: Any = PrivateAttr(default=None)

    @property
    def raw(self) -> Any:
        return self._raw

    @model_validator(mode="wrap")
    @classmethod
    def _keep_raw(cls, data: Any, handler: ModelWrapValidatorHandler[Self]) -> Self:
        record = handler(data)
        if isinstance(data, Mapping):
            record._raw = data
        return record

    @classmethod
    def read(cls, data: Any) -> Self:
        """The record of the JSON object ``data``; one that is not the shape (the one it is
        marked :func:`shaped` with, else the one it subclasses) is the server's fault."""
        shape = _SHAPES.get(cls)
        if shape is not None:
            _shape_of(shape, data)
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            said = (
                f"a {shape.__name__} this client cannot read"
                if shape is not None
                else f"no {cls.__mro__[1].__name__}"
            )
            raise ServerError(f"the API answered {said}: {exc}") from None


def shaped(shape: type[BaseModel]) -> Callable[[type[R]], type[R]]:
    """Mark a record as read from replies of ``shape``, the API's definition of them."""

    def mark(cls: type[R]) -> type[R]:
        _SHAPES[typing.cast(type, cls)] = shape
        return cls

    return mark


@cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _convert(hint: Any, value: Any, where: str) -> Any:
    if value is None:
        return None
    origin = typing.get_origin(hint)
    if origin in (Union, types.UnionType):
        options = [arg for arg in typing.get_args(hint) if arg is not type(None)]
        return _convert(options[0], value, where) if len(options) == 1 else value
    if origin is tuple:
        item = typing.get_args(hint)[0]
        return tuple(_convert(item, v, f"{where}[]") for v in value)
    if origin in (Mapping, dict, typing.get_origin(Mapping[str, int])):
        item = typing.get_args(hint)[1]
        return {str(k): _convert(item, v, f"{where}.{k}") for k, v in value.items()}
    if origin is list:
        item = typing.get_args(hint)[0]
        return [_convert(item, v, f"{where}[]") for v in value]
    if hint is Any or hint is object:
        return value
    if isinstance(hint, type):
        if issubclass(hint, WireRecord):
            return hint.read(value)
        if issubclass(hint, BaseModel):
            return _shape_of(hint, value)
        if dataclasses.is_dataclass(hint):
            return from_json(hint, value)
        if issubclass(hint, enum.Enum):
            return _member(hint, value, where)
        if hint is datetime:
            return datetime.fromisoformat(str(value).replace("Z", "+00:00"))
        if hint is float:
            return float(value)
        if hint is Decimal:
            return Decimal(str(value))
        if hint in (int, str, bool):
            return hint(value)
    return value


def _shape_of(shape: type[BaseModel], value: Any) -> BaseModel:
    try:
        return shape.model_validate(value)
    except ValidationError as exc:
        raise ServerError(f"the API answered no {shape.__name__}: {exc}") from None


def _member(cls: type[enum.Enum], value: Any, where: str) -> enum.Enum:
    try:
        return cls(value)
    except ValueError:
        pass
    try:
        return cls[str(value).upper().replace("-", "_")]
    except KeyError:
        raise ServerError(
            f"the API answered {value!r} for {where}, which this client does not know"
        ) from None


def from_json(cls: type[R], data: Any) -> R:
    """An instance of dataclass ``cls`` from the JSON object ``data`` (see the module doc)."""
    if not isinstance(data, Mapping):
        raise ServerError(
            f"the API answered {type(data).__name__} where {cls.__name__} was expected"
        )
    if isinstance(cls, type) and issubclass(cls, WireRecord):
        return typing.cast(R, cls.read(data))
    shape = _SHAPES.get(typing.cast(type, cls))
    if shape is not None:
        try:
            shape.model_validate(data)
        except ValidationError as exc:
            raise ServerError(f"the API answered no {shape.__name__}: {exc}") from None
    hints = _hints(typing.cast(type, cls))
    values: dict[str, Any] = {}
    for spec in dataclasses.fields(cls):  # type: ignore[arg-type]
        if spec.name == "raw":
            values["raw"] = data
        elif spec.name in data:
            values[spec.name] = _convert(
                hints[spec.name], data[spec.name], f"{cls.__name__}.{spec.name}"
            )
    try:
        return cls(**values)
    except TypeError as exc:
        raise ServerError(f"the API's {cls.__name__} lacks a field: {exc}") from None


def list_of(cls: type[R], data: Any, key: str | None = None) -> list[R]:
    """Records of ``cls`` from a JSON list (or the list under ``key`` of an object)."""
    items = data[key] if key is not None else data
    return [from_json(cls, item) for item in items]


def reads(cls: type[R]) -> Callable[[Any], R]:
    """How to read a reply that is one ``cls`` (an :class:`~.http_transport.HttpCall`'s
    ``parse``)."""
    return partial(from_json, cls)


def reads_list(cls: type[R]) -> Callable[[Any], list[R]]:
    """How to read a reply that is a JSON list of ``cls``."""
    return partial(list_of, cls)
