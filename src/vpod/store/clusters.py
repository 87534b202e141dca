"""Clusters: a ``clusters`` row plus its agents in cabling order (``cluster_agents``).

An agent is in at most one cluster: ``cluster_agents.agent_id`` is unique,
and its foreign key to ``agents`` refuses agents that are not registered.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, Row, RowMapping, delete, insert, select

from vpod.domain.catalog import MachineType
from vpod.domain.entities import Cluster
from vpod.domain.topology import GwTopology, IldTopology

from .dependants import Dependants
from .errors import Conflict, NotFound, StoreError, insert_raced
from .refusals import id_taken
from .row_records import children_of, grouped
from .schema import agents, allocations, cluster_agents, clusters
from .translate import decoding


def _cluster(row: Row[Any], agent_ids: Sequence[str]) -> Cluster:
    return cluster_of(row._mapping, agent_ids)


@decoding("cluster")
def cluster_of(columns: RowMapping, agent_ids: Sequence[str]) -> Cluster:
    """The cluster from its ``clusters`` columns and its agents in cabling order."""
    return Cluster(
        id=columns["id"],
        agent_ids=tuple(agent_ids),
        num_domains=columns["num_domains"],
        ild_topology=IldTopology[columns["ild_topology"]],
        gw_topology=GwTopology[columns["gw_topology"]],
        machine_type=MachineType[columns["machine_type"]],
    )


def insert_cluster(conn: Connection, cluster: Cluster) -> None:
    conn.execute(
        insert(clusters).values(
            id=cluster.id,
            num_domains=cluster.num_domains,
            ild_topology=cluster.ild_topology.name,
            gw_topology=cluster.gw_topology.name,
            machine_type=cluster.machine_type.name,
        )
    )
    conn.execute(
        insert(cluster_agents),
        [
            {"cluster_id": cluster.id, "position": i, "agent_id": agent_id}
            for i, agent_id in enumerate(cluster.agent_ids)
        ],
    )


def explain_insert_refused(conn: Connection, cluster: Cluster) -> StoreError:
    """Why a cluster could not be added: its id, a missing agent or an agent in use."""
    taken_id = id_taken(conn, clusters.c.id, "cluster", cluster.id)
    if taken_id is not None:
        return taken_id
    known = set(conn.scalars(select(agents.c.id).where(agents.c.id.in_(cluster.agent_ids))))
    missing = [a for a in cluster.agent_ids if a not in known]
    if missing:
        return NotFound(
            f"cluster {cluster.id} lists agent{'s' if len(missing) > 1 else ''}"
            f" {', '.join(missing)}, which {'are' if len(missing) > 1 else 'is'} not"
            " registered: create the agents first"
        )
    taken = conn.execute(
        select(cluster_agents.c.agent_id, cluster_agents.c.cluster_id)
        .where(cluster_agents.c.agent_id.in_(cluster.agent_ids))
        .order_by(cluster_agents.c.agent_id)
    ).first()
    if taken is not None:
        return Conflict(
            f"agent {taken.agent_id} is already part of cluster {taken.cluster_id}: an agent"
            " belongs to one cluster only; remove it from that cluster first",
            retryable=False,
        )
    return insert_raced("cluster", cluster.id)


def get_cluster(conn: Connection, cluster_id: str) -> Cluster:
    row = conn.execute(select(clusters).where(clusters.c.id == cluster_id)).first()
    if row is None:
        raise not_found(cluster_id)
    agents = cluster_agents.c
    agent_ids = children_of(conn, agents.cluster_id, agents.agent_id, cluster_id, agents.position)
    return _cluster(row, agent_ids)


def list_clusters(conn: Connection) -> list[Cluster]:
    agents = cluster_agents.c
    members = grouped(conn, agents.cluster_id, agents.agent_id, order=agents.position)
    rows = conn.execute(select(clusters).order_by(clusters.c.id))
    return [_cluster(row, members[row.id]) for row in rows]


_ALLOCATIONS = Dependants("cluster", "allocation", allocations.c.cluster_id)


def delete_cluster(conn: Connection, cluster_id: str) -> None:
    """Remove a cluster that has no allocations; its agents stay registered."""
    _ALLOCATIONS.refuse_while_held(conn, cluster_id)
    if conn.execute(delete(clusters).where(clusters.c.id == cluster_id)).rowcount == 0:
        raise not_found(cluster_id)


explain_delete_refused = _ALLOCATIONS.explain_refusal


def not_found(cluster_id: str) -> NotFound:
    return NotFound(f"cluster {cluster_id} does not exist: list clusters to see the defined ones")
