"""The async face of the cloud's store, and its errors in the cloud's terms.

The cloud's tables share the controller's database and engine
(:class:`~vpod.store.cloud_store.CloudStore`); calls run the way the
controller runs its own: on the event loop for SQLite (one writer, a
transaction is a few hundred microseconds and never waits for the disk),
in a small thread pool for PostgreSQL (a transaction waits on the network).

Store errors become cloud errors here, once: a refused claim (the store's
``Conflict`` that retrying cannot fix) is FailedPrecondition with the
store's sentence; a lost race is Unavailable, a temporary error the caller
or the task runner may retry.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import ParamSpec, TypeVar

from vpod.store import errors as store_errors
from vpod.store.cloud_store import CloudStore

from ...model import errors

P = ParamSpec("P")
T = TypeVar("T")


class CloudDb:
    """Runs :class:`CloudStore` methods: inline for SQLite, in threads otherwise."""

    def __init__(self, store: CloudStore, *, workers: int = 4) -> None:
        self.store = store
        self._pool = (
            None
            if store.dialect == "sqlite"
            else ThreadPoolExecutor(max_workers=workers, thread_name_prefix="vpod-cloud-db")
        )

    async def __call__(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """Run a store call, every store error as a cloud error (see the module docstring)."""
        try:
            return await self._run(fn, *args, **kwargs)
        except store_errors.Conflict as exc:
            if exc.retryable:
                raise errors.Unavailable(f"{exc}; retry the request") from None
            raise errors.FailedPrecondition(str(exc)) from None

    async def racing(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """Like calling it, but a lost race stays a store ``Conflict`` for the caller to retry."""
        try:
            return await self._run(fn, *args, **kwargs)
        except store_errors.Conflict as exc:
            if exc.retryable:
                raise
            raise errors.FailedPrecondition(str(exc)) from None

    async def _run(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
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
