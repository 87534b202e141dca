"""What every cloud use-case shares: settings, clock, ids, store, drivers, the V-IPU port.

Built once by :func:`vpod.cloud.app.build_cloud`; no globals. Store calls go
through the controller's ``Db`` (on the event loop for SQLite, in threads for
PostgreSQL), which also turns store errors into service errors;
:meth:`CloudContext.db` also turns the store's ``Conflict`` into
``FailedPrecondition`` (a busy cluster, a status an operation cannot start
from) or, for a lost race, ``Unavailable``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import ParamSpec, TypeVar

from vpod.controller import errors
from vpod.controller.app import Controller
from vpod.controller.clock import Clock
from vpod.store.cloud_records import MeterEntry
from vpod.store.cloud_store import CloudStore
from vpod.store.errors import Conflict

from ..drivers import ComputeDriver, VolumeDriver
from ..ids import IdGenerator
from ..metering import MeteringSink, NoSink
from ..settings import CloudSettings
from ..vipu import VipuPort

P = ParamSpec("P")
T = TypeVar("T")


@dataclass
class CloudContext:
    settings: CloudSettings
    controller: Controller
    store: CloudStore
    clock: Clock
    ids: IdGenerator
    compute: ComputeDriver
    volumes: VolumeDriver
    vipu: VipuPort
    sink: MeteringSink = field(default_factory=NoSink)
    submit: Callable[[str], None] = field(default=lambda _task_id: None)
    """Hands a new task to the runner (set by ``build_cloud``)."""
    endpoint_refresh: asyncio.Lock = field(default_factory=asyncio.Lock)
    """One endpoint refresh at a time: two would each issue a V-IPU key and could leave
    the servers holding the one revoked by the other."""

    async def db(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """Run a store call through the controller's ``Db``, every store error as a service error.

        A refused claim (not retryable) is FailedPrecondition with the store's
        sentence; a lost race (retryable) is Unavailable: the caller may retry.
        """
        try:
            return await self.controller.ctx.db(fn, *args, **kwargs)
        except Conflict as exc:
            if exc.retryable:
                raise errors.Unavailable(f"{exc}; retry the request") from None
            raise errors.FailedPrecondition(str(exc)) from None

    async def db_racing(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """Like :meth:`db`, but a lost race stays a store ``Conflict`` for the caller to retry."""
        try:
            return await self.controller.ctx.db(fn, *args, **kwargs)
        except Conflict as exc:
            if exc.retryable:
                raise
            raise errors.FailedPrecondition(str(exc)) from None

    def published(self, entries: Sequence[MeterEntry]) -> None:
        """Copy committed metering entries to the sink."""
        self.sink.publish(entries)
