"""POST_DEPLOY_SETUP: what every server of a cluster is told, and keeping it current.

vPOD servers get ``vipu-cli.hcl`` and the ``IPUOF_VIPU_API_*`` environment
pointing at the V-IPU user API with the vPOD's own V-IPU user; GPU servers
get their GPUs and fabric in the environment; every server gets its peers,
the public keys of the cluster's keypairs (its sshd's ``authorized_keys``)
and, when the cluster holds dataset storage, its ``~/.aws`` files, ``AWS_*``
variables and mount (:mod:`.services.dataset_access`).
The V-IPU access key is written only to the servers, never to the store: a
key made by the running task is used while the task holds it; servers that
hold the user's key keep it; if any server lacks one (a restart lost the new
key, a rebuild wiped it) a new key is issued and written to every server.

The endpoint the servers were given is remembered on the cluster
(``network.vipu_api``): when the controller comes back on another address,
:func:`refresh_endpoints` rewrites it on idle ACTIVE vPODs, keeping keys.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, MutableMapping, Sequence
from urllib.parse import urlsplit

from .drivers import DatasetAccess, NetworkReach, ServerSetup, VipuAccess
from .flavors import Flavor, find_flavor
from .model.records import Cluster, Server
from .services.context import CloudContext
from .services.dataset_access import dataset_access
from .services.gpu_hosts import ServerGpu, server_gpus
from .services.keypairs import authorized_lines
from .states import ClusterStatus
from .vipu import user_id_of

log = logging.getLogger("vpod.cloud")


def _gpu_setup(
    cluster: Cluster, flavor: Flavor, gpus: Sequence[ServerGpu]
) -> tuple[dict[str, str], tuple[tuple[str, str], ...]]:
    """A GPU server's environment and device nodes. GPUs of a host with an agent are named
    by UUID (``CUDA_VISIBLE_DEVICES`` and ``NVIDIA_VISIBLE_DEVICES`` take UUIDs, so the
    names hold however the server numbers its GPUs) and only their nodes are bound; a host
    registered by hand gives indexes 0..N-1, as a server sees its N GPUs."""
    records = [g.record for g in gpus]
    if records and all(r is not None for r in records):
        visible = ",".join(r.uuid for r in records if r is not None)
        devices: dict[str, str] = {}
        for record in records:
            for node in record.details.get("devices", []) if record is not None else []:
                devices.setdefault(str(node["path"]), str(node["source"]))
        nodes = tuple(sorted(devices.items()))
    else:
        visible = ",".join(str(i) for i in range(flavor.gpus_per_server))
        nodes = ()
    env = {
        "CUDA_VISIBLE_DEVICES": visible,
        "NVIDIA_VISIBLE_DEVICES": visible,
        "VPOD_GPU_MODEL": flavor.host_model or "",
        "VPOD_IB_FABRIC": cluster.fabric or "",
    }
    return env, nodes


async def _reach(
    ctx: CloudContext,
    cluster: Cluster,
    datasets: DatasetAccess | None,
    user_api: tuple[str, int] | None = None,
) -> NetworkReach:
    """What the cluster's servers may reach: the V-IPU user API (vPODs), the cloud API,
    their dataset storage endpoint, and the IPUoF endpoints of their allocation's machines
    (asked again at every setup: a resume may have moved the allocation)."""
    services = [s for s in (user_api, ctx.vipu.cloud_api) if s is not None]
    if datasets is not None:
        url = urlsplit(datasets.endpoint_url)
        if url.hostname:
            services.append((url.hostname, url.port or (443 if url.scheme == "https" else 80)))
    ipuof: list[str] = []
    if cluster.allocation_id is not None:
        ipuof = await ctx.vipu.ipuof_addresses(cluster.allocation_id)
    return NetworkReach(tuple(services), tuple(ipuof))


async def peer_host_keys(ctx: CloudContext, servers: Sequence[Server]) -> tuple[str, ...]:
    """``known_hosts`` lines of the servers' SSH host keys, by name and address."""
    lines = []
    for server in servers:
        names = ",".join(dict.fromkeys(n for n in (server.name, server.address) if n))
        for key in await ctx.compute.ssh_host_keys(server.id):
            lines.append(f"{names} {key}")
    return tuple(lines)


