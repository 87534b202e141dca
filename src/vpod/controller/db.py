"""The async face of the (synchronous) store, and its errors in service terms.

On PostgreSQL, store calls run in a small thread pool: a transaction waits
on the network, and several run at once on their own connections. On SQLite
they run on the event loop itself. SQLite allows one writer at a time, and in
WAL mode with ``synchronous=NORMAL`` a transaction is a few hundred
microseconds of CPU with no wait for the disk (checkpoints, which do wait,
run on their own thread: :mod:`vpod.store.checkpoint`). Handing such a call
to a thread costs more than the call: the hand-off itself, and the database
thread and the event loop taking the GIL from each other every time sqlite3
releases it. Measured on the partition hot path, the database thread spent
1.2 ms of CPU per create + remove pair against 0.55 ms inline, and the
controller served 310-335 pairs/s against 520-530 (docs/performance.md).
The price is that a long read (listing thousands of partitions) holds the
loop while it runs; a transaction never spans an ``await``, so no other
request can see it half done.

Store exceptions become service exceptions here, once, except
:class:`~vpod.store.errors.Conflict`, which use-cases catch themselves
because a conflict usually means "retry".
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
    """Runs store methods: on the event loop for SQLite, in a thread pool otherwise."""

    def __init__(self, store: Store, *, workers: int = 4, inline: bool | None = None) -> None:
        """``inline``: run calls on the caller's thread (default: when the store is SQLite)."""
        self.store = store
        self.inline = store.dialect == "sqlite" if inline is None else inline
        self._pool = (
            None
            if self.inline
            else ThreadPoolExecutor(max_workers=workers, thread_name_prefix="vpod-db")
        )

    async def __call__(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        try:
            if self._pool is None:
                return fn(*args, **kwargs)
            loop = asyncio.get_running_loop()
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
        if self._pool is not None:
            self._pool.shutdown(wait=True)
