"""An application's side of IPUoF, as the emulated machines speak it (see vpod.agent.ipuof).

Poplar's IPUoF client reads the partition's config (devices with ``ip`` and
``server_port``), opens one connection per IPU and holds the IPU for as long
as the connection stays open. Here that is a TCP connection and one line
each way: ``ATTACH <partition>`` is answered by ``OK <agent> <device>
<routing id>`` or ``ERR <reason> <sentence>``; ``DETACH`` by ``BYE detached``;
the machine ends an attachment itself with ``BYE <why>``.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass

from vpod.wire import virmgrpc_pb2 as pb

TIMEOUT_S = 30.0


@dataclass(frozen=True)
class Answer:
    """One line from an IPUoF endpoint, split into its first word and the rest."""

    word: str
    rest: str

    @property
    def reason(self) -> str:
        """For ``ERR``: the machine-readable reason (``ipu-attached`` ...)."""
        return self.rest.split(" ", 1)[0]


def _answer(line: str) -> Answer:
    word, _, rest = line.strip().partition(" ")
    return Answer(word, rest)


class IpuConnection:
    """One connection to the IPUoF server port of one IPU."""

    def __init__(self, ip: str, port: int) -> None:
        self.sock = socket.create_connection((ip, port), timeout=TIMEOUT_S)
        self._reader = self.sock.makefile("r", encoding="utf-8", newline="\n")

    @classmethod
    def to(cls, device: pb.IpuofDevice) -> IpuConnection:
        return cls(device.ip, device.server_port)

    def send(self, line: str) -> None:
        self.sock.sendall(line.encode() + b"\n")

    def receive(self) -> Answer | None:
        """The next line, or None when the endpoint closed the connection."""
        line = self._reader.readline()
        return _answer(line) if line else None

    def request(self, line: str) -> Answer | None:
        self.send(line)
        return self.receive()

    def attach(self, partition_id: str) -> Answer | None:
        return self.request(f"ATTACH {partition_id}")

    def close(self) -> None:
        self._reader.close()
        self.sock.close()


class Application:
    """Holds IPUs of a partition the way a running program does: one open connection each."""

    def __init__(self, partition_id: str) -> None:
        self.partition_id = partition_id
        self.connections: list[IpuConnection] = []

    def attach(self, device: pb.IpuofDevice) -> tuple[IpuConnection, Answer | None]:
        """Connect to the device's endpoint and ask for it; the connection is kept either way."""
        connection = IpuConnection.to(device)
        self.connections.append(connection)
        return connection, connection.attach(self.partition_id)

    def close(self) -> None:
        """End the program: every connection closes, which detaches its IPU."""
        for connection in self.connections:
            connection.close()
        self.connections.clear()

    def __enter__(self) -> Application:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()
