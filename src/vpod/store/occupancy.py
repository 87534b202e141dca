"""The occupancy of one cluster, read for placement in three indexed queries.

1. the cluster with its agents in cabling order, each agent's health and
   the IPUs it last reported faulty;
2. the machines of every allocation of the cluster;
3. the IPUs of every partition of the cluster, in routing order.

The caller runs them in one snapshot transaction, so the three agree.
"""

from __future__ import annotations

from sqlalchemy import Connection, select

from . import allocations as allocation_rows
from . import clusters as cluster_rows
from . import partitions as partition_rows
from .agents import decode_faults
from .records import AgentHealthState, Occupancy
from .schema import agents, cluster_agents, clusters


def read_occupancy(conn: Connection, cluster_id: str) -> Occupancy:
    rows = conn.execute(
        select(
            clusters.c.id,
            clusters.c.num_domains,
            clusters.c.ild_topology,
            clusters.c.gw_topology,
            clusters.c.machine_type,
            cluster_agents.c.position,
            cluster_agents.c.agent_id,
            agents.c.health,
            agents.c.device_faults,
        )
        .join(cluster_agents, cluster_agents.c.cluster_id == clusters.c.id)
        .join(agents, agents.c.id == cluster_agents.c.agent_id)
        .where(clusters.c.id == cluster_id)
        .order_by(cluster_agents.c.position)
    ).all()
    if not rows:
        raise cluster_rows.not_found(cluster_id)
    cluster = cluster_rows.cluster_of(rows[0]._mapping, [row.agent_id for row in rows])
    unreachable = frozenset(
        row.position for row in rows if row.health == AgentHealthState.UNREACHABLE.name
    )
    faults = [
        (row.position, device) for row in rows for device, _ in decode_faults(row.device_faults)
    ]
    pod = cluster.pod() if faults else None  # built only when some IPU is faulty
    faulty = frozenset(pod.slot_of_device(m, d) for m, d in faults) if pod else frozenset()
    return Occupancy(
        cluster=cluster,
        allocations=allocation_rows.machines_by_allocation(conn, cluster_id),
        partitions=partition_rows.footprints(conn, cluster_id),
        unavailable_machines=unreachable,
        faulty_slots=faulty,
    )
