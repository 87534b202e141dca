"""Volumes (boot and data) of cloud projects.

Like clusters, a volume runs one task at a time through a compare-and-set on
``active_task_id`` (:func:`claim`); attaching also claims the cluster, in the
same transaction, so a volume cannot be attached to a cluster that is being
suspended or deleted.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Iterable, Mapping
from typing import Any

from sqlalchemy import Connection, delete, insert, select, update

from . import cloud_rows
from .cloud_records import VolumeRecord
from .cloud_rows import update_by_id
from .cloud_schema import cloud_volumes
from .errors import NotFound

_FIELDS = [f.name for f in dataclasses.fields(VolumeRecord)]


def volume_not_found(volume_id: str) -> NotFound:
    return NotFound(f"volume {volume_id} does not exist: `vpod volume list` shows yours")


def _volume(row: Any) -> VolumeRecord:
    return VolumeRecord(**{name: row._mapping[name] for name in _FIELDS})


def insert_volumes(conn: Connection, volumes: Iterable[VolumeRecord]) -> None:
    rows = [dataclasses.asdict(v) for v in volumes]
    if rows:
        conn.execute(insert(cloud_volumes), rows)


def get_volume(conn: Connection, volume_id: str) -> VolumeRecord:
    row = conn.execute(select(cloud_volumes).where(cloud_volumes.c.id == volume_id)).one_or_none()
    if row is None:
        raise volume_not_found(volume_id)
    return _volume(row)


def find_volume_by_name(conn: Connection, project_id: str, name: str) -> VolumeRecord | None:
    row = conn.execute(
        select(cloud_volumes).where(
            cloud_volumes.c.project_id == project_id, cloud_volumes.c.name == name
        )
    ).one_or_none()
    return None if row is None else _volume(row)


def list_volumes(
    conn: Connection, *, project_id: str | None = None, cluster_id: str | None = None
) -> list[VolumeRecord]:
    query = select(cloud_volumes).order_by(cloud_volumes.c.created_at, cloud_volumes.c.id)
    if project_id is not None:
        query = query.where(cloud_volumes.c.project_id == project_id)
    if cluster_id is not None:
        query = query.where(cloud_volumes.c.cluster_id == cluster_id)
    return [_volume(row) for row in conn.execute(query)]


def update_volume(conn: Connection, volume_id: str, changes: Mapping[str, Any]) -> None:
    update_by_id(
        conn,
        cloud_volumes,
        volume_id,
        changes,
        columns=_FIELDS,
        plural="volumes",
        not_found=volume_not_found,
    )


def claim(
    conn: Connection,
    volume_id: str,
    task_id: str,
    allowed: Collection[str],
    changes: Mapping[str, Any],
) -> None:
    """Make ``task_id`` the volume's one running task (and apply ``changes``), or refuse."""
    cloud_rows.claim(
        conn,
        cloud_volumes,
        volume_id,
        task_id,
        allowed,
        changes,
        kind="volume",
        current=lambda: get_volume(conn, volume_id),
    )


def unclaim(conn: Connection, volume_id: str, task_id: str) -> None:
    conn.execute(
        update(cloud_volumes)
        .where(cloud_volumes.c.id == volume_id, cloud_volumes.c.active_task_id == task_id)
        .values(active_task_id=None)
    )


def unclaim_all(conn: Connection, task_id: str) -> None:
    """Free every volume ``task_id`` holds."""
    conn.execute(
        update(cloud_volumes)
        .where(cloud_volumes.c.active_task_id == task_id)
        .values(active_task_id=None)
    )


def delete_volume(conn: Connection, volume_id: str) -> None:
    conn.execute(delete(cloud_volumes).where(cloud_volumes.c.id == volume_id))
