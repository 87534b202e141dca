"""DEGRADED: a vPOD whose IPU-Machines the controller cannot reach, a GPU cluster one of
whose GPUs failed (or whose GPU host's agent went silent), and back to ACTIVE.

Run by the task runner's lease holder every ``health_check_s``. It only looks
at vPODs that are ACTIVE or DEGRADED and not busy with a task, and changes
the status (with a metering entry; both statuses are billed) only when the
allocation's agents' health says so.
"""

from __future__ import annotations

import logging

from ..flavors import find_flavor
from ..gpu_rules import unusable_slots
from ..metering import cluster_entry
from ..model import errors
from ..model.records import Cluster
from ..states import ClusterStatus
from .context import CloudContext
from .gpu_hosts import agent_hosts, gpu_states

log = logging.getLogger("vpod.cloud.health")


async def check_vpods(ctx: CloudContext) -> None:
    """Mark vPODs DEGRADED or ACTIVE by their machines' health."""
    for cluster in await ctx.records.list_clusters():
        if cluster.active_task_id or cluster.allocation_id is None:
            continue
        if cluster.status not in (ClusterStatus.ACTIVE, ClusterStatus.DEGRADED):
            continue
        allocation = await ctx.vipu.find_allocation(cluster.allocation_id)
        if allocation is None:
            continue
        try:
            silent = await ctx.vipu.unreachable_agents(allocation)
        except errors.NotFound:
            continue
        await _mark(ctx, cluster, f"IPU-Machines not answering: {', '.join(silent)}" * bool(silent))


async def _mark(ctx: CloudContext, cluster: Cluster, error: str) -> None:
    """DEGRADED with ``error`` (ACTIVE when empty), if that changes anything."""
    wanted = ClusterStatus.DEGRADED if error else ClusterStatus.ACTIVE
    if wanted == cluster.status and (not error or error == cluster.error):
        return
    entry = cluster_entry(cluster, wanted, ctx.clock.now())
    changed = await ctx.records.update_idle_cluster(
        cluster.id,
        [ClusterStatus.ACTIVE, ClusterStatus.DEGRADED],
        meter=[entry] if wanted != cluster.status else [],
        status=wanted,
        error=error,
    )
    if changed and wanted != cluster.status:
        ctx.published([entry])
        log.info("cluster %s is %s %s", cluster.name, wanted.value, error)


async def check_gpu_clusters(ctx: CloudContext) -> None:
    """Mark GPU clusters DEGRADED while a GPU one of their servers holds is unhealthy (or its
    host's agent is silent), naming the server, the GPU and the error; ACTIVE once healthy."""
    clusters = [
        c
        for c in await ctx.records.list_clusters()
        if not c.active_task_id
        and c.status in (ClusterStatus.ACTIVE, ClusterStatus.DEGRADED)
        and find_flavor(c.flavor).is_gpu
    ]
    if not clusters:
        return
    servers = await ctx.records.list_servers([c.id for c in clusters])
    held = await ctx.records.server_slots([s.id for s in servers])
    hosts = await agent_hosts(ctx)
    for cluster in clusters:
        problems: list[str] = []
        for server in (s for s in servers if s.cluster_id == cluster.id):
            host_id, slots = held.get(server.id, ("", ()))
            host = hosts.get(host_id)
            if host is None or not slots:
                continue  # no agent watches that host: nothing to say
            bad = unusable_slots(host_id, gpu_states(host), host.silent_for_s, max(slots) + 1)
            for reason in dict.fromkeys(bad[s] for s in slots if s in bad):
                problems.append(f"server {server.name}: {reason}")
        await _mark(ctx, cluster, "; ".join(problems)[:4000])


async def serve_peer_ssh(ctx: CloudContext) -> None:
    """Every server of an ACTIVE or DEGRADED cluster answers ssh from its peers (the driver's
    ``serve_ssh``, idempotent): after a controller restart, nothing else would ask."""
    for cluster in await ctx.records.list_clusters():
        if cluster.active_task_id or cluster.status not in (
            ClusterStatus.ACTIVE,
            ClusterStatus.DEGRADED,
        ):
            continue
        for server in await ctx.records.list_servers([cluster.id]):
            try:
                await ctx.compute.serve_ssh(server.id)
            except errors.DriverError as exc:
                log.warning("server %s of cluster %s: %s", server.name, cluster.name, exc)
