"""Dataset storage use-cases: register, list, show, delete; attach to and detach from a
cluster (each a task); reseal stored credentials under the newest key.

A project registers a bucket on one of the operator's endpoints with its
access key id and secret key; both are sealed before they reach the store
(:mod:`..sealing`) and no answer ever carries them: listings show the access
key masked. A project sees only its own storage: another's is "not found".
A cluster holds at most one storage, given at creation or attached later;
deleting a storage some cluster holds is refused (detach it first).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable
from dataclasses import dataclass

from vpod.wire.field_copy import copy_all_fields

from ..dataset_rules import (
    ACCESS_KEY_MAX,
    SECRET_KEY_MAX,
    check_bucket,
    check_key,
    check_mount_path,
    find_endpoint,
)
from ..flavors import find_flavor
from ..model import errors
from ..model.datasets import DatasetStorage, SealedStorage, StorageEndpoint, mask
from ..model.records import Task
from ..model.task_params import DatasetAttachParams, DatasetDetachParams
from ..quotas import admit_within
from ..states import Operation
from ..states import check_operation as check_state
from ..validation import check_name
from .cluster_views import ClusterViews
from .clusters import Clusters
from .context import CloudContext
from .project_resources import ViewedResources
from .projects import Principal

log = logging.getLogger("vpod.cloud")


@dataclass(frozen=True)
class NewStorage:
    name: str
    endpoint: str
    bucket: str
    access_key_id: str
    secret_access_key: str


class Datasets(ViewedResources[SealedStorage, DatasetStorage]):
    what = "dataset storage"
    lists_them = "vpod storage list"

    def __init__(self, ctx: CloudContext, views: ClusterViews, clusters: Clusters) -> None:
        super().__init__(ctx, views)
        self._clusters = clusters

    def _lookup(self, project_id: str, ref: str) -> Awaitable[SealedStorage | None]:
        return self._ctx.records.find_storage(project_id, ref)

    @property
    def endpoints(self) -> tuple[StorageEndpoint, ...]:
        return self._ctx.settings.storage_endpoints

    async def _view(self, record: SealedStorage) -> DatasetStorage:
        ctx = self._ctx
        held = await ctx.records.storage_attachments(record.id)
        names = []
        for attachment in held:
            cluster = await ctx.records.find_cluster(record.project_id, attachment.cluster_id)
            if cluster is not None:
                names.append(cluster.name)
        return copy_all_fields(DatasetStorage, record, clusters=tuple(sorted(names)))

    async def register(self, principal: Principal, new: NewStorage) -> DatasetStorage:
        ctx = self._ctx
        project_id = principal.project()
        check_name("dataset storage", new.name)
        find_endpoint(self.endpoints, new.endpoint)
        check_bucket(new.bucket)
        check_key("the access key id", new.access_key_id, ACCESS_KEY_MAX)
        check_key("the secret access key", new.secret_access_key, SECRET_KEY_MAX)
        record = SealedStorage(
            id=ctx.ids.new("ds"),
            project_id=project_id,
            name=new.name,
            endpoint=new.endpoint,
            bucket=new.bucket,
            access_key_masked=mask(new.access_key_id),
            access_key_sealed=ctx.sealer.seal(new.access_key_id),
            secret_key_sealed=ctx.sealer.seal(new.secret_access_key),
            created_at=ctx.clock.now(),
        )
        await ctx.records.add_storage(record, admit=admit_within({"dataset_storages": 1}))
        return await self._view(record)

    async def list_storages(self, principal: Principal) -> list[DatasetStorage]:
        found = await self._ctx.records.list_storages(principal.project())
        return await self._views_of(found)

    async def delete(self, principal: Principal, ref: str) -> None:
        """Refused while a cluster holds it: detaching rewrites servers, which deleting a
        registration should not do behind the tenant's back."""
        record = await self._find(principal, ref)
        view = await self._view(record)
        if view.clusters:
            raise errors.FailedPrecondition(
                f"dataset storage {record.name} is attached to cluster(s)"
                f" {', '.join(view.clusters)}: detach it first (`vpod storage detach CLUSTER`)"
            )
        await self._ctx.records.delete_storage(record.id)

    async def check_for_cluster(
        self, principal: Principal, ref: str, mount_path: str | None
    ) -> tuple[str, str | None]:
        """(storage id, checked mount path) a new cluster may be given."""
        record = await self._find(principal, ref)
        find_endpoint(self.endpoints, record.endpoint)
        return record.id, self._mount(mount_path)

    def _mount(self, mount_path: str | None) -> str | None:
        if mount_path is None:
            return None
        checked = check_mount_path(mount_path)
        problem = self._ctx.compute.mount_problem()
        if problem is not None:
            raise errors.FailedPrecondition(
                f"cannot mount dataset storage on these servers: {problem}; leave the mount"
                " path out (the credentials still work)"
            )
        return checked

    async def attach(
        self, principal: Principal, ref: str, cluster_ref: str, mount_path: str | None = None
    ) -> Task:
        storage_id, mount = await self.check_for_cluster(principal, ref, mount_path)
        cluster = await self._views.find(principal, cluster_ref)
        check_state(
            Operation.DATASET_ATTACH, cluster.status, find_flavor(cluster.flavor), cluster.name
        )
        current = await self._ctx.records.storage_attachment(cluster.id)
        if current is not None and current.storage_id != storage_id:
            held = await self._ctx.records.get_storage(current.storage_id)
            raise errors.FailedPrecondition(
                f"cluster {cluster.name} holds dataset storage {held.name}: a cluster holds one;"
                f" detach it first (`vpod storage detach {cluster.name}`)"
            )
        params = DatasetAttachParams(dataset_storage_id=storage_id, dataset_mount=mount)
        return await self._clusters.start_task(cluster, Operation.DATASET_ATTACH, params)

    async def detach(self, principal: Principal, cluster_ref: str) -> Task:
        cluster = await self._views.find(principal, cluster_ref)
        check_state(
            Operation.DATASET_DETACH, cluster.status, find_flavor(cluster.flavor), cluster.name
        )
        if await self._ctx.records.storage_attachment(cluster.id) is None:
            raise errors.FailedPrecondition(
                f"cluster {cluster.name} holds no dataset storage: nothing to detach"
            )
        return await self._clusters.start_task(
            cluster, Operation.DATASET_DETACH, DatasetDetachParams()
        )

    async def reseal_all(self) -> int:
        """Seal every stored credential under the first key of the key file (after a
        rotation); how many storages changed."""
        ctx = self._ctx
        changed = 0
        stored = await ctx.records.list_storages()
        if stored and not ctx.sealer.path.exists():
            log.error(
                "cloud: %d dataset storage credentials are stored but %s is missing: restore"
                " it (they cannot be unsealed without it); a new key is made only when a"
                " storage is registered",
                len(stored),
                ctx.sealer.path,
            )
            return 0
        for record in stored:
            access = ctx.sealer.reseal(record.access_key_sealed)
            secret = ctx.sealer.reseal(record.secret_key_sealed)
            if access is not None or secret is not None:
                await ctx.records.reseal_storage(
                    record.id,
                    access or record.access_key_sealed,
                    secret or record.secret_key_sealed,
                )
                changed += 1
        return changed
