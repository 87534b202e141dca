"""Dataset storage routes: register, list, show and delete a project's buckets; attach one
to a cluster or detach it (tasks). Module-level, bound like ``router`` by ``cloud_router``."""

from __future__ import annotations

from fastapi import APIRouter

from vpod.wire.field_copy import copy_all_fields
from vpod.wire.rest.cloud_datasets import (
    DatasetAttachIn,
    DatasetStorageIn,
    DatasetStorageOut,
    StorageEndpointOut,
)
from vpod.wire.rest.cloud_tasks import TaskOut

from ..model.datasets import DatasetStorage
from ..services.datasets import NewStorage
from .convert import task_out
from .deps import PREFIX, CloudDep, Tenant, creates, starts_task
from .errors import CloudRoute, error_responses

dataset_router = APIRouter(
    prefix=PREFIX, tags=["dataset storage"], route_class=CloudRoute, responses=error_responses()
)


def storage_out(storage: DatasetStorage) -> DatasetStorageOut:
    return copy_all_fields(DatasetStorageOut, storage, access_key=storage.access_key_masked)


@dataset_router.get(
    "/storage-endpoints",
    response_model=list[StorageEndpointOut],
    summary="S3-compatible endpoints the operator offers",
)
async def list_endpoints(cloud: CloudDep, _who: Tenant) -> list[StorageEndpointOut]:
    return [copy_all_fields(StorageEndpointOut, e) for e in cloud.datasets.endpoints]


@dataset_router.get(
    "/dataset-storage", response_model=list[DatasetStorageOut], summary="Your dataset storage"
)
async def list_storage(cloud: CloudDep, who: Tenant) -> list[DatasetStorageOut]:
    return [storage_out(s) for s in await cloud.datasets.list_storages(who)]


@creates(
    dataset_router.post,
    "/dataset-storage",
    DatasetStorageOut,
    "Register a bucket and its keys (sealed at rest, never shown again)",
)
async def register_storage(
    cloud: CloudDep, body: DatasetStorageIn, who: Tenant
) -> DatasetStorageOut:
    new = copy_all_fields(NewStorage, body)
    return storage_out(await cloud.datasets.register(who, new))


@dataset_router.get("/dataset-storage/{storage}", response_model=DatasetStorageOut)
async def get_storage(cloud: CloudDep, storage: str, who: Tenant) -> DatasetStorageOut:
    return storage_out(await cloud.datasets.get(who, storage))


@dataset_router.delete(
    "/dataset-storage/{storage}",
    status_code=204,
    summary="Forget a storage (refused while a cluster holds it: detach first)",
)
async def delete_storage(cloud: CloudDep, storage: str, who: Tenant) -> None:
    await cloud.datasets.delete(who, storage)


@starts_task(
    dataset_router.post,
    "/clusters/{cluster}/dataset-storage",
    "Give a cluster's servers a dataset storage (and mount it)",
)
async def attach_storage(
    cloud: CloudDep, cluster: str, body: DatasetAttachIn, who: Tenant
) -> TaskOut:
    return task_out(await cloud.datasets.attach(who, body.storage, cluster, body.mount_path))


@starts_task(
    dataset_router.delete,
    "/clusters/{cluster}/dataset-storage",
    "Take a cluster's dataset storage away (files removed, bucket unmounted)",
)
async def detach_storage(cloud: CloudDep, cluster: str, who: Tenant) -> TaskOut:
    return task_out(await cloud.datasets.detach(who, cluster))
