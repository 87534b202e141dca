"""IPUoF endpoints of one emulated machine: where applications attach to IPUs.

This is a software IPUoF server over :class:`~vpod.agent.backend.IpuofSessions`;
on an IPU-M the machine serves IPUoF itself and the agent runs none of this.

Each IPU listens on its own IPUoF server port; an application holds an IPU
for as long as its TCP connection stays open. The line protocol (UTF-8, one
command or answer per ``\\n``-terminated line) stands in for the real IPUoF
handshake:

=======================================  =========================================
client sends                             server answers
=======================================  =========================================
``ATTACH [<partition_id>] [k=v ...]``    ``OK <agent_id> <device_id> <routing_id>``
                                         or ``ERR <reason> <sentence>``, then closes
``STATUS [<partition_id>]``              ``STATUS k=v ...`` (the IPU's state, holder
                                         and telemetry); closes unless attached
``LOAD <0..1>`` (while attached)         ``OK load <value>``
``PING`` (while attached)                ``PONG``
``DETACH`` (while attached)              ``BYE detached``, then closes
anything else                            ``ERR invalid-request <sentence>``
=======================================  =========================================

``ATTACH`` may name the partition (the IPU must be in it) or not (a static
IPUoF config names none), and may say who the application is: ``pid=``,
``host=`` and ``cmd=``, values percent-encoded (RFC 3986). Whoever is refused
with ``ipu-attached`` is told that holder. ``LOAD`` is how a workload tells
the emulated machine how busy it keeps the IPU (utilisation, power and
temperature follow, :mod:`vpod.agent.telemetry`); ``STATUS`` is what device
tools read (keys in :data:`STATUS_KEYS`, values percent-encoded).

Only an IPU configured into an active partition (configure = active on the
agent) can be attached, by one application at a time. Closing the
connection detaches. When the agent ends an attachment (release, reset,
reconfiguration, IPU fault) the server sends ``BYE <why>`` and closes.
Attach and detach become events the controller reads (``DETACHED`` with
``evicted`` false is its cue for an automatic reset).

Each partition answers only its owners: the controller declares, per
partition, the hosts whose applications may use it (:mod:`.ipuof_access`),
and every ``ATTACH``, ``STATUS`` or ``DETACH`` from a peer address outside
them is refused exactly as if the IPU were in no partition
(``ERR ipu-not-configured``), so a stranger learns nothing about the
partition, not even that there is one.

The RDMA ports (7471-7474 in the spec) are listened on when asked, so they
are taken as on a real machine; a connection there is closed at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Sequence
from urllib.parse import quote, unquote

from .backend import IpuofSessions
from .errors import MachineRefusal, Reason
from .ipuof_access import IpuofAccess
from .model import AgentEvent, EventKind, Holder, IpuHealth

log = logging.getLogger(__name__)

MAX_LINE = 4096
"""Longest line a client may send; longer lines are refused and the connection closed."""

HOLDER_KEYS = ("pid", "host", "cmd")
STATUS_KEYS = (
    "agent",
    "device",
    "serial",
    "partition",
    "routing",
    "healthy",
    "fault",
    "attached",
    "client",
    "pid",
    "host",
    "cmd",
    "since",
    "util",
    "temp",
    "power",
    "link_errors",
    "links_down",
)
"""The keys of a ``STATUS`` answer, in order."""


GUARDED_VERBS = frozenset({"ATTACH", "STATUS", "DETACH", "LOAD", "PING"})
"""First lines answered only for a host the IPU's partition admits."""


class _BadLine(ValueError):
    """A line that does not follow the protocol; the message says what to send."""


def parse_attach(words: Sequence[str]) -> tuple[str | None, Holder]:
    """``ATTACH [partition] [pid=N] [host=H] [cmd=C]`` -> (partition or None, holder)."""
    partition: str | None = None
    fields: dict[str, str] = {}
    for i, word in enumerate(words[1:]):
        key, eq, value = word.partition("=")
        if not eq:
            if i or partition is not None:
                raise _BadLine(
                    f"unexpected word {word[:40]!r}: send 'ATTACH [<partition_id>]"
                    " [pid=N] [host=H] [cmd=C]'"
                )
            partition = word
        elif key in HOLDER_KEYS:
            fields[key] = unquote(value)[:512]
        else:
            raise _BadLine(f"unknown key {key[:40]!r}: use pid=, host= or cmd=")
    pid_text = fields.get("pid", "0")
    if not pid_text.isdigit():
        raise _BadLine(f"pid must be a number, not {pid_text[:20]!r}")
    return partition, Holder(
        pid=int(pid_text), host=fields.get("host", ""), command=fields.get("cmd", "")
    )


