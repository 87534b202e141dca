"""The async face of the (synchronous) store, and its errors in service terms.

Store calls run in a small thread pool so the event loop keeps serving
while a transaction waits on the database. Store exceptions become service
exceptions here, once, except :class:`~vpod.store.errors.Conflict`, which
use-cases catch themselves because a conflict usually means "retry".
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import ParamSpec, TypeVar

from vpod.store import errors as store_errors
from vpod.store.store import Store

from . import errors

P = ParamSpec("P")
T = TypeVar("T")


class Db:
    """Runs store methods off the event loop."""

    def __init__(self, store: Store, *, workers: int = 4) -> None:
        self.store = store
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="vpod-db")

    async def __call__(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(self._pool, functools.partial(fn, *args, **kwargs))
        except store_errors.Conflict:
            raise
        except store_errors.NotFound as exc:
            raise errors.NotFound(str(exc)) from exc
        except store_errors.AlreadyExists as exc:
            raise errors.AlreadyExists(str(exc)) from exc
        except store_errors.Unavailable as exc:
            raise errors.Unavailable(f"the controller's database is unavailable: {exc}") from exc

    def close(self) -> None:
        self._pool.shutdown(wait=True)
