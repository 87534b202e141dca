"""The one way the services run store calls: the async face of the (synchronous) store.

On PostgreSQL, calls run in a small thread pool: a transaction waits on the
network, and several run at once on their own connections. On SQLite they run
on the event loop itself. SQLite allows one writer at a time, and in WAL mode
with ``synchronous=NORMAL`` a transaction is a few hundred microseconds of CPU
with no wait for the disk (checkpoints, which do wait, run on their own
thread: :mod:`vpod.store.checkpoint`). Handing such a call to a thread costs
more than the call: the hand-off itself, and the database thread and the event
loop taking the GIL from each other every time sqlite3 releases it. Measured on
the partition hot path, the database thread spent 1.2 ms of CPU per create +
remove pair against 0.55 ms inline, and the controller served 310-335 pairs/s
against 520-530 (docs/performance.md). The price is that a long read (listing
thousands of partitions) holds the loop while it runs; a transaction never
spans an ``await``, so no other request can see it half done.

Store errors become the caller's own errors here, once (:class:`StoreFaults`
names them), except :class:`~vpod.store.errors.Conflict`, which each caller
handles itself because a conflict usually means "retry".
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Generic, ParamSpec, Protocol, TypeVar

from vpod.domain.errors import Fault

from . import errors as store_errors

P = ParamSpec("P")
T = TypeVar("T")


class _Dialected(Protocol):
    @property
    def dialect(self) -> str: ...


S = TypeVar("S", bound=_Dialected)


@dataclass(frozen=True)
class StoreFaults:
    """The caller's errors for the store's: what a missing record, a taken id and an
    unreachable database become in its own vocabulary."""

    not_found: Callable[[str], Fault]
    already_exists: Callable[[str], Fault]
    unavailable: Callable[[str], Fault]


class StoreRunner(Generic[S]):
    """Runs methods of ``store``: on the event loop for SQLite, in a thread pool otherwise."""

    def __init__(
        self,
        store: S,
        faults: StoreFaults,
        *,
        workers: int = 4,
        inline: bool | None = None,
        thread_name: str = "vpod-db",
    ) -> None:
        """``inline``: run calls on the caller's thread (default: when the store is SQLite)."""
        self.store = store
        self.inline = store.dialect == "sqlite" if inline is None else inline
        self._faults = faults
        self._pool = (
            None
            if self.inline
            else ThreadPoolExecutor(max_workers=workers, thread_name_prefix=thread_name)
        )

    async def __call__(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """Run a store call; its errors in the caller's terms (a Conflict as it is)."""
        try:
            if self._pool is None:
                return fn(*args, **kwargs)
            loop = asyncio.get_running_loop()
            return await loop.run_in_executor(self._pool, functools.partial(fn, *args, **kwargs))
        except store_errors.Conflict:
            raise
        except store_errors.NotFound as exc:
            raise self._faults.not_found(str(exc)) from exc
        except store_errors.AlreadyExists as exc:
            raise self._faults.already_exists(str(exc)) from exc
        except store_errors.Unavailable as exc:
            raise self._faults.unavailable(
                f"the controller's database is unavailable: {exc}"
            ) from exc

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)


__all__ = ["StoreFaults", "StoreRunner"]
