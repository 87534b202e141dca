"""Volumes (boot and data) of cloud projects.

Like clusters, a volume runs one task at a time through a compare-and-set on
``active_task_id`` (:func:`claim`); attaching also claims the cluster, in the
same transaction, so a volume cannot be attached to a cluster that is being
suspended or deleted.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy import Connection, delete, insert, select, update

from vpod.domain.cloud.resources import Volume
from vpod.domain.cloud.statuses import VolumeStatus

from . import cloud_rows
from .cloud_schema import cloud_volumes
from .errors import NotFound
from .filters import where_given
from .row_records import member_of, record_of, values_of


def volume_not_found(volume_id: str) -> NotFound:
    return NotFound(f"volume {volume_id} does not exist: `vpod volume list` shows yours")


def _volume(row: Any) -> Volume:
    return record_of(Volume, row, status=member_of(VolumeStatus, row.status))


ROWS = cloud_rows.ClaimableRows(cloud_volumes, _volume, volume_not_found, "volume")
"""Get, find, update, claim and release volumes: one task at a time works on a volume."""


def insert_volumes(conn: Connection, volumes: Iterable[Volume]) -> None:
    rows = [values_of(v) for v in volumes]
    if rows:
        conn.execute(insert(cloud_volumes), rows)


def list_volumes(
    conn: Connection, *, project_id: str | None = None, cluster_id: str | None = None
) -> list[Volume]:
    query = where_given(
        select(cloud_volumes).order_by(cloud_volumes.c.created_at, cloud_volumes.c.id),
        (project_id, lambda: cloud_volumes.c.project_id == project_id),
        (cluster_id, lambda: cloud_volumes.c.cluster_id == cluster_id),
    )
    return [_volume(row) for row in conn.execute(query)]


def unclaim_all(conn: Connection, task_id: str) -> None:
    """Free every volume ``task_id`` holds."""
    conn.execute(
        update(cloud_volumes)
        .where(cloud_volumes.c.active_task_id == task_id)
        .values(active_task_id=None)
    )


def delete_volume(conn: Connection, volume_id: str) -> None:
    conn.execute(delete(cloud_volumes).where(cloud_volumes.c.id == volume_id))
