"""Changes that finish even when their caller gives up.

gRPC and HTTP cancel a handler when the client's deadline passes or its
connection drops. Cancelling a change half-way (IPUs reserved, agents being
configured) would leave a PENDING partition holding IPUs until a sweeper finds
it; instead the change runs in its own task, the caller waits on a shield, and
the change ends as it would have: done, or rolled back.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")

log = logging.getLogger(__name__)

_running: set[asyncio.Task[Any]] = set()
"""Strong references: the event loop keeps only weak ones to tasks."""


def _finished(task: asyncio.Task[Any]) -> None:
    _running.discard(task)
    if task.cancelled():
        return
    error = task.exception()  # retrieved here, so an abandoned failure is not reported twice
    if error is not None:
        log.debug("%s ended with %s after its caller left", task.get_name(), error)


def runs_to_completion(
    change: Callable[P, Coroutine[Any, Any, T]],
) -> Callable[P, Awaitable[T]]:
    """Run ``change`` in its own task, so cancelling the caller does not cancel the change."""

    @functools.wraps(change)
    async def shielded(*args: P.args, **kwargs: P.kwargs) -> T:
        task = asyncio.ensure_future(change(*args, **kwargs))
        task.set_name(change.__qualname__)
        _running.add(task)
        task.add_done_callback(_finished)
        return await asyncio.shield(task)

    return shielded
