"""The SSH tunnel: one WebSocket carrying one SSH connection to a server's own sshd.

``GET /api/cloud/v1/clusters/{cluster}/servers/{server}/ssh/connect``
(``server``: its number or its name) upgrades to a WebSocket, authenticated
like every cloud call (``Authorization: Bearer`` of the project's token;
refusals are plain HTTP answers with the usual JSON error body). The
controller starts ``sshd -i`` inside the server's sandbox
(:meth:`~vpod.cloud.services.ssh_access.SshAccess.connect`) and relays raw
bytes: every binary message either way is a piece of the SSH stream; the
server closes the WebSocket when sshd exits, and sshd is killed (with its
sandbox) when the client goes away. Nothing else is interpreted: the SSH
protocol between the client and the server's sshd is end to end, so the
controller never sees a key, a password or a byte of the session in the
clear. ``vpod cluster ssh-proxy`` is the client side, for OpenSSH's
``ProxyCommand``.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from fastapi import WebSocket

from ..app import Cloud
from ..drivers import ShellSession
from ..drivers.sessions import STDERR
from ..services.projects import Principal
from .deps import websocket_admitted
from .websocket_relay import received, relay_both_ways

log = logging.getLogger("vpod.cloud.ssh")


def ssh_tunnel(cloud: Cloud) -> Callable[[WebSocket, str, str], Awaitable[None]]:
    """The WebSocket endpoint tunnelling SSH connections to ``cloud``'s servers."""

    async def tunnel(websocket: WebSocket, cluster: str, server: str) -> None:
        async def connect(who: Principal) -> ShellSession:
            await cloud.ssh.server(who, cluster, server)
            return await cloud.ssh.connect(who, cluster, server)

        admitted = await websocket_admitted(cloud, websocket, connect)
        if admitted is None:
            return
        _, session = admitted
        try:
            await websocket.accept()
            await pipe(websocket, session)
        finally:
            await session.end()

    return tunnel


async def pipe(websocket: WebSocket, session: ShellSession) -> None:
    """Bytes both ways until sshd exits (or the client leaves)."""

    async def inbound() -> None:
        async for message in received(websocket):
            data = message.get("bytes")
            if data:
                await session.write(data)

    async def outbound() -> None:
        while (chunk := await session.read()) is not None:
            stream, data = chunk
            if stream == STDERR:
                log.debug("sshd: %s", data.decode(errors="replace").rstrip())
            else:
                await websocket.send_bytes(data)

    async def farewell(_: None) -> None:
        await websocket.close()

    await relay_both_ways(inbound, outbound, farewell)


__all__ = ["pipe", "ssh_tunnel"]
