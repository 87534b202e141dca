"""The application's side of the agents' IPUoF line protocol (docs/agent-protocol.md).

Each IPU listens on its IPUoF server port; one TCP connection, one line
each way, UTF-8:

- ``ATTACH [<partition>] pid=.. host=.. cmd=..`` -> ``OK <agent> <device> <routing>``
  or ``ERR <reason> <sentence>``; the application holds the IPU while the
  connection stays open;
- ``LOAD <0..1>`` -> ``OK load <x>`` (how busy the application keeps the IPU);
- ``STATUS [<partition>]`` -> ``STATUS k=v ...`` (values percent-encoded);
- ``DETACH`` -> ``BYE detached``; the machine ends an attachment with ``BYE <why>``.

Written from the documented protocol, not from the agent's code, so an
application needs nothing of the agent package.
"""

from __future__ import annotations

import contextlib
import os
import socket
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from typing import Any
from urllib.parse import quote, unquote

from .config import IpuofDevice
from .errors import AttachRefused, DeviceBusy, DeviceLost, IpuofError

CONNECT_TIMEOUT_S = 10.0
MAX_COMMAND = 200
"""Characters of the command line sent with ATTACH (the agent keeps 512)."""


@dataclass(frozen=True, slots=True)
class Holder:
    """Who an application says it is when it attaches: shown to anyone it keeps waiting."""

    pid: int = 0
    host: str = ""
    command: str = ""

    @classmethod
    def this_process(cls) -> Holder:
        command = " ".join([os.path.basename(sys.argv[0]), *sys.argv[1:]]) if sys.argv else ""
        return cls(pid=os.getpid(), host=socket.gethostname(), command=command[:MAX_COMMAND])

    def words(self) -> str:
        return f"pid={self.pid} host={quote(self.host, safe='')} cmd={quote(self.command, safe='')}"


@dataclass(frozen=True, slots=True)
class IpuStatus:
    """One IPU as its machine reports it: where it is, who holds it, its telemetry."""

    agent: str
    device_id: int
    serial: str
    partition_id: str
    routing_id: int
    healthy: bool
    fault: str
    attached: bool
    client: str
    holder: Holder
    attached_since: float
    utilisation: float
    temperature_c: float
    power_w: float
    link_errors: int
    links_down: int

    @property
    def busy(self) -> bool:
        return self.utilisation > 0.0

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["busy"] = self.busy
        return data


def parse_status(line: str) -> IpuStatus:
    """A ``STATUS k=v ...`` line."""
    words = line.split()
    if not words or words[0] != "STATUS":
        raise IpuofError(f"unexpected answer from an IPUoF endpoint: {line[:80]!r}")
    values = {}
    for word in words[1:]:
        key, _, value = word.partition("=")
        values[key] = unquote(value)

    def number(key: str) -> float:
        try:
            return float(values.get(key, "0") or 0)
        except ValueError:
            return 0.0

    return IpuStatus(
        agent=values.get("agent", ""),
        device_id=int(number("device")),
        serial=values.get("serial", ""),
        partition_id=values.get("partition", ""),
        routing_id=int(number("routing")),
        healthy=values.get("healthy") == "1",
        fault=values.get("fault", ""),
        attached=values.get("attached") == "1",
        client=values.get("client", ""),
        holder=Holder(
            pid=int(number("pid")), host=values.get("host", ""), command=values.get("cmd", "")
        ),
        attached_since=number("since"),
        utilisation=number("util"),
        temperature_c=number("temp"),
        power_w=number("power"),
        link_errors=int(number("link_errors")),
        links_down=int(number("links_down")),
    )


def refusal(ipu: IpuofDevice, rest: str) -> AttachRefused:
    """The exception for ``ERR <reason> <sentence>`` from ``ipu``'s endpoint."""
    reason, _, sentence = rest.partition(" ")
    if reason == "ipu-attached":
        holder = sentence.split(" is already attached by ", 1)[-1].split(":", 1)[0]
        return DeviceBusy(sentence, holder)
    return AttachRefused(f"{sentence} (IPU at {ipu.endpoint})", reason)


class LineConnection:
    """One connection to one IPU's IPUoF server port."""

    def __init__(self, ipu: IpuofDevice, timeout: float = CONNECT_TIMEOUT_S) -> None:
        self.ipu = ipu
        try:
            self.sock = socket.create_connection((ipu.ip, ipu.server_port), timeout=timeout)
        except OSError as exc:
            raise IpuofError(
                f"cannot reach the IPUoF endpoint {ipu.endpoint} of routing id"
                f" {ipu.routing_id}: {exc.strerror or exc}; is the IPU-Machine's agent running?"
            ) from None
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._buffer = b""

    def send(self, line: str) -> None:
        try:
            self.sock.sendall(line.encode() + b"\n")
        except OSError as exc:
            raise DeviceLost(
                f"the connection to the IPU at {self.ipu.endpoint} broke: {exc.strerror or exc}"
            ) from None

    def receive(self) -> str | None:
        """The next line, or None when the endpoint closed the connection."""
        while b"\n" not in self._buffer:
            try:
                chunk = self.sock.recv(4096)
            except TimeoutError:
                raise IpuofError(
                    f"the IPUoF endpoint {self.ipu.endpoint} did not answer in time"
                ) from None
            except OSError:
                return None
            if not chunk:
                return None
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line.decode("utf-8", "replace")

    def has_pending(self) -> bool:
        """True when the endpoint sent something (or closed) that nobody read yet."""
        if b"\n" in self._buffer:
            return True
        timeout = self.sock.gettimeout()
        self.sock.setblocking(False)
        try:
            chunk = self.sock.recv(4096)
        except (BlockingIOError, InterruptedError):
            return False
        except OSError:
            return True
        finally:
            self.sock.settimeout(timeout)  # setblocking(True) would drop the timeout
        if not chunk:
            self._buffer += b"BYE connection closed\n"
        self._buffer += chunk
        return True

    def request(self, line: str) -> str | None:
        self.send(line)
        return self.receive()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()


def query_status(
    ipu: IpuofDevice, partition_id: str | None = None, timeout: float = CONNECT_TIMEOUT_S
) -> IpuStatus:
    """Ask one IPU's endpoint for its state, holder and telemetry (does not attach)."""
    connection = LineConnection(ipu, timeout)
    try:
        answer = connection.request("STATUS" + (f" {partition_id}" if partition_id else ""))
    finally:
        connection.close()
    if answer is None:
        raise IpuofError(f"the IPUoF endpoint {ipu.endpoint} closed without answering")
    if answer.startswith("ERR "):
        raise refusal(ipu, answer[4:])
    return parse_status(answer)


def query_statuses(
    ipus: list[IpuofDevice] | tuple[IpuofDevice, ...],
    partition_id: str | None = None,
    timeout: float = CONNECT_TIMEOUT_S,
) -> list[IpuStatus | IpuofError]:
    """:func:`query_status` of many IPUs at once; a failure is returned in its place."""

    def one(ipu: IpuofDevice) -> IpuStatus | IpuofError:
        try:
            return query_status(ipu, partition_id, timeout)
        except IpuofError as exc:
            return exc

    if not ipus:
        return []
    with ThreadPoolExecutor(max_workers=min(16, len(ipus))) as pool:
        return list(pool.map(one, ipus))
