"""AI clusters, their servers, registered hosts and the host slots servers hold.

A cluster runs one task at a time: :func:`claim` sets ``active_task_id``
with a compare-and-set (only when none is set and the status is one the
operation may start from), :func:`unclaim` clears it. Host slots are rows
keyed by (host, slot), so the database refuses a slot to a second server.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping
from typing import Any

from sqlalchemy import Connection, delete, insert, select, update

from vpod.domain.cloud.hosts import Host, HostUsage
from vpod.domain.cloud.resources import Cluster, Server
from vpod.domain.cloud.statuses import ClusterStatus, ServerStatus

from . import cloud_rows
from .cloud_schema import cloud_clusters, cloud_host_slots, cloud_hosts, cloud_servers
from .errors import Conflict, NotFound
from .filters import where_given
from .row_records import member_of, record_of, values_of


def cluster_not_found(cluster_id: str) -> NotFound:
    return NotFound(f"cluster {cluster_id} does not exist: `vpod cluster list` shows yours")


def host_not_found(host_id: str) -> NotFound:
    return NotFound(f"host {host_id} is not registered: list hosts to see the registered ones")


def _cluster(row: Any) -> Cluster:
    return record_of(
        Cluster,
        row,
        status=member_of(ClusterStatus, row.status),
        interfaces=list(row.interfaces or []),
        network=dict(row.network or {}),
        metadata=dict(row.metadata or {}),
    )


ROWS = cloud_rows.ClaimableRows(cloud_clusters, _cluster, cluster_not_found, "cluster")
"""Get, find, update, claim and release clusters: one task at a time works on a cluster."""


def insert_cluster(conn: Connection, cluster: Cluster) -> None:
    conn.execute(insert(cloud_clusters).values(**values_of(cluster)))


def list_clusters(conn: Connection, project_id: str | None = None) -> list[Cluster]:
    query = where_given(
        select(cloud_clusters).order_by(cloud_clusters.c.created_at, cloud_clusters.c.id),
        (project_id, lambda: cloud_clusters.c.project_id == project_id),
    )
    return [_cluster(row) for row in conn.execute(query)]


def set_status_if_idle(
    conn: Connection,
    cluster_id: str,
    from_statuses: Collection[str],
    changes: Mapping[str, Any],
) -> bool:
    """Apply ``changes`` if no task holds the cluster and its status is in ``from_statuses``."""
    done = conn.execute(
        update(cloud_clusters)
        .where(cloud_rows.idle_in(cloud_clusters, cluster_id, from_statuses))
        .values(**changes)
    )
    return bool(done.rowcount)


def delete_cluster(conn: Connection, cluster_id: str) -> None:
    conn.execute(delete(cloud_clusters).where(cloud_clusters.c.id == cluster_id))


# -- servers ----------------------------------------------------------------------------------


def _server(row: Any) -> Server:
    return record_of(Server, row, status=member_of(ServerStatus, row.status))


def insert_servers(conn: Connection, servers: Iterable[Server]) -> None:
    rows = [values_of(s) for s in servers]
    if rows:
        conn.execute(insert(cloud_servers), rows)


def list_servers(conn: Connection, cluster_ids: Collection[str]) -> list[Server]:
    query = (
        select(cloud_servers)
        .where(cloud_servers.c.cluster_id.in_(list(cluster_ids)))
        .order_by(cloud_servers.c.cluster_id, cloud_servers.c.position)
    )
    return [_server(row) for row in conn.execute(query)]


def update_server(conn: Connection, server_id: str, changes: Mapping[str, Any]) -> None:
    done = conn.execute(
        update(cloud_servers).where(cloud_servers.c.id == server_id).values(**changes)
    )
    if done.rowcount == 0:
        raise NotFound(f"server {server_id} does not exist")


def delete_server(conn: Connection, server_id: str) -> None:
    conn.execute(delete(cloud_servers).where(cloud_servers.c.id == server_id))


# -- hosts and slots ------------------------------------------------------------------------


def _host(row: Any) -> Host:
    return record_of(Host, row)


def insert_host(conn: Connection, host: Host) -> None:
    conn.execute(insert(cloud_hosts).values(**values_of(host)))


def get_host(conn: Connection, host_id: str) -> Host:
    return _host(cloud_rows.one_by_id(conn, cloud_hosts, host_id, host_not_found))


def host_usage(conn: Connection) -> list[HostUsage]:
    used: dict[str, set[int]] = defaultdict(set)
    for host_id, slot in conn.execute(select(cloud_host_slots.c.host_id, cloud_host_slots.c.slot)):
        used[host_id].add(int(slot))
    return [
        HostUsage(host=_host(row), used_slots=frozenset(used[row.id]))
        for row in conn.execute(select(cloud_hosts).order_by(cloud_hosts.c.id))
    ]


def set_host_enabled(conn: Connection, host_id: str, enabled: bool) -> None:
    get_host(conn, host_id)
    conn.execute(update(cloud_hosts).where(cloud_hosts.c.id == host_id).values(enabled=enabled))


def delete_host(conn: Connection, host_id: str) -> None:
    get_host(conn, host_id)
    held = conn.scalar(
        select(cloud_host_slots.c.server_id).where(cloud_host_slots.c.host_id == host_id).limit(1)
    )
    if held is not None:
        raise Conflict(
            f"host {host_id} runs server {held}: delete that server's cluster first, or disable"
            " the host so that nothing new lands on it",
            retryable=False,
        )
    conn.execute(delete(cloud_hosts).where(cloud_hosts.c.id == host_id))


def take_slots(conn: Connection, server_id: str, host_id: str, slots: Iterable[int]) -> None:
    """Give ``slots`` of ``host_id`` to the server; the primary key refuses a taken slot."""
    rows = [{"host_id": host_id, "slot": s, "server_id": server_id} for s in slots]
    conn.execute(insert(cloud_host_slots), rows)
    conn.execute(
        update(cloud_servers).where(cloud_servers.c.id == server_id).values(host_id=host_id)
    )


def release_slots(conn: Connection, server_id: str) -> None:
    conn.execute(delete(cloud_host_slots).where(cloud_host_slots.c.server_id == server_id))
    conn.execute(update(cloud_servers).where(cloud_servers.c.id == server_id).values(host_id=None))
