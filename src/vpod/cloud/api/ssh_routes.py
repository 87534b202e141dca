"""SSH routes: a project's keypairs, the keypairs of a cluster, and how to reach its
servers' sshd (host keys, the tunnel). Module-level, bound like ``router`` by
``cloud_router``; the tunnel itself is a WebSocket (``ssh_tunnel.py``)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from urllib.parse import quote, urlencode

from fastapi import APIRouter, Query, Request

from vpod.wire.field_copy import copy_all_fields
from vpod.wire.rest.cloud_clusters import SshHostKeyOut
from vpod.wire.rest.cloud_ssh import (
    ClusterSshOut,
    ConsoleOut,
    KeypairCreatedOut,
    KeypairIn,
    KeypairOut,
    ServerSshOut,
)

from ..model.records import Keypair
from ..services.keypairs import Keypairs
from ..services.projects import Principal
from .deps import PREFIX, CloudDep, Tenant, creates
from .errors import CloudRoute, error_responses

TUNNEL_PATH = "/clusters/{cluster}/servers/{server}/ssh/connect"
"""Under the cloud API's prefix: the WebSocket carrying one SSH connection."""

ssh_router = APIRouter(
    prefix=PREFIX, tags=["ssh"], route_class=CloudRoute, responses=error_responses()
)


def tunnel_path(prefix: str, cluster: str, server: str) -> str:
    return prefix + TUNNEL_PATH.format(
        cluster=quote(cluster, safe=""), server=quote(server, safe="")
    )


def keypair_out(keypair: Keypair) -> KeypairOut:
    return copy_all_fields(KeypairOut, keypair, type=keypair.key_type)


@ssh_router.get("/keypairs", response_model=list[KeypairOut], summary="Your keypairs")
async def list_keypairs(cloud: CloudDep, who: Tenant) -> list[KeypairOut]:
    return [keypair_out(k) for k in await cloud.keypairs.list_keypairs(who)]


@creates(
    ssh_router.post,
    "/keypairs",
    KeypairCreatedOut,
    "Make a keypair (the private key is answered once) or import a public key",
)
async def create_keypair(cloud: CloudDep, body: KeypairIn, who: Tenant) -> KeypairCreatedOut:
    private: str | None = None
    if body.public_key is None:
        keypair, private = await cloud.keypairs.create(who, body.name)
    else:
        keypair = await cloud.keypairs.import_key(who, body.name, body.public_key)
    return KeypairCreatedOut(**keypair_out(keypair).model_dump(), private_key=private)


@ssh_router.get("/keypairs/{keypair}", response_model=KeypairOut, summary="One keypair")
async def get_keypair(cloud: CloudDep, keypair: str, who: Tenant) -> KeypairOut:
    return keypair_out(await cloud.keypairs.get(who, keypair))


@ssh_router.delete(
    "/keypairs/{keypair}", status_code=204, summary="Delete a keypair no cluster holds"
)
async def delete_keypair(cloud: CloudDep, keypair: str, who: Tenant) -> None:
    await cloud.keypairs.delete(who, keypair)


@ssh_router.get(
    "/clusters/{cluster}/keypairs",
    response_model=list[KeypairOut],
    summary="The keypairs that may log in to a cluster's servers",
)
async def cluster_keypairs(cloud: CloudDep, cluster: str, who: Tenant) -> list[KeypairOut]:
    return [keypair_out(k) for k in await cloud.keypairs.of_cluster(who, cluster)]


def _cluster_keypair(
    method: str,
    change: Callable[[Keypairs, Principal, str, str], Awaitable[list[Keypair]]],
    name: str,
    summary: str,
) -> None:
    """A route letting a keypair log in to a cluster's servers, or no longer: the cluster's
    keypairs after."""

    async def route(cloud: CloudDep, cluster: str, keypair: str, who: Tenant) -> list[KeypairOut]:
        return [keypair_out(k) for k in await change(cloud.keypairs, who, cluster, keypair)]

    ssh_router.add_api_route(
        "/clusters/{cluster}/keypairs/{keypair}",
        route,
        methods=[method],
        response_model=list[KeypairOut],
        summary=summary,
        name=name,
    )


_cluster_keypair(
    "PUT",
    Keypairs.give,
    "add_cluster_keypair",
    "Let a keypair log in to a cluster's servers (at once, running or not)",
)
_cluster_keypair(
    "DELETE",
    Keypairs.take,
    "remove_cluster_keypair",
    "Stop a keypair logging in to a cluster's servers",
)


@ssh_router.get(
    "/clusters/{cluster}/ssh",
    response_model=ClusterSshOut,
    summary="How to reach the servers' sshd: users, host keys, tunnels",
)
async def cluster_ssh(
    cloud: CloudDep, cluster: str, who: Tenant, request: Request
) -> ClusterSshOut:
    found = await cloud.cluster_views.find(who, cluster)
    servers = await cloud.ssh.info(who, found.id)
    keypairs = await cloud.keypairs.of_cluster(who, found.id)
    direct_host = cloud.ssh_ports.host_for(request.url.hostname or "127.0.0.1")
    return ClusterSshOut(
        cluster=found.name,
        keypairs=[k.name for k in keypairs],
        servers=[
            copy_all_fields(
                ServerSshOut,
                s,
                host_keys=[copy_all_fields(SshHostKeyOut, k) for k in s.host_keys],
                connect=tunnel_path(PREFIX, found.name, s.name),
                direct_host=direct_host if s.direct_port is not None else None,
            )
            for s in servers
        ],
    )


TERMINAL_PAGE = "/tenant/terminal"
"""The web console's page holding a browser terminal (``vpod.web``)."""


async def _console(
    cloud: CloudDep, who: Tenant, request: Request, cluster: str, server: str
) -> ConsoleOut:
    found = await cloud.ssh.server(who, cluster, server)
    named = await cloud.cluster_views.find(who, cluster)
    query = urlencode({"cluster": named.name, "server": found.position})
    url = f"{str(request.base_url).rstrip('/')}{TERMINAL_PAGE}?{query}"
    return ConsoleOut(type="web-terminal", url=url, server=found.name)


@ssh_router.get(
    "/clusters/{cluster}/console",
    response_model=ConsoleOut,
    summary="The address of a browser terminal on a server (`?server=`: number or name)",
)
async def cluster_console(
    cloud: CloudDep,
    cluster: str,
    who: Tenant,
    request: Request,
    server: str = Query("1", max_length=63, description="The server's number or name."),
) -> ConsoleOut:
    return await _console(cloud, who, request, cluster, server)


@ssh_router.get(
    "/clusters/{cluster}/servers/{server}/console",
    response_model=ConsoleOut,
    summary="The address of a browser terminal on one server",
)
async def server_console(
    cloud: CloudDep, cluster: str, server: str, who: Tenant, request: Request
) -> ConsoleOut:
    return await _console(cloud, who, request, cluster, server)


__all__ = ["TUNNEL_PATH", "keypair_out", "ssh_router", "tunnel_path"]
