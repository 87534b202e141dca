"""Port 22 of every server on its tenant network, so the servers of one vPOD ssh to each
other (``ssh poplar-2`` from ``poplar-1``, as ``vpod-run --host`` and MPI need).

Servers still run no daemon of their own: the controller opens a listening
socket *inside the server's network namespace* (it is root there; the
tenant's uid cannot bind a port under 1024, so it cannot stand in for it)
and, for every connection, starts ``sshd -i`` in the server's sandbox with
the connection as its standard input and output, exactly as for the tunnel
(:mod:`.ssh_server`). Only what the tenant network lets through reaches it:
the vPOD's own servers (and the server itself); another vPOD's servers have
no route to it.

The socket is made on a thread of its own that enters the namespace
(``setns``) and leaves it again, so no thread of the controller's pools ever
runs in a tenant's namespace.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import logging
import os
import signal
import socket
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path

log = logging.getLogger("vpod.cloud")

PORT = 22
BACKLOG = 16
CLONE_NEWNET = 0x40000000

Serve = Callable[[str, socket.socket], Awaitable[None]]
"""Serve one accepted connection of a server (the driver starts sshd -i on it)."""


def listen_in(netns: Path, port: int = PORT) -> socket.socket:
    """A listening TCP socket on ``0.0.0.0:port`` of the network namespace ``netns``."""
    result: list[socket.socket | BaseException] = []

    def make() -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        own = os.open("/proc/thread-self/ns/net", os.O_RDONLY | os.O_CLOEXEC)
        target = os.open(netns, os.O_RDONLY | os.O_CLOEXEC)
        try:
            if libc.setns(target, CLONE_NEWNET) != 0:
                raise OSError(ctypes.get_errno(), f"cannot enter {netns}")
            try:
                sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                try:
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                    sock.bind(("0.0.0.0", port))
                    sock.listen(BACKLOG)
                    sock.setblocking(False)
                except BaseException:
                    sock.close()
                    raise
                result.append(sock)
            finally:
                if libc.setns(own, CLONE_NEWNET) != 0:  # never leave a thread in there
                    os._exit(70)  # pragma: no cover - the kernel refused our own namespace
        except BaseException as exc:
            result.append(exc)
        finally:
            os.close(own)
            os.close(target)

    thread = threading.Thread(target=make, name="peer-ssh-listen", daemon=True)
    thread.start()
    thread.join()
    outcome = result[0]
    if isinstance(outcome, BaseException):
        raise outcome
    return outcome


class PeerSsh:
    """The listening sockets of the servers, and the connections they serve."""

    def __init__(self, serve: Serve) -> None:
        self._serve = serve
        self._listeners: dict[str, tuple[socket.socket, asyncio.Task[None]]] = {}
        self._connections: dict[str, set[asyncio.Task[None]]] = {}
        self._opening: set[str] = set()
        """Servers whose socket is being made (one at a time: a second bind would fail)."""

    def listening(self, server_id: str) -> bool:
        entry = self._listeners.get(server_id)
        return entry is not None and not entry[1].done()

    def connections(self, server_id: str) -> int:
        return len(self._connections.get(server_id, ()))

    async def ensure(self, server_id: str, netns: Path) -> None:
        """Listen for the server (nothing if it does already)."""
        if self.listening(server_id) or server_id in self._opening:
            return
        self._opening.add(server_id)
        try:
            stale = self._listeners.pop(server_id, None)
            if stale is not None:
                stale[0].close()
            sock = await asyncio.to_thread(listen_in, netns)
            task = asyncio.create_task(self._accept(server_id, sock), name=f"ssh-{server_id}")
            self._listeners[server_id] = (sock, task)
        finally:
            self._opening.discard(server_id)

    async def _accept(self, server_id: str, sock: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        while True:
            try:
                conn, _ = await loop.sock_accept(sock)
            except OSError as exc:  # closed under us, or out of descriptors
                log.warning("ssh on the tenant network of server %s: %s", server_id, exc)
                return
            task = asyncio.create_task(self._one(server_id, conn))
            self._connections.setdefault(server_id, set()).add(task)
            task.add_done_callback(self._connections[server_id].discard)

    async def _one(self, server_id: str, conn: socket.socket) -> None:
        with conn:
            try:
                await self._serve(server_id, conn)
            except Exception as exc:  # one connection's failure must not stop the listener
                log.warning("ssh to server %s on its tenant network: %s", server_id, exc)

    async def drop(self, server_id: str) -> None:
        """Stop listening for the server and end its connections (shelved, stopped, gone)."""
        entry = self._listeners.pop(server_id, None)
        if entry is not None:
            sock, task = entry
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            sock.close()
        for task in list(self._connections.pop(server_id, ())):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def close(self) -> None:
        for server_id in list(self._listeners):
            await self.drop(server_id)


async def run_sshd(
    command: list[str], conn: socket.socket, env: dict[str, str], pass_fds: tuple[int, ...]
) -> None:
    """``sshd -i`` (``command``, already inside the sandbox) on ``conn`` until it ends; killed
    with its sandbox when cancelled."""
    conn.setblocking(True)
    process = await asyncio.create_subprocess_exec(
        *command,
        stdin=conn.fileno(),
        stdout=conn.fileno(),
        stderr=asyncio.subprocess.DEVNULL,
        env=env,
        pass_fds=pass_fds,
        start_new_session=True,
    )
    try:
        await process.wait()
    finally:
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)  # bwrap takes the sandbox with it
            await process.wait()


__all__ = ["PORT", "PeerSsh", "listen_in", "run_sshd"]
