"""Typed task parameters: one kind per operation, written as the JSON earlier versions wrote,
read back validated through the records (a real SQLite database), old rows still loading."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from vpod.cloud.model import errors
from vpod.cloud.model.datasets import SealedStorage
from vpod.cloud.model.records import Keypair, Task
from vpod.cloud.model.statuses import Operation, TaskState
from vpod.cloud.model.task_params import (
    PARAMS_OF,
    ClusterParams,
    CreateParams,
    DatasetAttachParams,
    DatasetChange,
    DatasetDetachParams,
    DeleteParams,
    RebuildParams,
    ResizeParams,
    SetMetadataParams,
    TaskParams,
    VolumeAttachParams,
    VolumeDetachParams,
    is_vpod,
)
from vpod.cloud.model.tenants import Project
from vpod.cloud.services.records import CloudRecords
from vpod.store import Store
from vpod.store.cloud_records import TaskRecord
from vpod.store.cloud_store import CloudStore

NOW = datetime(2026, 5, 1, tzinfo=UTC)

# What each operation's task row held before the parameters were typed (the services wrote
# these dicts), next to the typed value that must write exactly the same JSON.
WRITTEN: list[tuple[Operation, TaskParams, dict[str, Any]]] = [
    (
        Operation.CREATE,
        CreateParams(vpod=True, data_volume_ids=("vol-1",), new_volume_ids=("vol-1", "vol-b")),
        {"vpod": True, "data_volume_ids": ["vol-1"], "new_volume_ids": ["vol-1", "vol-b"]},
    ),
    (
        Operation.CREATE,
        CreateParams(
            vpod=False, new_volume_ids=("vol-b",), dataset_storage_id="ds-1", dataset_mount=None
        ),
        {
            "vpod": False,
            "data_volume_ids": [],
            "new_volume_ids": ["vol-b"],
            "dataset_storage_id": "ds-1",
            "dataset_mount": None,
        },
    ),
    (
        Operation.DELETE,
        DeleteParams(vpod=True, delete_volumes=True),
        {"vpod": True, "delete_volumes": True},
    ),
    (Operation.SUSPEND, ClusterParams(vpod=True), {"vpod": True}),
    (Operation.RESUME, ClusterParams(vpod=True), {"vpod": True}),
    (Operation.REBOOT, ClusterParams(vpod=False), {"vpod": False}),
    (
        Operation.RESIZE,
        ResizeParams(vpod=False, server_count=3, previous=1, new_server_ids=("s-2", "s-3")),
        {"vpod": False, "server_count": 3, "previous": 1, "new_server_ids": ["s-2", "s-3"]},
    ),
    (
        Operation.RESIZE,
        ResizeParams(vpod=False, server_count=1, previous=2, remove_server_ids=("s-2",)),
        {"vpod": False, "server_count": 1, "previous": 2, "remove_server_ids": ["s-2"]},
    ),
    (Operation.REBUILD, RebuildParams(vpod=True, image="img-2"), {"vpod": True, "image": "img-2"}),
    (
        Operation.SET_METADATA,
        SetMetadataParams(metadata={"team": "ml"}),
        {"metadata": {"team": "ml"}},
    ),
    (Operation.VOLUME_CREATE, TaskParams(), {}),
    (Operation.VOLUME_DELETE, TaskParams(), {}),
    (
        Operation.VOLUME_ATTACH,
        VolumeAttachParams(cluster_id="cl-1", server=2),
        {"cluster_id": "cl-1", "server": 2},
    ),
    (Operation.VOLUME_DETACH, VolumeDetachParams(cluster_id="cl-1"), {"cluster_id": "cl-1"}),
    (
        Operation.DATASET_ATTACH,
        DatasetAttachParams(vpod=True, dataset_storage_id="ds-1", dataset_mount="/data"),
        {"vpod": True, "dataset_storage_id": "ds-1", "dataset_mount": "/data"},
    ),
    (
        Operation.DATASET_DETACH,
        DatasetDetachParams(vpod=True),
        {"vpod": True, "dataset_detach": True},
    ),
]


@pytest.fixture
def tables(tmp_path: Path) -> Iterator[tuple[CloudStore, CloudRecords]]:
    with Store.open(f"sqlite:///{tmp_path / 'vpod.db'}") as base:
        base.migrate()
        records = CloudRecords.of(base)
        asyncio.run(records.add_project(Project("acme", "Acme", {}, NOW)))
        yield CloudStore.of(base), records
        records.close()


def task(n: int, operation: Operation, params: TaskParams) -> Task:
    resource = "volume" if operation.value.startswith("volume_") else "cluster"
    return Task(
        id=f"task-{n}",
        project_id="acme",
        operation=operation,
        resource_type=resource,
        resource_id="res-1",
        resource_name="one",
        state=TaskState.NEW,
        created_at=NOW,
        updated_at=NOW,
        params=params,
    )


def test_every_operation_has_a_kind_of_parameters() -> None:
    assert set(PARAMS_OF) == set(Operation)
    assert {op for op, _params, _json in WRITTEN} == set(Operation)


@pytest.mark.parametrize(("operation", "params", "written"), WRITTEN)
def test_parameters_write_the_json_earlier_versions_wrote(
    operation: Operation, params: TaskParams, written: dict[str, Any]
) -> None:
    assert isinstance(params, PARAMS_OF[operation])
    assert params.to_json() == written
    assert list(params.to_json()) == list(written)  # the same keys in the same order


def test_tasks_go_through_the_records_typed_and_come_back_equal(
    tables: tuple[CloudStore, CloudRecords],
) -> None:
    store, records = tables
    for n, (operation, params, written) in enumerate(WRITTEN):
        asyncio.run(records.add_task(task(n, operation, params)))
        assert store.get_task(f"task-{n}").params == written  # the row holds the old JSON
        back = asyncio.run(records.get_task(f"task-{n}"))
        assert back.params == params
        assert type(back.params) is PARAMS_OF[operation]


def test_rows_an_older_version_wrote_still_load(
    tables: tuple[CloudStore, CloudRecords],
) -> None:
    store, records = tables
    old = TaskRecord(
        id="task-old",
        project_id="acme",
        operation="resize",
        resource_type="cluster",
        resource_id="cl-1",
        resource_name="one",
        state="NEW",
        created_at=NOW,
        updated_at=NOW,
        # no "vpod" (a vPOD then), a key this version does not know, numbers as JSON has them
        params={"server_count": 2, "previous": 1, "new_server_ids": ["s-2"], "retired": 1},
    )
    store.add_task(old)
    loaded = asyncio.run(records.get_task("task-old")).params
    assert loaded == ResizeParams(vpod=True, server_count=2, previous=1, new_server_ids=("s-2",))
    assert is_vpod(loaded)
    store.add_task(replace(old, id="task-del", operation="delete", params={}))
    assert asyncio.run(records.get_task("task-del")).params == DeleteParams(vpod=True)


def test_unreadable_parameters_are_a_clear_refusal_not_a_crash(
    tables: tuple[CloudStore, CloudRecords],
) -> None:
    store, records = tables
    store.add_task(
        TaskRecord(
            id="task-bad",
            project_id="acme",
            operation="volume_attach",
            resource_type="volume",
            resource_id="vol-1",
            resource_name="one",
            state="NEW",
            created_at=NOW,
            updated_at=NOW,
            params={"server": "the second"},
        )
    )
    with pytest.raises(errors.FailedPrecondition) as refused:
        asyncio.run(records.get_task("task-bad"))
    message = str(refused.value)
    for named in ("task-bad", "cluster_id", "server"):
        assert named in message


def test_dataset_changes_are_what_the_task_asks() -> None:
    assert CreateParams().dataset_change is None
    assert CreateParams(dataset_storage_id="ds-1", dataset_mount="/d").dataset_change == (
        DatasetChange("ds-1", "/d")
    )
    assert DatasetAttachParams(dataset_storage_id="ds-1").dataset_change == DatasetChange(
        "ds-1", None
    )
    assert DatasetDetachParams().dataset_change == DatasetChange(None)
    assert ClusterParams().dataset_change is None
    assert not is_vpod(ClusterParams(vpod=False))
    assert is_vpod(SetMetadataParams(metadata={}))


def test_keypairs_and_storages_go_through_the_records_as_model_values(
    tables: tuple[CloudStore, CloudRecords],
) -> None:
    _store, records = tables
    key = Keypair("kp-1", "acme", "laptop", "ssh-ed25519", "ssh-ed25519 AAAA", "SHA256:x", NOW)
    asyncio.run(records.add_keypair(key))
    assert asyncio.run(records.find_keypair("acme", "laptop")) == key
    assert asyncio.run(records.list_keypairs("acme")) == [key]
    assert asyncio.run(records.find_keypair("other", "laptop")) is None
    storage = SealedStorage("ds-1", "acme", "bucket", "s3", "b", "AK…YZ", "s1", "s2", NOW)
    asyncio.run(records.add_storage(storage))
    assert asyncio.run(records.find_storage("acme", "bucket")) == storage
    assert asyncio.run(records.list_storages()) == [storage]
