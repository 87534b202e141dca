"""Attach a device exclusively, as Poplar's ``DeviceManager.acquireDevice`` does.

:func:`attach` opens one connection per IPU of the device, in routing order,
and holds them: the IPUs are the caller's for as long as the connections
stay open. Attaching is all or nothing: when one IPU refuses (another
process holds it, it is faulted, it is not in the partition) the IPUs
already taken are let go and the refusal is raised, naming the holder.

Detaching happens on :meth:`Attachment.detach`, at the end of a ``with``
block, at interpreter exit, and, since the operating system closes a dead
process's sockets, when the process dies in any way: the machine sees the
connection end at once, and the controller's auto-reset follows at its next
heartbeat (docs/agent-protocol.md, "Auto-reset cue").
"""

from __future__ import annotations

import atexit
import threading
import weakref
from dataclasses import dataclass
from typing import TypedDict, Unpack

from .config import IpuofDevice, PartitionTarget
from .devices import Device, find_device
from .errors import DeviceLost, IpuofError
from .protocol import CONNECT_TIMEOUT_S, Holder, LineConnection, refusal

_LIVE: weakref.WeakSet[Attachment] = weakref.WeakSet()
_LIVE_LOCK = threading.Lock()


@dataclass(frozen=True, slots=True)
class AttachedIpu:
    """One IPU of an attachment: where the machine says it is."""

    agent: str
    device_id: int
    routing_id: int
    endpoint: str


class Attachment:
    """A device held by this process. Use it as a context manager, or call :meth:`detach`."""

    def __init__(
        self,
        target: PartitionTarget,
        device: Device,
        connections: list[LineConnection],
        ipus: list[AttachedIpu],
    ) -> None:
        self.target = target
        self.device = device
        self.ipus = tuple(ipus)
        self._connections = connections
        self._lost: str | None = None
        with _LIVE_LOCK:
            _LIVE.add(self)

    @property
    def attached(self) -> bool:
        return bool(self._connections)

    def describe(self) -> str:
        where = ", ".join(sorted({i.agent for i in self.ipus}))
        return (
            f"device {self.device.id} ({self.device.num_ipus} IPU"
            f"{'s' if self.device.num_ipus > 1 else ''}) of {self.target.describe()} on {where}"
        )

    def check(self) -> None:
        """Raise :class:`DeviceLost` if a machine ended the attachment (reset, release, fault)."""
        if self._lost is not None:
            raise DeviceLost(self._lost)
        for connection in self._connections:
            if connection.has_pending():
                line = connection.receive() or "BYE connection closed"
                if line.startswith("BYE"):
                    self._lose(connection.ipu, line[4:] or "the machine ended it")

    def set_load(self, load: float) -> None:
        """Tell the machines how busy this process keeps its IPUs (0..1): telemetry follows."""
        self.check()
        text = f"LOAD {min(1.0, max(0.0, load)):.4f}"
        for connection in self._connections:
            connection.send(text)
        for connection in self._connections:
            answer = connection.receive() or "BYE connection closed"
            if answer.startswith("BYE"):
                self._lose(connection.ipu, answer[4:])
            if answer.startswith("ERR"):
                raise IpuofError(f"the IPU at {connection.ipu.endpoint} refused {text}: {answer}")

    def detach(self) -> None:
        """Let go of every IPU (idempotent)."""
        connections, self._connections = self._connections, []
        for connection in connections:
            try:
                connection.send("DETACH")
                connection.receive()
            except IpuofError:
                pass
            finally:
                connection.close()
        with _LIVE_LOCK:
            _LIVE.discard(self)

    def _lose(self, ipu: IpuofDevice, why: str) -> None:
        self._lost = (
            f"the machine ended the attachment of the IPU at {ipu.endpoint} (routing id"
            f" {ipu.routing_id}): {why.strip()}"
        )
        self.detach()
        raise DeviceLost(self._lost)

    def __enter__(self) -> Attachment:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.detach()


class AttachOptions(TypedDict, total=False):
    """What :func:`attach` passes on to :func:`attach_device`, whose defaults apply."""

    holder: Holder | None
    """Who holds the IPUs, as the machine tells whoever asks (None: this process)."""
    timeout: float
    """Seconds to connect to each IPU."""


def attach(target: PartitionTarget, device_id: int, **options: Unpack[AttachOptions]) -> Attachment:
    """Attach device ``device_id`` of ``target`` (an id of :func:`~.devices.list_devices`)."""
    return attach_device(target, find_device(target, device_id), **options)


def attach_device(
    target: PartitionTarget,
    device: Device,
    *,
    holder: Holder | None = None,
    timeout: float = CONNECT_TIMEOUT_S,
) -> Attachment:
    who = (holder or Holder.this_process()).words()
    line = f"ATTACH {target.partition_id} {who}" if target.partition_id else f"ATTACH {who}"
    connections: list[LineConnection] = []
    placed: list[AttachedIpu] = []
    try:
        for ipu in device.ipus:  # routing order: racing processes meet at the first IPU
            connection = LineConnection(ipu, timeout)
            answer = connection.request(line)
            if answer is None or not answer.startswith("OK "):
                connection.close()
                if answer is not None and answer.startswith("ERR "):
                    raise refusal(ipu, answer[4:])
                raise IpuofError(
                    f"the IPUoF endpoint {ipu.endpoint} closed without answering ATTACH"
                )
            connections.append(connection)
            words = answer.split()
            placed.append(
                AttachedIpu(
                    agent=words[1] if len(words) > 1 else "",
                    device_id=int(words[2]) if len(words) > 2 else ipu.device_id,
                    routing_id=int(words[3]) if len(words) > 3 else ipu.routing_id,
                    endpoint=ipu.endpoint,
                )
            )
    except BaseException:
        for connection in connections:
            connection.close()
        raise
    return Attachment(target, device, connections, placed)


@atexit.register
def _detach_all() -> None:
    with _LIVE_LOCK:
        live = list(_LIVE)
    for attachment in live:
        attachment.detach()
