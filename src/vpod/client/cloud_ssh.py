""":class:`SshTunnel`: one SSH connection to a cloud server's sshd through the controller
(:meth:`~.cloud.CloudClient.open_ssh_tunnel`; the SSH calls, keypairs and host keys, are
methods of the cloud clients).

The tunnel is a WebSocket of the cloud API carrying the SSH stream's bytes
both ways (docs/ssh.md); the SSH session inside it is end to end between
the client and the server's sshd. :func:`pump` joins it to a pair of file
descriptors: what ``vpod cluster ssh-proxy`` does for OpenSSH's
``ProxyCommand``.
"""

from __future__ import annotations

import contextlib
import os
import threading
from urllib.parse import quote

from websockets.exceptions import ConnectionClosed

from .cloud_config import API_PREFIX
from .cloud_shell import WebSocketSession, websocket_to
from .http_transport import HttpSite

_CHUNK = 65536


def tunnel_path(cluster: str, server: str) -> str:
    """The tunnel's path to ``server`` (its number or name) of ``cluster``."""
    c, s = quote(cluster, safe=""), quote(server, safe="")
    return f"{API_PREFIX}/clusters/{c}/servers/{s}/ssh/connect"


class SshTunnel(WebSocketSession):
    """One SSH connection's bytes to and from a server's sshd; close it to hang up."""

    def send(self, data: bytes) -> None:
        self._ws.send(data)

    def receive(self) -> bytes | None:
        """The next bytes from sshd; ``None`` once it hung up."""
        while True:
            try:
                message = self._ws.recv()
            except ConnectionClosed:
                return None
            if isinstance(message, bytes):
                return message


def open_tunnel(site: HttpSite, cluster: str, server: str) -> SshTunnel:
    return SshTunnel(websocket_to(site, tunnel_path(cluster, server), "SSH tunnel"))


def pump(tunnel: SshTunnel, source: int = 0, sink: int = 1) -> None:
    """Carry ``source`` to the tunnel and the tunnel to ``sink`` until either side ends."""

    def upstream() -> None:
        with contextlib.suppress(Exception):  # the tunnel closed: nothing more to send
            while data := os.read(source, _CHUNK):
                tunnel.send(data)
        with contextlib.suppress(Exception):
            tunnel.close()  # end of input: OpenSSH closed the connection

    threading.Thread(target=upstream, daemon=True).start()
    while (data := tunnel.receive()) is not None:
        view = memoryview(data)
        while view:
            view = view[os.write(sink, view) :]


__all__ = ["SshTunnel", "open_tunnel", "pump", "tunnel_path"]
