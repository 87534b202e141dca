"""AI clusters, their servers, registered hosts and the host slots servers hold.

A cluster runs one task at a time: :func:`claim` sets ``active_task_id``
with a compare-and-set (only when none is set and the status is one the
operation may start from), :func:`unclaim` clears it. Host slots are rows
keyed by (host, slot), so the database refuses a slot to a second server.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping
from typing import Any

from sqlalchemy import Connection, delete, insert, select, update

from . import cloud_rows
from .cloud_records import ClusterRecord, HostRecord, HostUsage, ServerRecord
from .cloud_rows import update_by_id
from .cloud_schema import cloud_clusters, cloud_host_slots, cloud_hosts, cloud_servers
from .errors import Conflict, NotFound

_CLUSTER_FIELDS = [f.name for f in dataclasses.fields(ClusterRecord)]
_SERVER_FIELDS = [f.name for f in dataclasses.fields(ServerRecord)]
_HOST_FIELDS = [f.name for f in dataclasses.fields(HostRecord)]


def _values(record: object) -> dict[str, Any]:
    return dataclasses.asdict(record)  # type: ignore[call-overload, no-any-return]


def cluster_not_found(cluster_id: str) -> NotFound:
    return NotFound(f"cluster {cluster_id} does not exist: `vpod cluster list` shows yours")


def _cluster(row: Any) -> ClusterRecord:
    values = {name: row._mapping[name] for name in _CLUSTER_FIELDS}
    values["interfaces"] = list(values["interfaces"] or [])
    values["network"] = dict(values["network"] or {})
    values["metadata"] = dict(values["metadata"] or {})
    return ClusterRecord(**values)


def insert_cluster(conn: Connection, cluster: ClusterRecord) -> None:
    conn.execute(insert(cloud_clusters).values(**_values(cluster)))


def get_cluster(conn: Connection, cluster_id: str) -> ClusterRecord:
    row = conn.execute(
        select(cloud_clusters).where(cloud_clusters.c.id == cluster_id)
    ).one_or_none()
    if row is None:
        raise cluster_not_found(cluster_id)
    return _cluster(row)


def find_cluster_by_name(conn: Connection, project_id: str, name: str) -> ClusterRecord | None:
    row = conn.execute(
        select(cloud_clusters).where(
            cloud_clusters.c.project_id == project_id, cloud_clusters.c.name == name
        )
    ).one_or_none()
    return None if row is None else _cluster(row)


def list_clusters(conn: Connection, project_id: str | None = None) -> list[ClusterRecord]:
    query = select(cloud_clusters).order_by(cloud_clusters.c.created_at, cloud_clusters.c.id)
    if project_id is not None:
        query = query.where(cloud_clusters.c.project_id == project_id)
    return [_cluster(row) for row in conn.execute(query)]


def update_cluster(conn: Connection, cluster_id: str, changes: Mapping[str, Any]) -> None:
    update_by_id(
        conn,
        cloud_clusters,
        cluster_id,
        changes,
        columns=_CLUSTER_FIELDS,
        plural="clusters",
        not_found=cluster_not_found,
    )


def claim(
    conn: Connection,
    cluster_id: str,
    task_id: str,
    allowed: Collection[str],
    changes: Mapping[str, Any],
) -> None:
    """Make ``task_id`` the cluster's one running task (and apply ``changes``), or refuse.

    Refused with a non-retryable Conflict when another task holds the
    cluster or its status is not in ``allowed``: the message says which.
    """
    cloud_rows.claim(
        conn,
        cloud_clusters,
        cluster_id,
        task_id,
        allowed,
        changes,
        kind="cluster",
        current=lambda: get_cluster(conn, cluster_id),
    )


def set_status_if_idle(
    conn: Connection,
    cluster_id: str,
    from_statuses: Collection[str],
    changes: Mapping[str, Any],
) -> bool:
    """Apply ``changes`` if no task holds the cluster and its status is in ``from_statuses``."""
    done = conn.execute(
        update(cloud_clusters)
        .where(
            cloud_clusters.c.id == cluster_id,
            cloud_clusters.c.active_task_id.is_(None),
            cloud_clusters.c.status.in_(list(from_statuses)),
        )
        .values(**changes)
    )
    return bool(done.rowcount)


def unclaim(conn: Connection, cluster_id: str, task_id: str) -> None:
    conn.execute(
        update(cloud_clusters)
        .where(cloud_clusters.c.id == cluster_id, cloud_clusters.c.active_task_id == task_id)
        .values(active_task_id=None)
    )


def delete_cluster(conn: Connection, cluster_id: str) -> None:
    conn.execute(delete(cloud_clusters).where(cloud_clusters.c.id == cluster_id))


# -- servers ----------------------------------------------------------------------------------


def _server(row: Any) -> ServerRecord:
    return ServerRecord(**{name: row._mapping[name] for name in _SERVER_FIELDS})


def insert_servers(conn: Connection, servers: Iterable[ServerRecord]) -> None:
    rows = [_values(s) for s in servers]
    if rows:
        conn.execute(insert(cloud_servers), rows)


def list_servers(conn: Connection, cluster_ids: Collection[str]) -> list[ServerRecord]:
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


def _host(row: Any) -> HostRecord:
    return HostRecord(**{name: row._mapping[name] for name in _HOST_FIELDS})


def insert_host(conn: Connection, host: HostRecord) -> None:
    conn.execute(insert(cloud_hosts).values(**_values(host)))


def get_host(conn: Connection, host_id: str) -> HostRecord:
    row = conn.execute(select(cloud_hosts).where(cloud_hosts.c.id == host_id)).one_or_none()
    if row is None:
        raise NotFound(f"host {host_id} is not registered: list hosts to see the registered ones")
    return _host(row)


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