def status_line(agent_id: str, status: IpuHealth) -> str:
    """The ``STATUS`` answer for one IPU."""
    t = status.telemetry
    values: dict[str, object] = {
        "agent": agent_id,
        "device": status.device_id,
        "serial": status.serial,
        "partition": status.partition_id,
        "routing": status.routing_id,
        "healthy": int(status.healthy),
        "fault": status.fault,
        "attached": int(status.attached),
        "client": status.attached_client,
        "pid": status.holder.pid,
        "host": status.holder.host,
        "cmd": status.holder.command,
        "since": f"{status.attached_since:.3f}",
        "util": f"{t.utilisation:.4f}",
        "temp": f"{t.temperature_c:.2f}",
        "power": f"{t.power_w:.2f}",
        "link_errors": t.link_errors,
        "links_down": t.links_down,
    }
    return "STATUS " + " ".join(f"{k}={quote(str(values[k]), safe='')}" for k in STATUS_KEYS)


class IpuofEndpoints:
    """The IPUoF listeners of one machine. Create and use inside one event loop."""

    def __init__(
        self,
        backend: IpuofSessions,
        host: str,
        server_ports: Sequence[int],
        rdma_ports: Sequence[int] = (),
        *,
        access: IpuofAccess | None = None,
        first_line_timeout: float = 30.0,
    ) -> None:
        self._backend = backend
        self._access = access if access is not None else IpuofAccess()
        self._host = host
        self._wanted_server_ports = tuple(server_ports)
        self._wanted_rdma_ports = tuple(rdma_ports)
        self._first_line_timeout = first_line_timeout
        self._servers: list[asyncio.Server] = []
        self._server_ports: tuple[int, ...] = ()
        self._rdma_ports: tuple[int, ...] = ()
        self._writers: dict[int, asyncio.StreamWriter] = {}
        self._connections: set[asyncio.Task[None]] = set()
        self._unsubscribe: Callable[[], None] | None = None

    @property
    def server_ports(self) -> tuple[int, ...]:
        """Bound server ports by device id (after :meth:`start`)."""
        return self._server_ports

    @property
    def rdma_ports(self) -> tuple[int, ...]:
        """Bound RDMA ports by device id, or the requested ones when not listening."""
        return self._rdma_ports or self._wanted_rdma_ports

    async def start(self, *, listen_rdma: bool = True) -> None:
        """Listen on every port; port 0 picks a free one. Raises OSError when a port is taken."""
        try:
            ports = []
            for device_id, port in enumerate(self._wanted_server_ports):
                server = await asyncio.start_server(
                    self._handler(device_id), self._host, port, limit=MAX_LINE
                )
                self._servers.append(server)
                ports.append(_bound_port(server))
            self._server_ports = tuple(ports)
            if listen_rdma:
                rdma = []
                for port in self._wanted_rdma_ports:
                    server = await asyncio.start_server(_refuse_rdma, self._host, port)
                    self._servers.append(server)
                    rdma.append(_bound_port(server))
                self._rdma_ports = tuple(rdma)
        except OSError:
            await self.stop()
            raise
        self._unsubscribe = self._backend.subscribe(self._on_event)

    async def stop(self) -> None:
        """Stop listening and close every attachment (applications see the connection end)."""
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        for server in self._servers:
            server.close()
        for writer in list(self._writers.values()):
            writer.close()
        for task in list(self._connections):
            task.cancel()
        if self._connections:
            await asyncio.gather(*self._connections, return_exceptions=True)
        for server in self._servers:
            with contextlib.suppress(Exception):
                await server.wait_closed()
        self._servers.clear()

    # ------------------------------------------------------------ serving

    def _handler(
        self, device_id: int
    ) -> Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]:
        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            task = asyncio.current_task()
            if task is not None:
                self._connections.add(task)
            try:
                await self._serve(device_id, reader, writer)
            except (ConnectionError, asyncio.IncompleteReadError):
                pass
            finally:
                if task is not None:
                    self._connections.discard(task)
                writer.close()

        return handle

    async def _serve(
        self, device_id: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        peer = writer.get_extra_info("peername")
        peer_host = str(peer[0]) if isinstance(peer, tuple) else ""
        client = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer)
        try:
            line = await asyncio.wait_for(reader.readline(), self._first_line_timeout)
        except TimeoutError:
            await _send(writer, f"ERR {Reason.INVALID_REQUEST} no ATTACH line within the timeout")
            return
        except ValueError:
            await _send(writer, f"ERR {Reason.INVALID_REQUEST} line longer than {MAX_LINE} bytes")
            return
        words = line.decode("utf-8", "replace").split()
        verb = words[0].upper() if words else ""
        if verb in GUARDED_VERBS and not await self._may_use(device_id, peer_host):
            await _send(writer, self._not_yours(device_id, peer_host))
            return
        if verb == "STATUS" and len(words) <= 2:
            await self._status(writer, device_id, words[1] if len(words) == 2 else None)
            return
        if verb != "ATTACH":
            await _send(
                writer,
                f"ERR {Reason.INVALID_REQUEST} send 'ATTACH [<partition_id>]' or"
                " 'STATUS [<partition_id>]' first",
            )
            return
        try:
            partition_id, holder = parse_attach(words)
            attachment = await self._backend.attach(partition_id, device_id, client, holder)
        except _BadLine as exc:
            await _send(writer, f"ERR {Reason.INVALID_REQUEST} {exc}")
            return
        except MachineRefusal as exc:
            await _send(writer, f"ERR {exc.reason} {exc.message}")
            return
        self._writers[device_id] = writer
        ended_by_client = True
        try:
            await _send(
                writer,
                f"OK {self._backend.agent_id} {device_id} {attachment.routing_id}",
            )
            while True:
                try:
                    line = await reader.readline()
                except ValueError:
                    await _send(writer, f"ERR {Reason.INVALID_REQUEST} line too long")
                    continue
                if not line:
                    break
                words = line.decode("utf-8", "replace").split()
                command = words[0].upper() if words else ""
                if command == "PING":
                    await _send(writer, "PONG")
                elif command == "DETACH":
                    await _send(writer, "BYE detached")
                    break
                elif command == "LOAD" and len(words) == 2:
                    await self._load(writer, attachment.attachment_id, words[1])
                elif command == "STATUS":
                    await self._status(writer, device_id, None)
                else:
                    await _send(
                        writer,
                        f"ERR {Reason.INVALID_REQUEST} unknown command; use PING, LOAD <0..1>,"
                        " STATUS or DETACH",
                    )
        except asyncio.CancelledError:
            ended_by_client = False
            raise
        finally:
            if self._writers.get(device_id) is writer:
                del self._writers[device_id]
            if ended_by_client:
                await self._backend.detach(attachment.attachment_id, detail="application detached")
            else:
                await self._backend.detach(
                    attachment.attachment_id, evicted=True, detail="agent stopped"
                )

    async def _may_use(self, device_id: int, peer_host: str) -> bool:
        """Whether the host at ``peer_host`` may use the partition IPU ``device_id`` is in."""
        partition_id = (await self._backend.ipu_status(device_id)).partition_id
        return self._access.allows(partition_id, peer_host)

    def _not_yours(self, device_id: int, peer_host: str) -> str:
        """The one refusal for "no partition here" and "not your partition": it tells a
        stranger nothing about the partition."""
        return (
            f"ERR {Reason.IPU_NOT_CONFIGURED} IPU {device_id} of agent {self._backend.agent_id}"
            f" is in no active partition that host {peer_host or 'unknown'} may use: create a"
            " partition in an allocation whose hosts include this host"
        )

    async def _status(
        self, writer: asyncio.StreamWriter, device_id: int, partition_id: str | None
    ) -> None:
        status = await self._backend.ipu_status(device_id)
        if partition_id is not None and status.partition_id != partition_id:
            where = f"IPU {device_id} of agent {self._backend.agent_id}"
            if status.partition_id:
                await _send(
                    writer,
                    f"ERR {Reason.WRONG_PARTITION} {where} belongs to partition"
                    f" {status.partition_id}, not {partition_id}",
                )
            else:
                await _send(
                    writer,
                    f"ERR {Reason.IPU_NOT_CONFIGURED} {where} is in no active partition",
                )
            return
        await _send(writer, status_line(self._backend.agent_id, status))

    async def _load(self, writer: asyncio.StreamWriter, attachment_id: int, text: str) -> None:
        try:
            load = float(text)
        except ValueError:
            load = -1.0
        if not 0.0 <= load <= 1.0:
            await _send(writer, f"ERR {Reason.INVALID_REQUEST} LOAD takes a number from 0 to 1")
            return
        await self._backend.set_load(attachment_id, load)
        await _send(writer, f"OK load {load:g}")

    def _on_event(self, event: AgentEvent) -> None:
        """Close the connection of an attachment the agent ended."""
        if event.kind is not EventKind.DETACHED or not event.evicted or event.device_id is None:
            return
        writer = self._writers.pop(event.device_id, None)
        if writer is None:
            return
        with contextlib.suppress(Exception):
            writer.write(f"BYE {event.detail}\n".encode())
        writer.close()


async def _send(writer: asyncio.StreamWriter, line: str) -> None:
    writer.write(line.encode() + b"\n")
    await writer.drain()


async def _refuse_rdma(_reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    writer.close()


def _bound_port(server: asyncio.Server) -> int:
    port: int = server.sockets[0].getsockname()[1]
    return port
