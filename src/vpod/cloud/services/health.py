"""DEGRADED: a vPOD whose IPU-Machines the controller cannot reach, and back to ACTIVE.

Run by the task runner's lease holder every ``health_check_s``. It only looks
at vPODs that are ACTIVE or DEGRADED and not busy with a task, and changes
the status (with a metering entry; both statuses are billed) only when the
allocation's agents' health says so.
"""

from __future__ import annotations

import logging

from ..metering import cluster_entry
from ..model import errors
from ..states import ClusterStatus
from .context import CloudContext

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
        wanted = ClusterStatus.DEGRADED if silent else ClusterStatus.ACTIVE
        if wanted == cluster.status:
            continue
        entry = cluster_entry(cluster, wanted, ctx.clock.now())
        error = f"IPU-Machines not answering: {', '.join(silent)}" if silent else ""
        changed = await ctx.records.update_idle_cluster(
            cluster.id,
            [ClusterStatus.ACTIVE, ClusterStatus.DEGRADED],
            meter=[entry],
            status=wanted,
            error=error,
        )
        if changed:
            ctx.published([entry])
            log.info("cluster %s is %s %s", cluster.name, wanted.value, error)
