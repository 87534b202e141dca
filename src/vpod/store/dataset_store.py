"""Dataset storage in the store: a project's registered buckets and the cluster each is
given to (tables in :mod:`.dataset_schema`). One transaction per call.

Credentials arrive and leave sealed: this module never sees a key in the
clear. Deleting a storage that a cluster holds is refused by the database
(the attachment's foreign key) as well as here, with a sentence.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, delete, insert, select, update

from vpod.domain.cloud.datasets import SealedStorage, StorageAttachment

from .cloud_projects import ProjectAdmit, add_to_project
from .cloud_records import AttachmentRecord, StorageRecord
from .cloud_rows import delete_unless_held, find_in_project, one_by_id
from .dataset_schema import cloud_dataset_attachments, cloud_dataset_storages
from .errors import Conflict, NotFound
from .filters import where_given
from .row_records import record_of, values_of
from .table_group import TableGroup


def _storage(row: Any) -> SealedStorage:
    return record_of(SealedStorage, row)


def not_found(ref: str) -> NotFound:
    return NotFound(
        f"dataset storage {ref} does not exist: `vpod storage list` shows your project's"
    )


class DatasetStore(TableGroup):
    def add(self, storage: SealedStorage, *, admit: ProjectAdmit | None = None) -> None:
        """Record the storage if ``admit`` (the quota check) lets it in."""
        add_to_project(
            self._db,
            cloud_dataset_storages,
            values_of(storage),
            kind="dataset storage",
            admit=admit,
        )

    def get(self, storage_id: str) -> SealedStorage:
        row = self._db.run_read(one_by_id, cloud_dataset_storages, storage_id, not_found)
        return _storage(row)

    def find(self, project_id: str, ref: str) -> SealedStorage | None:
        """The project's storage with id or name ``ref``."""
        row = self._db.run_read(find_in_project, cloud_dataset_storages, project_id, ref)
        return None if row is None else _storage(row)

    def list_storages(self, project_id: str | None = None) -> list[SealedStorage]:
        table = cloud_dataset_storages
        query = where_given(
            select(table).order_by(table.c.created_at, table.c.id),
            (project_id, lambda: table.c.project_id == project_id),
        )
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
        delete_unless_held(
            self._db,
            cloud_dataset_storages,
            storage_id,
            cloud_dataset_attachments.c.storage_id,
            held=lambda holders: (
                f"dataset storage {storage_id} is attached to cluster(s) {holders}:"
                " detach it first (`vpod storage detach`)"
            ),
            raced=f"dataset storage {storage_id} was attached meanwhile: detach it first",
        )

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

    def attachment(self, cluster_id: str) -> StorageAttachment | None:
        with self._db.read() as conn:
            return self._attachment(conn, cluster_id)

    def _attachment(self, conn: Connection, cluster_id: str) -> StorageAttachment | None:
        row = conn.execute(
            select(cloud_dataset_attachments).where(
                cloud_dataset_attachments.c.cluster_id == cluster_id
            )
        ).one_or_none()
        return None if row is None else record_of(StorageAttachment, row)

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

    def attachments(self, storage_id: str) -> list[StorageAttachment]:
        with self._db.read() as conn:
            rows = conn.execute(
                select(cloud_dataset_attachments)
                .where(cloud_dataset_attachments.c.storage_id == storage_id)
                .order_by(cloud_dataset_attachments.c.cluster_id)
            )
            return [record_of(StorageAttachment, r) for r in rows]


__all__ = ["AttachmentRecord", "DatasetStore", "StorageRecord", "not_found"]
