"""Dataset storage registrations (keys sealed) and the clusters holding them."""

from __future__ import annotations

from collections.abc import Sequence

from ...model.datasets import SealedStorage, StorageAttachment
from .base import RecordsBase
from .convert import attachment_of, row_of_storage, storage_of


class DatasetRecords(RecordsBase):
    async def add_storage(self, storage: SealedStorage) -> None:
        await self._db(self._store.datasets.add, row_of_storage(storage))

    async def get_storage(self, storage_id: str) -> SealedStorage:
        return storage_of(await self._db(self._store.datasets.get, storage_id))

    async def find_storage(self, project_id: str, ref: str) -> SealedStorage | None:
        """The project's storage with id or name ``ref``."""
        return await self._found(storage_of, self._store.datasets.find, project_id, ref)

    async def list_storages(self, project_id: str | None = None) -> list[SealedStorage]:
        """A project's storages (every project's without)."""
        found = await self._db(self._store.datasets.list_storages, project_id)
        return [storage_of(s) for s in found]

    async def reseal_storage(
        self, storage_id: str, access_key_sealed: str, secret_key_sealed: str
    ) -> None:
        """Replace the sealed credentials (the same values under a newer key)."""
        await self._db(
            self._store.datasets.reseal, storage_id, access_key_sealed, secret_key_sealed
        )

    async def delete_storage(self, storage_id: str) -> None:
        """FailedPrecondition while a cluster holds it."""
        await self._db(self._store.datasets.delete, storage_id)

    async def attach_storage(
        self, cluster_id: str, storage_id: str, mount_path: str | None
    ) -> None:
        """Give the cluster the storage (idempotent; replaces the mount path)."""
        await self._db(self._store.datasets.attach, cluster_id, storage_id, mount_path)

    async def detach_storage(self, cluster_id: str) -> None:
        """Take the cluster's storage away (idempotent)."""
        await self._db(self._store.datasets.detach, cluster_id)

    async def storage_attachment(self, cluster_id: str) -> StorageAttachment | None:
        """The storage the cluster holds, if any."""
        return await self._found(attachment_of, self._store.datasets.attachment, cluster_id)

    async def storage_attachments(self, storage_id: str) -> list[StorageAttachment]:
        """The clusters holding the storage."""
        found = await self._db(self._store.datasets.attachments, storage_id)
        return [attachment_of(a) for a in found]

    async def storages_held_by(
        self, cluster_ids: Sequence[str]
    ) -> dict[str, tuple[str, str | None]]:
        """Cluster id -> (name of the storage it holds, mount path), for those that hold one."""
        return await self._db(self._store.datasets.held_by, list(cluster_ids))
