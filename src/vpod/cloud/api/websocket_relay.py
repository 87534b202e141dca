"""Relaying a WebSocket to a session on a server (a shell, an sshd) both ways at once.

The shell relay and the SSH tunnel differ in what a message means, not in how
the two directions run: each is a loop of its own, and the first to end ends
the other, so neither a departed client nor an exited process leaves a task
behind.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, MutableMapping
from typing import Any, TypeVar

from fastapi import WebSocket

T = TypeVar("T")


async def relay_both_ways(
    inbound: Callable[[], Coroutine[Any, Any, None]],
    outbound: Callable[[], Coroutine[Any, Any, T]],
    farewell: Callable[[T], Awaitable[None]],
) -> None:
    """Run ``inbound`` (client to session) and ``outbound`` (session to client) until either
    ends; when the session's side ended first, ``farewell`` tells the client with its result
    (best effort: the client may be gone). Both are stopped before this returns."""
    reader = asyncio.create_task(inbound())
    writer = asyncio.create_task(outbound())
    try:
        done, _ = await asyncio.wait({reader, writer}, return_when=asyncio.FIRST_COMPLETED)
        if writer in done:
            result = writer.result()
            with contextlib.suppress(Exception):
                await farewell(result)
    except Exception:  # the client went away mid-message: the session ends with the caller
        return
    finally:
        for task in (reader, writer):
            task.cancel()
        await asyncio.gather(reader, writer, return_exceptions=True)


async def received(websocket: WebSocket) -> AsyncIterator[MutableMapping[str, Any]]:
    """The client's messages (``bytes`` or ``text``) until it disconnects."""
    while True:
        message = await websocket.receive()
        if message["type"] == "websocket.disconnect":
            return
        yield message