async def configure_servers(
    ctx: CloudContext,
    cluster: Cluster,
    servers: Sequence[Server],
    secrets: MutableMapping[str, str],
    warn: Callable[[str], None] | None = None,
) -> None:
    """``warn``: where to say that the cluster's dataset storage cannot be served (it is
    then left out); None: that fails the setup (attaching it)."""
    flavor = find_flavor(cluster.flavor)
    peers = tuple((s.name, s.address) for s in servers)
    known_hosts = await peer_host_keys(ctx, servers)
    datasets = await dataset_access(ctx, cluster.id, warn)
    keys = await authorized_lines(ctx, cluster.id)
    cloud_api = ctx.vipu.cloud_api
    # what a driver with networks of its own lets the servers reach beyond their peers
    endpoints = (f"{cloud_api[0]}:{cloud_api[1]}",) if cloud_api else ()
    if not flavor.is_vpod:
        await ctx.compute.set_reach(cluster.id, await _reach(ctx, cluster, datasets))
        held = await server_gpus(ctx, [s.id for s in servers])
        for server in servers:
            env, devices = _gpu_setup(cluster, flavor, held.get(server.id, []))
            setup = ServerSetup(
                cluster.name,
                peers,
                env,
                datasets=datasets,
                devices=devices,
                authorized_keys=keys,
                endpoints=endpoints,
                known_hosts=known_hosts,
            )
            await ctx.compute.setup(server.id, setup)
        return
    host, port = await ctx.vipu.user_api()
    await ctx.compute.set_reach(cluster.id, await _reach(ctx, cluster, datasets, (host, port)))
    if cluster.allocation_id is not None:  # its IPUs answer its own servers only
        sources = ctx.compute.ipuof_sources([s.address for s in servers])
        await ctx.vipu.set_allocation_hosts(cluster.allocation_id, list(sources))
    user_id = cluster.vipu_user_id or user_id_of(cluster.id)

    async def write(key: str | None) -> bool:
        access = VipuAccess(host=host, port=port, user_id=user_id, access_key=key)
        results = [
            await ctx.compute.setup(
                server.id,
                ServerSetup(
                    cluster.name,
                    peers,
                    vipu=access,
                    datasets=datasets,
                    authorized_keys=keys,
                    endpoints=endpoints,
                    known_hosts=known_hosts,
                ),
            )
            for server in servers
        ]
        return all(r.has_vipu_credentials for r in results)

    if not await write(secrets.get("vipu_key")):
        secrets["vipu_key"] = await ctx.vipu.new_key(user_id)
        await write(secrets["vipu_key"])
    endpoint = f"{host}:{port}"
    if cluster.network.get("vipu_api") != endpoint:
        network = {**cluster.network, "vipu_api": endpoint}
        await ctx.records.update_cluster(cluster.id, network=network)


async def refresh_endpoints(ctx: CloudContext) -> None:
    """Rewrite a moved V-IPU endpoint on the servers of idle ACTIVE or DEGRADED vPODs."""
    known = ctx.vipu.known_user_api
    if known is None:
        return  # not listening yet: the next round will do it
    async with ctx.endpoint_refresh:
        await _refresh_endpoints(ctx, f"{known[0]}:{known[1]}")


async def _refresh_endpoints(ctx: CloudContext, endpoint: str) -> None:
    for cluster in await ctx.records.list_clusters():
        if cluster.active_task_id or cluster.allocation_id is None:
            continue
        if cluster.status not in (ClusterStatus.ACTIVE, ClusterStatus.DEGRADED):
            continue
        if cluster.network.get("vipu_api") in (None, endpoint):
            continue
        servers = await ctx.records.list_servers([cluster.id])
        await configure_servers(ctx, cluster, servers, {}, log.warning)
