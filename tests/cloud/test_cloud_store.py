"""The cloud tables: quotas checked inside the transaction, one task per cluster, host slots
held once, metering entries kept exactly."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import pytest

from vpod.store import Store
from vpod.store.cloud_records import (
    ClusterRecord,
    HostRecord,
    MeterEntry,
    ProjectRecord,
    ServerRecord,
    TaskRecord,
    TokenRecord,
    VolumeRecord,
)
from vpod.store.cloud_store import CloudStore
from vpod.store.errors import AlreadyExists, Conflict

NOW = datetime(2026, 5, 1, tzinfo=UTC)


class Refused(Exception):
    pass


@pytest.fixture
def store(tmp_path: Path) -> Iterator[CloudStore]:
    with Store.open(f"sqlite:///{tmp_path / 'vpod.db'}") as base:
        base.migrate()
        cloud = CloudStore.of(base)
        cloud.add_project(ProjectRecord("acme", "Acme", {"clusters": 2}, NOW))
        yield cloud


def cluster(cid: str = "cl-1", name: str = "c1", **changes: object) -> ClusterRecord:
    base = ClusterRecord(
        id=cid,
        project_id="acme",
        name=name,
        flavor="g2a-ai-fast-v1pod-8",
        kind="virtual_vpod",
        status="NEW",
        image="img",
        server_count=1,
        ipus=8,
        gpu_family=None,
        gpus=0,
        created_at=NOW,
        updated_at=NOW,
    )
    return replace(base, **changes)  # type: ignore[arg-type]


def server(sid: str = "sv-1", cid: str = "cl-1", position: int = 1) -> ServerRecord:
    return ServerRecord(sid, cid, position, f"s{position}", "BUILD", "img", NOW, NOW)


def task(tid: str, resource: str = "cl-1", operation: str = "create") -> TaskRecord:
    return TaskRecord(tid, "acme", operation, "cluster", resource, "c1", "NEW", NOW, NOW)


def volume(vid: str, name: str, size: int = 10, **changes: object) -> VolumeRecord:
    base = VolumeRecord(vid, "acme", name, size, "standard", False, "available", NOW, NOW)
    return replace(base, **changes)  # type: ignore[arg-type]


def test_a_cluster_is_recorded_with_servers_volumes_task_and_metering(store: CloudStore) -> None:
    """create_cluster writes everything at once; usage counts it."""
    entry = MeterEntry(NOW, "acme", "cluster", "cl-1", "c1", "f", 1, Decimal("4.60"), False, "NEW")
    store.create_cluster(
        cluster(), [server()], task("t1"), new_volumes=[volume("v1", "boot", 50)], meter=[entry]
    )
    assert store.get_cluster("cl-1").status == "NEW"
    assert [s.id for s in store.list_servers(["cl-1"])] == ["sv-1"]
    assert store.project_usage("acme") == {
        "clusters": 1,
        "ipus": 8,
        "volumes": 1,
        "volume_gib": 50,
    }
    [kept] = store.list_meter(project_id="acme")
    assert kept.unit_price_per_hour == Decimal("4.60")
    assert kept.id > 0
    assert store.find_cluster("acme", "c1") == store.find_cluster("acme", "cl-1")


def test_admit_sees_usage_and_can_refuse_leaving_nothing_behind(store: CloudStore) -> None:
    """The quota check runs in the transaction: a refusal rolls everything back."""
    seen: list[dict[str, int]] = []

    def admit(project: ProjectRecord, used: dict[str, int]) -> None:
        seen.append(used)
        if used["clusters"] >= project.quotas["clusters"] - 1:
            raise Refused("over quota")

    store.create_cluster(cluster("cl-1", "c1"), [], task("t1"), admit=admit)
    with pytest.raises(Refused):
        store.create_cluster(
            cluster("cl-2", "c2"), [server("sv-2", "cl-2")], task("t2"), admit=admit
        )
    assert [c.id for c in store.list_clusters("acme")] == ["cl-1"]
    assert store.list_tasks(project_id="acme") == [store.get_task("t1")]
    assert seen[0]["clusters"] == 0
    assert seen[1]["clusters"] == 1


def test_names_are_unique_per_project(store: CloudStore) -> None:
    """A second cluster called c1 in the same project is AlreadyExists."""
    store.create_cluster(cluster(), [], task("t1"))
    with pytest.raises(AlreadyExists, match="has a cluster named c1 already"):
        store.create_cluster(cluster("cl-2"), [], task("t2"))


def test_a_cluster_runs_one_task_at_a_time(store: CloudStore) -> None:
    """A claimed cluster refuses a second task (saying which runs); finish frees it."""
    store.create_cluster(cluster(status="ACTIVE"), [], task("t0"))
    store.finish_task("t0", state="FINISHED", at=NOW, detailed_state="FINISHED")
    store.start_cluster_task("cl-1", task("t1", operation="suspend"), allowed=["ACTIVE"])
    with pytest.raises(Conflict, match="busy with task t1") as busy:
        store.start_cluster_task("cl-1", task("t2", operation="reboot"), allowed=["ACTIVE"])
    assert not busy.value.retryable
    done = store.finish_task(
        "t1",
        state="FINISHED",
        at=NOW,
        detailed_state="FINISHED",
        cluster_changes={"status": "SUSPENDED"},
    )
    assert (done.state, done.finished_at) == ("FINISHED", NOW)
    assert store.get_cluster("cl-1").active_task_id is None
    with pytest.raises(Conflict, match="is SUSPENDED"):
        store.start_cluster_task("cl-1", task("t3", operation="reboot"), allowed=["ACTIVE"])


def test_phases_are_recorded_once_each_in_order(store: CloudStore) -> None:
    """enter_phase appends to the history; repeating the current phase does not."""
    store.create_cluster(cluster(), [], task("t1"))
    store.enter_phase("t1", "NETWORK", NOW, state="RUNNING")
    store.enter_phase("t1", "NETWORK", NOW, state="RUNNING")
    store.enter_phase("t1", "VIPU_CONTROLLER", NOW, state="RUNNING")
    got = store.get_task("t1")
    assert [p for p, _ in got.phases] == ["NETWORK", "VIPU_CONTROLLER"]
    assert got.detailed_state == "VIPU_CONTROLLER"
    assert [t.id for t in store.unfinished_tasks()] == ["t1"]


def test_a_host_slot_is_held_by_one_server(store: CloudStore) -> None:
    """The primary key refuses a taken slot; deleting the server frees it; a busy host stays."""
    store.add_host(HostRecord("h1", "baremetal", "h100-80", 8, "ib-1", "", True, NOW))
    store.create_cluster(cluster(), [server("sv-1"), server("sv-2", position=2)], task("t1"))
    store.take_slots("sv-1", "h1", range(8))
    with pytest.raises(Conflict):
        store.take_slots("sv-2", "h1", [3])
    with pytest.raises(Conflict, match="runs server sv-1"):
        store.remove_host("h1")
    [usage] = store.list_host_usage()
    assert usage.free == ()
    store.delete_server("sv-1")
    assert store.list_host_usage()[0].free == tuple(range(8))


def test_two_threads_racing_for_one_host_get_it_once(store: CloudStore) -> None:
    """Exactly one of two concurrent take_slots wins."""
    store.add_host(HostRecord("h1", "baremetal", "h100-80", 8, None, "", True, NOW))
    store.create_cluster(cluster(), [server("sv-1"), server("sv-2", position=2)], task("t1"))
    barrier, outcomes = threading.Barrier(2), []

    def take(server_id: str) -> None:
        barrier.wait()
        try:
            store.take_slots(server_id, "h1", range(8))
            outcomes.append("won")
        except Conflict:
            outcomes.append("lost")

    threads = [threading.Thread(target=take, args=(s,)) for s in ("sv-1", "sv-2")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == ["lost", "won"]


def test_attaching_claims_volume_and_cluster_together(store: CloudStore) -> None:
    """A volume task claims both; a busy volume refuses a second claim."""
    store.create_cluster(cluster(status="ACTIVE"), [], task("t0"))
    store.finish_task("t0", state="FINISHED", at=NOW, detailed_state="FINISHED")
    store.create_volume(volume("v1", "data"), task("tv", "v1", "volume_create"))
    store.finish_task("tv", state="FINISHED", at=NOW, detailed_state="FINISHED")
    attach = replace(
        task("ta", "v1", "volume_attach"), resource_type="volume", params={"cluster_id": "cl-1"}
    )
    store.start_volume_task(
        "v1",
        attach,
        allowed=["available"],
        changes={"status": "attaching"},
        cluster=("cl-1", ["ACTIVE"]),
    )
    assert store.get_cluster("cl-1").active_task_id == "ta"
    with pytest.raises(Conflict, match="volume data is busy with task ta"):
        store.start_volume_task("v1", task("tb", "v1"), allowed=["attaching"])
    store.finish_task(
        "ta",
        state="FINISHED",
        at=NOW,
        detailed_state="FINISHED",
        volume_changes={"v1": {"status": "in-use", "cluster_id": "cl-1"}},
    )
    assert store.get_cluster("cl-1").active_task_id is None
    assert store.get_volume("v1").status == "in-use"
    assert store.get_volume("v1").active_task_id is None


def test_a_project_holding_clusters_cannot_be_removed(store: CloudStore) -> None:
    """remove_project refuses while clusters exist; tokens go with the project."""
    store.add_token(TokenRecord("tok1", "acme", "hash", "", NOW))
    store.create_cluster(cluster(), [], task("t1"))
    with pytest.raises(Conflict, match="still holds 1 clusters"):
        store.remove_project("acme", NOW)
    store.delete_cluster("cl-1")
    store.remove_project("acme", NOW)
    assert store.find_token("tok1") is None
