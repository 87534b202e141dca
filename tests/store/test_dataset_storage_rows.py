"""Dataset storage rows: what the database itself enforces (SQLite and PostgreSQL): a
storage a cluster holds is not deleted, a cluster holds one storage, the attachment goes
with its cluster, names are unique per project."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from sqlalchemy import delete, insert

from vpod.store import Store
from vpod.store.cloud_records import ProjectRecord
from vpod.store.cloud_schema import cloud_clusters
from vpod.store.cloud_store import CloudStore
from vpod.store.dataset_schema import cloud_dataset_storages
from vpod.store.dataset_store import StorageRecord
from vpod.store.errors import AlreadyExists, Conflict

NOW = datetime(2026, 5, 1, tzinfo=UTC)


def storage(sid: str, name: str, project: str = "p1") -> StorageRecord:
    return StorageRecord(
        id=sid,
        project_id=project,
        name=name,
        endpoint="lab",
        bucket="data",
        access_key_masked="AK…YZ",
        access_key_sealed="gAAAA-sealed-access",
        secret_key_sealed="gAAAA-sealed-secret",
        created_at=NOW,
    )


@pytest.fixture
def cloud(store: Store) -> CloudStore:
    cloud = CloudStore.of(store)
    for project in ("p1", "p2"):
        cloud.add_project(ProjectRecord(project, project, {}, NOW))
    with store._db.write() as conn:
        for cid in ("c1", "c2"):
            conn.execute(
                insert(cloud_clusters).values(
                    id=cid, project_id="p1", name=cid, flavor="f", kind="vpod", status="ACTIVE",
                    image="i", server_count=1, ipus=4, gpus=0, interfaces=[], network={},
                    metadata={}, error="", created_at=NOW, updated_at=NOW,
                )
            )  # fmt: skip
    return cloud


def test_an_attached_storage_is_not_deleted_even_behind_the_code(
    cloud: CloudStore, store: Store
) -> None:
    datasets = cloud.datasets
    datasets.add(storage("s1", "train"))
    datasets.attach("c1", "s1", "/mnt/data")
    with pytest.raises(Conflict, match="attached to cluster"):
        datasets.delete("s1")
    with pytest.raises(Conflict), store._db.write() as conn:  # past the check: the foreign key
        conn.execute(delete(cloud_dataset_storages).where(cloud_dataset_storages.c.id == "s1"))
    assert datasets.get("s1").name == "train"


def test_a_cluster_holds_one_storage_and_the_attachment_goes_with_it(
    cloud: CloudStore, store: Store
) -> None:
    datasets = cloud.datasets
    datasets.add(storage("s1", "train"))
    datasets.add(storage("s2", "eval"))
    datasets.attach("c1", "s1", None)
    datasets.attach("c1", "s1", "/mnt/x")  # again: the mount path changes
    assert datasets.attachment("c1") is not None
    assert datasets.attachment("c1").mount_path == "/mnt/x"  # type: ignore[union-attr]
    with pytest.raises(Conflict, match="detach it first"):
        datasets.attach("c1", "s2", None)
    with store._db.write() as conn:
        conn.execute(delete(cloud_clusters).where(cloud_clusters.c.id == "c1"))
    assert datasets.attachment("c1") is None
    datasets.delete("s1")
    assert [s.id for s in datasets.list_storages()] == ["s2"]


def test_names_are_unique_per_project(cloud: CloudStore) -> None:
    cloud.datasets.add(storage("s1", "train"))
    with pytest.raises(AlreadyExists, match="exists in project p1"):
        cloud.datasets.add(storage("s2", "train"))
    cloud.datasets.add(storage("s3", "train", project="p2"))
    assert cloud.datasets.find("p2", "train") == storage("s3", "train", project="p2")
    assert cloud.datasets.find("p1", "s3") is None
