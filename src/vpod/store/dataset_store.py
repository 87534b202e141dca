"""Dataset storage in the store: a project's registered buckets and the cluster each is
given to (tables in :mod:`.dataset_schema`). One transaction per call.

Credentials arrive and leave sealed: this module never sees a key in the
clear. Deleting a storage that a cluster holds is refused by the database
(the attachment's foreign key) as well as here, with a sentence.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, delete, insert, select, update

from .cloud_projects import get_project
from .cloud_schema import cloud_clusters
from .dataset_schema import cloud_dataset_attachments, cloud_dataset_storages
from .engine import Database
from .errors import AlreadyExists, Conflict, NotFound


@dataclass(frozen=True)
class StorageRecord:
    id: str
    project_id: str
    name: str
    endpoint: str
    bucket: str
    access_key_masked: str
    access_key_sealed: str
    secret_key_sealed: str
    created_at: datetime


@dataclass(frozen=True)
class AttachmentRecord:
    cluster_id: str
    storage_id: str
    mount_path: str | None


def _storage(row: Any) -> StorageRecord:
    return StorageRecord(**dict(row._mapping))


def not_found(ref: str) -> NotFound:
    return NotFound(
        f"dataset storage {ref} does not exist: `vpod storage list` shows your project's"
    )


class DatasetStore:
    def __init__(self, database: Database) -> None:
        self._db = database

    def add(self, storage: StorageRecord) -> None:
        def taken() -> AlreadyExists:
            return AlreadyExists(
                f"dataset storage {storage.name} exists in project {storage.project_id}:"
                " pick another name, or delete it first"
            )

        with self._db.write(explain=taken) as conn:
            get_project(conn, storage.project_id, lock=True)
            conn.execute(insert(cloud_dataset_storages).values(**storage.__dict__))

    def get(self, storage_id: str) -> StorageRecord:
        with self._db.read() as conn:
            row = conn.execute(
                select(cloud_dataset_storages).where(cloud_dataset_storages.c.id == storage_id)
            ).one_or_none()
        if row is None:
            raise not_found(storage_id)
        return _storage(row)

    def find(self, project_id: str, ref: str) -> StorageRecord | None:
        """The project's storage with id or name ``ref``."""
        table = cloud_dataset_storages
        with self._db.read() as conn:
            row = conn.execute(
                select(table).where(
                    table.c.project_id == project_id, (table.c.id == ref) | (table.c.name == ref)
                )
            ).first()
        return None if row is None else _storage(row)

    def list_storages(self, project_id: str | None = None) -> list[StorageRecord]:
        query = select(cloud_dataset_storages).order_by(
            cloud_dataset_storages.c.created_at, cloud_dataset_storages.c.id
        )
        if project_id is not None:
            query = query.where(cloud_dataset_storages.c.project_id == project_id)
        with self._db.read() as conn:
            return [_storage(row) for row in conn.execute(query)]

    def reseal(self, storage_id: str, access_key_sealed: str, secret_key_sealed: str) -> None:
        """Replace the sealed credentials (the same values under a newer key)."""
        with self._db.write() as conn:
            conn.execute(
                update(cloud_dataset_storages)
                .where(cloud_dataset_storages.c.id == storage_id)
                .values(access_key_sealed=access_key_sealed, secret_key_sealed=secret_key_sealed)
            )

    def delete(self, storage_id: str) -> None:
        """Conflict while a cluster holds it (name the clusters: detach first)."""

        def held() -> Conflict:
            return Conflict(
                f"dataset storage {storage_id} was attached meanwhile: detach it first",
                retryable=False,
            )

        with self._db.write(explain=held) as conn:
            holders = self._holders(conn, storage_id)
            if holders:
                raise Conflict(
                    f"dataset storage {storage_id} is attached to cluster(s)"
                    f" {', '.join(holders)}: detach it first (`vpod storage detach`)",
                    retryable=False,
                )
            conn.execute(
                delete(cloud_dataset_storages).where(cloud_dataset_storages.c.id == storage_id)
            )

    def _holders(self, conn: Connection, storage_id: str) -> list[str]:
        rows = conn.execute(
            select(cloud_clusters.c.name)
            .select_from(
                cloud_dataset_attachments.join(
                    cloud_clusters, cloud_clusters.c.id == cloud_dataset_attachments.c.cluster_id
                )
            )
            .where(cloud_dataset_attachments.c.storage_id == storage_id)
            .order_by(cloud_clusters.c.name)
        )
        return [str(r[0]) for r in rows]

    # -- attachments --------------------------------------------------------------------------

    def attach(self, cluster_id: str, storage_id: str, mount_path: str | None) -> None:
        """Give the cluster the storage (idempotent; replaces the mount path)."""
        with self._db.write() as conn:
            current = self._attachment(conn, cluster_id)
            if current is not None and current.storage_id != storage_id:
                raise Conflict(
                    f"cluster {cluster_id} holds dataset storage {current.storage_id}:"
                    " detach it first",
                    retryable=False,
                )
            if current is None:
                conn.execute(
                    insert(cloud_dataset_attachments).values(
                        cluster_id=cluster_id, storage_id=storage_id, mount_path=mount_path
                    )
                )
            else:
                conn.execute(
                    update(cloud_dataset_attachments)
                    .where(cloud_dataset_attachments.c.cluster_id == cluster_id)
                    .values(mount_path=mount_path)
                )

    def detach(self, cluster_id: str) -> None:
        """Take the cluster's storage away (idempotent)."""
        with self._db.write() as conn:
            conn.execute(
                delete(cloud_dataset_attachments).where(
                    cloud_dataset_attachments.c.cluster_id == cluster_id
                )
            )

    def attachment(self, cluster_id: str) -> AttachmentRecord | None:
        with self._db.read() as conn:
            return self._attachment(conn, cluster_id)

    def _attachment(self, conn: Connection, cluster_id: str) -> AttachmentRecord | None:
        row = conn.execute(
            select(cloud_dataset_attachments).where(
                cloud_dataset_attachments.c.cluster_id == cluster_id
            )
        ).one_or_none()
        return None if row is None else AttachmentRecord(**dict(row._mapping))

    def held_by(self, cluster_ids: list[str]) -> dict[str, tuple[str, str | None]]:
        """Cluster id -> (name of the storage it holds, mount path), for those that hold one."""
        if not cluster_ids:
            return {}
        a, s = cloud_dataset_attachments, cloud_dataset_storages
        with self._db.read() as conn:
            rows = conn.execute(
                select(a.c.cluster_id, s.c.name, a.c.mount_path)
                .select_from(a.join(s, s.c.id == a.c.storage_id))
                .where(a.c.cluster_id.in_(cluster_ids))
            )
            return {str(r[0]): (str(r[1]), r[2]) for r in rows}

    def attachments(self, storage_id: str) -> list[AttachmentRecord]:
        with self._db.read() as conn:
            rows = conn.execute(
                select(cloud_dataset_attachments)
                .where(cloud_dataset_attachments.c.storage_id == storage_id)
                .order_by(cloud_dataset_attachments.c.cluster_id)
            )
            return [AttachmentRecord(**dict(r._mapping)) for r in rows]
