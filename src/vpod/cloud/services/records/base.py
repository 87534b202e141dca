"""What every group of records methods shares: the store and the runner of its calls."""

from __future__ import annotations

from collections.abc import Callable
from typing import ParamSpec, TypeVar

from vpod.store.cloud_store import CloudStore

from .calls import CloudDb

P = ParamSpec("P")
Row = TypeVar("Row")
T = TypeVar("T")


class RecordsBase:
    def __init__(self, store: CloudStore, calls: CloudDb) -> None:
        self._store = store
        self._db = calls

    async def _found(
        self,
        convert: Callable[[Row], T],
        fn: Callable[P, Row | None],
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> T | None:
        """A store lookup that may find nothing: its row converted, or None."""
        found = await self._db(fn, *args, **kwargs)
        return None if found is None else convert(found)
