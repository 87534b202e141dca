"""The cloud's store runner: the cloud's tables share the controller's database and engine
(:class:`~vpod.store.cloud_store.CloudStore`), and calls run the way the controller runs
its own (:mod:`vpod.store.runner`).

Store errors become cloud errors here, once: a refused claim (the store's
``Conflict`` that retrying cannot fix) is FailedPrecondition with the
store's sentence; a lost race is Unavailable, a temporary error the caller
or the task runner may retry.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ParamSpec, TypeVar

from vpod.store import errors as store_errors
from vpod.store.cloud_store import CloudStore
from vpod.store.runner import StoreFaults, StoreRunner

from ...model import errors

P = ParamSpec("P")
T = TypeVar("T")


FAULTS = StoreFaults(
    not_found=errors.NotFound,
    already_exists=errors.AlreadyExists,
    unavailable=errors.Unavailable,
)


class CloudDb(StoreRunner[CloudStore]):
    """Runs :class:`CloudStore` methods: inline for SQLite, in threads otherwise."""

    def __init__(self, store: CloudStore, *, workers: int = 4) -> None:
        super().__init__(store, FAULTS, workers=workers, thread_name="vpod-cloud-db")

    async def __call__(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """Run a store call, every store error as a cloud error (see the module docstring)."""
        try:
            return await super().__call__(fn, *args, **kwargs)
        except store_errors.Conflict as exc:
            if exc.retryable:
                raise errors.Unavailable(f"{exc}; retry the request") from None
            raise errors.FailedPrecondition(str(exc)) from None

    async def racing(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """Like calling it, but a lost race stays a store ``Conflict`` for the caller to retry."""
        try:
            return await super().__call__(fn, *args, **kwargs)
        except store_errors.Conflict as exc:
            if exc.retryable:
                raise
            raise errors.FailedPrecondition(str(exc)) from None
