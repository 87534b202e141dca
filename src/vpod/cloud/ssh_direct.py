"""The direct SSH ports' listeners: one TCP listener per held port, forwarding to its server.

With ``ssh_direct_ports`` set, :class:`DirectSsh` listens on every port of
the range a server holds (``ssh_direct_bind``, 127.0.0.1 by default) and
keeps that set in step with the store: it looks every ``task_poll_s``, so a
new server's port opens, and a deleted server's port closes, within that
(connections already open stay, as with any sshd). Each accepted
connection asks :meth:`~.services.ssh_ports.SshPorts.connect` which server
holds the port *now* and starts that server's ``sshd -i`` inside its
sandbox, then relays raw bytes both ways, exactly as the WebSocket tunnel
does (``api/ssh_tunnel.py``): the SSH session is end to end between the
client and the server's sshd, whose keys decide who logs in. A connection
that cannot be served (a suspended cluster, a server not built yet, too
many connections) is closed before any byte, and the reason logged; so is
one whose sshd ended before it answered (its last words on stderr are
logged as a warning: they say why, and the client sees only a closed
connection).

Every controller replica serving the cloud listens on its own host (the
local compute driver's servers are on it); a port it cannot bind (taken by
something else) is logged once and tried again at each look.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from functools import partial

from .drivers import ShellSession
from .drivers.sessions import STDERR
from .model import errors
from .services.ssh_ports import SshPorts

log = logging.getLogger("vpod.cloud.ssh")
_CHUNK = 65536
CLOSE_WAIT_S = 10.0
"""How long a closed connection may take to flush what it holds before it is dropped."""
STDERR_KEPT = 5
"""Lines of sshd's stderr kept to say why it ended before answering."""


class DirectSsh:
    def __init__(self, ports: SshPorts, poll_s: float) -> None:
        self._ports = ports
        self._poll_s = poll_s
        self._listeners: dict[int, asyncio.Server] = {}
        self._refused: set[int] = set()
        """Ports that could not be bound (logged once each)."""
        self._loop_task: asyncio.Task[None] | None = None
        self._connections: set[asyncio.Task[None]] = set()

    @property
    def listening(self) -> list[int]:
        """The ports listened on now."""
        return sorted(self._listeners)

    async def start(self) -> None:
        """Give servers made before the option was on their ports, and listen."""
        if self._ports.range is None or self._loop_task is not None:
            return
        await self._ports.backfill()
        await self.sync()
        self._loop_task = asyncio.create_task(self._loop(), name="ssh-direct-ports")
        log.info(
            "direct SSH ports %s on %s: %d server(s) reachable",
            self._ports.range,
            self._ports.bind,
            len(self._listeners),
        )

    async def stop(self) -> None:
        loop_task, self._loop_task = self._loop_task, None
        if loop_task is not None:
            loop_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await loop_task
        for port in list(self._listeners):
            self._close(port)
        connections = list(self._connections)
        for task in connections:
            task.cancel()
        await asyncio.gather(*connections, return_exceptions=True)

    async def sync(self) -> None:
        """Listen on every held port of the range, and on no other."""
        wanted = await self._ports.listening()
        for port in sorted(set(self._listeners) - set(wanted)):
            self._close(port)
        failed: list[tuple[int, OSError]] = []
        for port in sorted(set(wanted) - set(self._listeners)):
            try:
                self._listeners[port] = await asyncio.start_server(
                    partial(self._serve, port), host=self._ports.bind, port=port
                )
            except OSError as exc:
                if port not in self._refused:
                    failed.append((port, exc))
                    self._refused.add(port)
                continue
            self._refused.discard(port)
        self._refused &= set(wanted)
        if failed:  # one line however many (a bind address not on this host fails them all)
            first, why = failed[0]
            log.warning(
                "direct SSH port %s:%d (server %s) cannot listen: %s%s; trying again",
                self._ports.bind,
                first,
                wanted[first],
                why,
                f" (and {len(failed) - 1} more port(s))" if len(failed) > 1 else "",
            )

    def _close(self, port: int) -> None:
        listener = self._listeners.pop(port, None)
        if listener is not None:
            listener.close()  # its open connections stay until they end

    async def _loop(self) -> None:
        while True:
            await asyncio.sleep(self._poll_s)
            try:
                await self.sync()
            except asyncio.CancelledError:
                raise
            except Exception:  # a database hiccup: the next look tries again
                log.exception("direct SSH ports: looking for servers failed; retrying")

    async def _serve(
        self, port: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._connections.add(task)
        peer = writer.get_extra_info("peername")
        try:
            try:
                session = await self._ports.connect(port)
            except errors.CloudError as exc:
                log.info("direct SSH port %d: connection from %s refused: %s", port, peer, exc)
                return
            log.info("direct SSH port %d: connection from %s", port, peer)
            try:
                await relay(reader, writer, session, what=f"direct SSH port {port} ({peer})")
            finally:
                await session.end()
        finally:
            writer.close()
            try:  # a client that stopped reading must not hold the connection forever
                await asyncio.wait_for(writer.wait_closed(), CLOSE_WAIT_S)
            except Exception:
                writer.transport.abort()
            if task is not None:
                self._connections.discard(task)


async def relay(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    session: ShellSession,
    *,
    what: str = "SSH connection",
) -> int:
    """Bytes both ways until sshd exits; the client's end of input ends sshd's. Returns the
    bytes sshd sent; where it sent none, its last stderr lines are logged as a warning
    (naming ``what``): a client that sees only "Connection closed" cannot say why."""
    sent = 0
    stderr: deque[str] = deque(maxlen=STDERR_KEPT)

    async def inbound() -> None:
        while data := await reader.read(_CHUNK):
            await session.write(data)
        await session.close_input()

    async def outbound() -> None:
        nonlocal sent
        while (chunk := await session.read()) is not None:
            stream, data = chunk
            if stream == STDERR:
                text = data.decode(errors="replace").rstrip()
                log.debug("sshd: %s", text)
                stderr.extend(line[:300] for line in text.splitlines() if line.strip())
                continue
            sent += len(data)
            writer.write(data)
            await writer.drain()

    sending = asyncio.create_task(inbound())
    receiving = asyncio.create_task(outbound())
    try:
        done, _ = await asyncio.wait({sending, receiving}, return_when=asyncio.FIRST_COMPLETED)
        if receiving not in done and sending.exception() is None:
            await receiving  # the client ended its input: sshd ends the connection
    except Exception:  # the client went away mid-stream: sshd ends in the caller
        return sent
    finally:
        for task in (sending, receiving):
            task.cancel()
        await asyncio.gather(sending, receiving, return_exceptions=True)
    if not sent:
        log.warning(
            "%s: the server's sshd ended before answering: %s",
            what,
            " | ".join(stderr) or "it wrote nothing on stderr",
        )
    return sent


__all__ = ["DirectSsh", "relay"]
