"""``vpod cluster ssh`` through the controller: a server's shell relayed over a WebSocket.

``GET /api/cloud/v1/clusters/{cluster}/shell/connect?server=N`` upgrades to
a WebSocket, authenticated like every cloud call (``Authorization: Bearer``
of the project's token; refusals are plain HTTP answers with the usual JSON
error body). The controller starts the shell inside the server's sandbox
(:meth:`~vpod.cloud.services.shells.Shells.open_shell`) and relays:

- the client's first message is text, JSON: ``{"command": "ls -l" | null,
  "tty": bool, "rows": int, "cols": int, "term": "xterm", "lang": "C.UTF-8"}``
  (``command`` null: a shell; ``tty``: a terminal of its own, else pipes);
- then binary messages whose first byte names the channel: ``0`` the
  shell's input, ``1``/``2`` its standard output/error (server to client);
- text messages, JSON, for control: ``{"resize": [rows, cols]}`` and
  ``{"eof": true}`` (input closed) from the client, ``{"exit": CODE}`` from
  the server as the last message before it closes (the error body of
  every HTTP answer, ``{"error": {"code", "message", "details"}}``, when the
  shell could not start).

The shell ends when it exits or when the client goes away (it is killed,
with its whole sandbox).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import quote

from fastapi import WebSocket, WebSocketDisconnect

from ...wire.errors import http_answer
from ..app import Cloud
from ..drivers import ShellRequest, ShellSession
from ..model import errors
from .deps import websocket_admitted
from .websocket_relay import received, relay_both_ways

STDIN = 0
CONNECT_PATH = "/clusters/{cluster}/shell/connect"
"""Under the cloud API's prefix."""
MAX_COMMAND = 65536
MAX_SIZE = 10_000


def connect_path(prefix: str, cluster: str, server: int) -> str:
    """Where a client opens the relay to ``cluster``'s server ``server``."""
    return prefix + CONNECT_PATH.format(cluster=quote(cluster, safe="")) + f"?server={server}"


def parse_request(text: str) -> ShellRequest:
    """The client's first message; InvalidArgument with a sentence for a malformed one."""
    try:
        raw = json.loads(text)
    except ValueError:
        raise errors.InvalidArgument(
            "the first message is JSON: {command, tty, rows, cols}"
        ) from None
    if not isinstance(raw, dict):
        raise errors.InvalidArgument("the first message is a JSON object")
    command = raw.get("command")
    if command is not None and (not isinstance(command, str) or len(command) > MAX_COMMAND):
        raise errors.InvalidArgument(f"command is a string of at most {MAX_COMMAND} characters")
    tty = raw.get("tty", False)
    rows, cols = raw.get("rows", 24), raw.get("cols", 80)
    if not isinstance(tty, bool):
        raise errors.InvalidArgument("tty is true or false")
    for name, value in (("rows", rows), ("cols", cols)):
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_SIZE:
            raise errors.InvalidArgument(f"{name} is a whole number from 1 to {MAX_SIZE}")
    term, lang = raw.get("term", "xterm"), raw.get("lang", "")
    for name, value in (("term", term), ("lang", lang)):
        if not isinstance(value, str) or len(value) > 64 or not value.isprintable():
            raise errors.InvalidArgument(f"{name} is a short printable string")
    return ShellRequest(command=command, tty=tty, rows=rows, cols=cols, term=term, lang=lang)


def shell_relay(cloud: Cloud) -> Callable[[WebSocket, str, int], Awaitable[None]]:
    """The WebSocket endpoint relaying shells of ``cloud``'s servers."""

    async def relay(websocket: WebSocket, cluster: str, server: int = 1) -> None:
        admitted = await websocket_admitted(
            cloud, websocket, lambda who: cloud.shells.shell(who, cluster, server)
        )
        if admitted is None:
            return
        who, _ = admitted
        await websocket.accept()
        try:
            first = await websocket.receive_text()
            request = parse_request(first)
            session = await cloud.shells.open_shell(who, cluster, server, request)
        except errors.CloudError as exc:
            _, body, _ = http_answer(exc)  # the body every HTTP error has, message bounded
            with contextlib.suppress(Exception):
                await websocket.send_text(json.dumps(body))
                await websocket.close(1008)
            return
        except (WebSocketDisconnect, RuntimeError):
            return
        try:
            await _pipe(websocket, session)
        finally:
            await session.end()

    return relay


async def _pipe(websocket: WebSocket, session: ShellSession) -> None:
    """Both directions until the shell exits (or the client leaves)."""

    async def inbound() -> None:
        async for message in received(websocket):
            data, text = message.get("bytes"), message.get("text")
            if data:
                if data[0] == STDIN:
                    await session.write(data[1:])
            elif text:
                control = _control(text)
                if control.get("eof"):
                    await session.close_input()
                size = control.get("resize")
                if (
                    isinstance(size, list)
                    and len(size) == 2
                    and all(isinstance(v, int) and 1 <= v <= MAX_SIZE for v in size)
                ):
                    session.resize(size[0], size[1])

    async def outbound() -> int:
        while (chunk := await session.read()) is not None:
            stream, data = chunk
            await websocket.send_bytes(bytes([stream]) + data)
        return await session.wait()

    async def farewell(code: int) -> None:
        await websocket.send_text(json.dumps({"exit": code}))
        await websocket.close()

    await relay_both_ways(inbound, outbound, farewell)


def _control(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


__all__ = ["CONNECT_PATH", "connect_path", "parse_request", "shell_relay"]
