"""The cloud's records are one value type each (``vpod.domain.cloud``): the store reads its
rows into them and writes them as they are, on a real database of each kind. Statuses come
back as their ``StrEnum`` members, stored as the members' strings; a task written with
typed parameters keeps the JSON they write; a status no member names is read as stored."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pytest
from sqlalchemy import select, update

from vpod.cloud import model
from vpod.domain.cloud.hosts import Host
from vpod.domain.cloud.metering import MeterEntry
from vpod.domain.cloud.resources import Cluster, Keypair, Server, Task, Volume
from vpod.domain.cloud.statuses import (
    ClusterStatus,
    Operation,
    Phase,
    ServerStatus,
    TaskState,
    VolumeStatus,
)
from vpod.domain.cloud.task_params import ResizeParams
from vpod.domain.cloud.tenants import Project
from vpod.store import Store
from vpod.store import cloud_records as store_names
from vpod.store.cloud_schema import cloud_clusters, cloud_servers, cloud_tasks, cloud_volumes
from vpod.store.cloud_store import CloudStore

NOW = datetime(2026, 5, 1, tzinfo=UTC)


@pytest.fixture
def cloud(store: Store) -> CloudStore:
    cloud = CloudStore.of(store)
    cloud.add_project(Project("p1", "p1", {}, NOW))
    return cloud


def a_cluster(status: ClusterStatus = ClusterStatus.CREATING) -> Cluster:
    return Cluster(
        id="cl-1", project_id="p1", name="one", flavor="f", kind="gpu_vm", status=status,
        image="img", server_count=1, ipus=0, gpu_family="a100-80", gpus=1, created_at=NOW,
        updated_at=NOW,
    )  # fmt: skip


def a_task(tid: str, params: ResizeParams) -> Task:
    return Task(
        id=tid, project_id="p1", operation=Operation.RESIZE, resource_type="cluster",
        resource_id="cl-1", resource_name="one", state=TaskState.NEW, created_at=NOW,
        updated_at=NOW, params=params,
    )  # fmt: skip


def test_the_model_and_the_store_name_the_same_types() -> None:
    assert model.Cluster is Cluster is store_names.ClusterRecord
    assert model.Server is Server is store_names.ServerRecord
    assert model.Volume is Volume is store_names.VolumeRecord
    assert model.Keypair is Keypair is store_names.KeypairRecord
    assert model.Host is Host is store_names.HostRecord
    assert model.MeterEntry is MeterEntry is store_names.MeterEntry
    assert model.Project is Project is store_names.ProjectRecord
    assert model.ClusterStatus is ClusterStatus


def test_statuses_come_back_as_their_members_and_are_stored_as_their_strings(
    store: Store, cloud: CloudStore
) -> None:
    params = ResizeParams(vpod=False, server_count=2, previous=1, new_server_ids=("sv-2",))
    server = Server("sv-1", "cl-1", 1, "one-1", ServerStatus.BUILD, "img", NOW, NOW)
    volume = Volume("v-1", "p1", "data", 10, "standard", False, VolumeStatus.CREATING, NOW, NOW)
    cloud.create_cluster(a_cluster(), [server], a_task("t-1", params), new_volumes=[volume])
    cloud.enter_phase("t-1", Phase.NETWORK, NOW, state=TaskState.RUNNING)

    found = cloud.get_cluster("cl-1")
    assert type(found) is Cluster
    assert type(found.status) is ClusterStatus
    assert found.status is ClusterStatus.CREATING
    assert [type(s.status) for s in cloud.list_servers(["cl-1"])] == [ServerStatus]
    assert cloud.get_volume("v-1").status is VolumeStatus.CREATING
    task = cloud.get_task("t-1")
    assert (task.operation, task.state, task.detailed_state) == (
        Operation.RESIZE,
        TaskState.RUNNING,
        Phase.NETWORK,
    )
    assert type(task.operation) is Operation
    assert type(task.state) is TaskState
    assert [type(phase) for phase, _at in task.phases] == [Phase]
    assert task.params == params.to_json()  # the row keeps the JSON the typed value writes

    with store._db.read() as conn:
        stored = (
            conn.scalar(select(cloud_clusters.c.status)),
            conn.scalar(select(cloud_servers.c.status)),
            conn.scalar(select(cloud_volumes.c.status)),
            tuple(conn.execute(select(cloud_tasks.c.operation, cloud_tasks.c.state)).one()),
        )
    assert stored == ("CREATING", "BUILD", "creating", ("resize", "RUNNING"))
    assert all(type(s) is str for s in (*stored[:3], *stored[3]))


def test_a_status_no_member_names_is_read_as_stored(store: Store, cloud: CloudStore) -> None:
    cloud.create_cluster(a_cluster(), [], a_task("t-1", ResizeParams()))
    with store._db.write() as conn:
        conn.execute(update(cloud_clusters).values(status="HIBERNATING"))
    assert cloud.get_cluster("cl-1").status == "HIBERNATING"


def test_metering_and_keypairs_round_trip_as_the_same_values(cloud: CloudStore) -> None:
    entry = MeterEntry(NOW, "p1", "cluster", "cl-1", "one", "f", 1, Decimal("4.60"), True, "NEW")
    cloud.append_meter([entry])
    (back,) = cloud.list_meter(project_id="p1")
    assert back.id > 0
    assert back == MeterEntry(**{**entry.__dict__, "id": back.id})
    assert [type(v) for v in (back.id, back.quantity, back.billable)] == [int, int, bool]
    key = Keypair("kp-1", "p1", "laptop", "ssh-ed25519", "ssh-ed25519 AAAA", "SHA256:x", NOW)
    cloud.keypairs.add(key)
    assert cloud.keypairs.find("p1", "laptop") == key
