"""What every group of records methods shares: the store and the runner of its calls, and
the records methods that are one store call through the runner.

The store reads and writes the cloud's own values (:mod:`vpod.domain.cloud`), so a
method takes and gives what the store's method does: declared as ``runs(CloudStore.x)``
(``runs_on`` for a part of the store: its keypairs, its datasets, ...), it keeps that
method's signature, type hints and docstring. A task read back is converted
(``runs_into``: its parameters typed); only methods that catch something are written out.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from functools import update_wrapper
from typing import Any, Concatenate, ParamSpec, TypeVar, get_type_hints

from vpod.store.cloud_store import CloudStore

from .calls import CloudDb

P = ParamSpec("P")
R = TypeVar("R")
S = TypeVar("S")
T = TypeVar("T")


class RecordsBase:
    def __init__(self, store: CloudStore, calls: CloudDb) -> None:
        self._store = store
        self._db = calls


StoreCall = Callable[Concatenate[RecordsBase, P], Coroutine[Any, Any, T]]
"""A records method: the store method's parameters, its result awaited."""


def _as_is(value: T) -> T:
    return value


def _whole(store: CloudStore) -> CloudStore:
    return store


def _adapted(
    part: Callable[[CloudStore], S],
    method: Callable[Concatenate[S, P], R],
    convert: Callable[[R], T],
) -> StoreCall[P, T]:
    async def call(self: RecordsBase, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return convert(await self._db(method, part(self._store), *args, **kwargs))

    # The method's docstring and type hints, for readers and for checks that read hints
    # (typing.get_type_hints follows __wrapped__ to the store module's names).
    update_wrapper(call, method, assigned=("__doc__",))
    call.__annotations__ = dict(method.__annotations__)
    if convert is not _as_is:
        call.__annotations__["return"] = get_type_hints(convert)["return"]
    return call


def runs(method: Callable[Concatenate[CloudStore, P], T]) -> StoreCall[P, T]:
    """A records method that runs the :class:`CloudStore` ``method`` through the runner
    (store errors become cloud errors there)."""
    return _adapted(_whole, method, _as_is)


def runs_on(
    part: Callable[[CloudStore], S], method: Callable[Concatenate[S, P], T]
) -> StoreCall[P, T]:
    """A records method that runs ``method`` of the store's ``part`` through the runner."""
    return _adapted(part, method, _as_is)


def runs_into(
    method: Callable[Concatenate[CloudStore, P], R], convert: Callable[[R], T]
) -> StoreCall[P, T]:
    """A records method that runs the :class:`CloudStore` ``method`` and gives its result
    ``convert``-ed."""
    return _adapted(_whole, method, convert)
