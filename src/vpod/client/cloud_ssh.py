"""SSH calls of the cloud clients (mixed into :class:`~.cloud.CloudClient` and
:class:`~.cloud.AsyncCloudClient`): keypairs, a cluster's keypairs, its servers' host keys;
and :class:`SshTunnel`, one SSH connection to a server's sshd through the controller.

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
from websockets.sync.client import ClientConnection

from . import cloud_calls as calls
from .cloud_config import API_PREFIX
from .cloud_records import ClusterSsh, Console, Keypair
from .cloud_shell import websocket_to
from .http_transport import AsyncHttpTransport, HttpSite, HttpTransport

_CHUNK = 65536


def tunnel_path(cluster: str, server: str) -> str:
    """The tunnel's path to ``server`` (its number or name) of ``cluster``."""
    c, s = quote(cluster, safe=""), quote(server, safe="")
    return f"{API_PREFIX}/clusters/{c}/servers/{s}/ssh/connect"


class SshTunnel:
    """One SSH connection's bytes to and from a server's sshd; close it to hang up."""

    def __init__(self, ws: ClientConnection) -> None:
        self._ws = ws

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

    def close(self) -> None:
        self._ws.close()

    def __enter__(self) -> SshTunnel:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


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


class SshCalls:
    _http: HttpTransport
    _site: HttpSite

    def list_keypairs(self) -> list[Keypair]:
        return self._http.invoke(calls.list_keypairs())

    def create_keypair(self, name: str, public_key: str | None = None) -> Keypair:
        """Import ``public_key`` (an OpenSSH line), or, without one, have the cloud make an
        ed25519 key: its ``private_key`` is in this answer only."""
        return self._http.invoke(calls.create_keypair(name, public_key))

    def get_keypair(self, keypair: str) -> Keypair:
        return self._http.invoke(calls.get_keypair(keypair))

    def delete_keypair(self, keypair: str) -> None:
        """Refused (FailedPrecondition) while a cluster holds it."""
        self._http.invoke(calls.delete_keypair(keypair))

    def cluster_keypairs(self, cluster: str) -> list[Keypair]:
        return self._http.invoke(calls.cluster_keypairs(cluster))

    def add_cluster_keypair(self, cluster: str, keypair: str) -> list[Keypair]:
        """Let the keypair log in to the cluster's servers; the cluster's keypairs after."""
        return self._http.invoke(calls.add_cluster_keypair(cluster, keypair))

    def remove_cluster_keypair(self, cluster: str, keypair: str) -> list[Keypair]:
        return self._http.invoke(calls.remove_cluster_keypair(cluster, keypair))

    def cluster_ssh(self, cluster: str) -> ClusterSsh:
        """Each server's name, user and host keys (to pin in known_hosts)."""
        return self._http.invoke(calls.cluster_ssh(cluster))

    def cluster_console(self, cluster: str, server: str = "1") -> Console:
        """The address of a browser terminal on the server (its number or name)."""
        return self._http.invoke(calls.cluster_console(cluster, server))

    def open_ssh_tunnel(self, cluster: str, server: str) -> SshTunnel:
        """An SSH connection to the server's sshd (``server``: its number or name)."""
        return open_tunnel(self._site, cluster, server)


class AsyncSshCalls:
    _http: AsyncHttpTransport

    async def list_keypairs(self) -> list[Keypair]:
        return await self._http.invoke(calls.list_keypairs())

    async def create_keypair(self, name: str, public_key: str | None = None) -> Keypair:
        return await self._http.invoke(calls.create_keypair(name, public_key))

    async def get_keypair(self, keypair: str) -> Keypair:
        return await self._http.invoke(calls.get_keypair(keypair))

    async def delete_keypair(self, keypair: str) -> None:
        await self._http.invoke(calls.delete_keypair(keypair))

    async def cluster_keypairs(self, cluster: str) -> list[Keypair]:
        return await self._http.invoke(calls.cluster_keypairs(cluster))

    async def add_cluster_keypair(self, cluster: str, keypair: str) -> list[Keypair]:
        return await self._http.invoke(calls.add_cluster_keypair(cluster, keypair))

    async def remove_cluster_keypair(self, cluster: str, keypair: str) -> list[Keypair]:
        return await self._http.invoke(calls.remove_cluster_keypair(cluster, keypair))

    async def cluster_ssh(self, cluster: str) -> ClusterSsh:
        return await self._http.invoke(calls.cluster_ssh(cluster))

    async def cluster_console(self, cluster: str, server: str = "1") -> Console:
        return await self._http.invoke(calls.cluster_console(cluster, server))


__all__ = ["AsyncSshCalls", "SshCalls", "SshTunnel", "open_tunnel", "pump", "tunnel_path"]
