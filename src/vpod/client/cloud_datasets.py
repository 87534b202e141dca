"""Dataset storage calls of the cloud clients (mixed into :class:`~.cloud.CloudClient` and
:class:`~.cloud.AsyncCloudClient`): S3-compatible buckets a project registers and gives
to its clusters. No answer carries a key: the access key id comes back masked."""

from __future__ import annotations

from . import cloud_calls as calls
from .cloud_records import DatasetStorage, StorageEndpoint, Task
from .http_transport import AsyncHttpTransport, HttpTransport


class DatasetStorageCalls:
    _http: HttpTransport

    def storage_endpoints(self) -> list[StorageEndpoint]:
        """The S3-compatible endpoints the operator offers."""
        return self._http.invoke(calls.storage_endpoints())

    def list_dataset_storage(self) -> list[DatasetStorage]:
        return self._http.invoke(calls.list_dataset_storage())

    def register_dataset_storage(
        self, name: str, endpoint: str, bucket: str, access_key_id: str, secret_access_key: str
    ) -> DatasetStorage:
        """Register a bucket and its keys (sealed at rest; the secret is never shown again)."""
        return self._http.invoke(
            calls.register_dataset_storage(name, endpoint, bucket, access_key_id, secret_access_key)
        )

    def get_dataset_storage(self, storage: str) -> DatasetStorage:
        return self._http.invoke(calls.get_dataset_storage(storage))

    def delete_dataset_storage(self, storage: str) -> None:
        """Refused (FailedPrecondition) while a cluster holds it: detach it first."""
        self._http.invoke(calls.delete_dataset_storage(storage))

    def attach_dataset_storage(
        self, storage: str, cluster: str, mount_path: str | None = None
    ) -> Task:
        return self._http.invoke(calls.attach_dataset_storage(storage, cluster, mount_path))

    def detach_dataset_storage(self, cluster: str) -> Task:
        return self._http.invoke(calls.detach_dataset_storage(cluster))


class AsyncDatasetStorageCalls:
    _http: AsyncHttpTransport

    async def storage_endpoints(self) -> list[StorageEndpoint]:
        return await self._http.invoke(calls.storage_endpoints())

    async def list_dataset_storage(self) -> list[DatasetStorage]:
        return await self._http.invoke(calls.list_dataset_storage())

    async def register_dataset_storage(
        self, name: str, endpoint: str, bucket: str, access_key_id: str, secret_access_key: str
    ) -> DatasetStorage:
        return await self._http.invoke(
            calls.register_dataset_storage(name, endpoint, bucket, access_key_id, secret_access_key)
        )

    async def get_dataset_storage(self, storage: str) -> DatasetStorage:
        return await self._http.invoke(calls.get_dataset_storage(storage))

    async def delete_dataset_storage(self, storage: str) -> None:
        await self._http.invoke(calls.delete_dataset_storage(storage))

    async def attach_dataset_storage(
        self, storage: str, cluster: str, mount_path: str | None = None
    ) -> Task:
        return await self._http.invoke(calls.attach_dataset_storage(storage, cluster, mount_path))

    async def detach_dataset_storage(self, cluster: str) -> Task:
        return await self._http.invoke(calls.detach_dataset_storage(cluster))
