"""The queries the store's modules share, on a real database of each kind: optional listing
filters, a project's row by id or name, a parent's children, what keeps a row from being
removed, and the claim of a cloud resource by one task at a time."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

import pytest
from sqlalchemy import insert, select

from tests.store.factories import add_allocation, add_cluster
from vpod.store import Store
from vpod.store import cloud_clusters as clusters
from vpod.store.cloud_records import ClusterRecord, ProjectRecord
from vpod.store.cloud_rows import find_in_project, name_taken
from vpod.store.cloud_schema import cloud_clusters, cloud_volumes
from vpod.store.cloud_store import CloudStore
from vpod.store.dependants import Dependants
from vpod.store.errors import AlreadyExists, Conflict, NotFound, insert_raced
from vpod.store.filters import where_given
from vpod.store.refusals import first_held, id_taken
from vpod.store.row_records import children_of, grouped, record_of, values_of
from vpod.store.schema import agents, allocation_machines, allocations, cluster_agents
from vpod.store.schema import clusters as pod_clusters

NOW = datetime(2026, 5, 1, tzinfo=UTC)


def cluster(cid: str, name: str, status: str = "ACTIVE") -> ClusterRecord:
    return ClusterRecord(
        id=cid, project_id="p1", name=name, flavor="f", kind="virtual_vpod", status=status,
        image="i", server_count=1, ipus=4, gpu_family=None, gpus=0, created_at=NOW,
        updated_at=NOW, metadata={"team": "ml"},
    )  # fmt: skip


@pytest.fixture
def cloud(store: Store) -> CloudStore:
    cloud = CloudStore.of(store)
    cloud.add_project(ProjectRecord("p1", "p1", {}, NOW))
    return cloud


def test_a_filter_applies_only_when_given_and_builds_its_condition_only_then(
    store: Store, cloud: CloudStore
) -> None:
    with store._db.write() as conn:
        clusters.insert_cluster(conn, cluster("c1", "one"))
        clusters.insert_cluster(conn, cluster("c2", "two"))
    since: datetime | None = None  # `created_at >= None` is no SQL: it must not be built
    query = where_given(
        select(cloud_clusters.c.id).order_by(cloud_clusters.c.id),
        (since, lambda: cloud_clusters.c.created_at >= since),
        ("two", lambda: cloud_clusters.c.name == "two"),
    )
    with store._db.read() as conn:
        assert list(conn.scalars(query)) == ["c2"]
        assert list(conn.scalars(where_given(select(cloud_clusters.c.id)))) == ["c1", "c2"]


def test_a_project_row_is_found_by_id_before_a_row_of_that_name(
    store: Store, cloud: CloudStore
) -> None:
    with store._db.write() as conn:
        clusters.insert_cluster(conn, cluster("c1", "c2"))  # named as the other's id
        clusters.insert_cluster(conn, cluster("c2", "second"))
    assert [cloud.find_cluster("p1", ref).id for ref in ("c2", "c1", "second")] == [  # type: ignore[union-attr]
        "c2",
        "c1",
        "c2",
    ]
    assert cloud.find_cluster("p2", "c1") is None
    with store._db.read() as conn:
        named = find_in_project(conn, cloud_clusters, "p1", "c2", ids=False)
        assert named is not None
        assert named.id == "c1"
        taken = name_taken(
            conn,
            [(cloud_volumes, "volume", "p1", "c2"), (cloud_clusters, "cluster", "p1", "c2")],
        )
    assert isinstance(taken, AlreadyExists)
    assert str(taken) == "project p1 has a cluster named c2 already: pick another name"


def test_records_read_and_write_the_columns_their_fields_name(
    store: Store, cloud: CloudStore
) -> None:
    record = cluster("c1", "one")
    with store._db.write() as conn:
        conn.execute(insert(cloud_clusters).values(**values_of(record, status="SUSPENDED")))
    with store._db.read() as conn:
        row = conn.execute(select(cloud_clusters)).one()
    assert record_of(ClusterRecord, row) == cluster("c1", "one", status="SUSPENDED")
    assert record_of(ClusterRecord, row, name="renamed").name == "renamed"


def test_children_come_in_their_parent_and_the_given_order(store: Store) -> None:
    with store._db.write() as conn:
        conn.execute(insert(agents), [agent(a) for a in "xyz"])
        conn.execute(insert(pod_clusters), [pod_cluster(c) for c in ("k1", "k2")])
        conn.execute(
            insert(cluster_agents),
            [
                {"cluster_id": "k2", "position": 0, "agent_id": "z"},
                {"cluster_id": "k1", "position": 0, "agent_id": "y"},
                {"cluster_id": "k1", "position": 1, "agent_id": "x"},
            ],
        )
    c = cluster_agents.c
    with store._db.read() as conn:
        assert children_of(conn, c.cluster_id, c.agent_id, "k1") == ["x", "y"]
        assert children_of(conn, c.cluster_id, c.agent_id, "k1", c.position) == ["y", "x"]
        assert grouped(conn, c.cluster_id, c.agent_id, c.position) == {
            "k1": ["y", "x"],
            "k2": ["z"],
        }


def agent(agent_id: str) -> dict[str, object]:
    return {
        "id": agent_id, "host": "h", "port": 1, "machine_type": "C", "serial": "s",
        "health": "UNKNOWN", "health_reason": "",
    }  # fmt: skip


def pod_cluster(cluster_id: str) -> dict[str, object]:
    return {
        "id": cluster_id, "num_domains": 1, "ild_topology": "A", "gw_topology": "B",
        "machine_type": "C",
    }  # fmt: skip


def test_a_row_with_dependants_is_not_removed_and_the_refusal_names_them(store: Store) -> None:
    with store._db.write() as conn:
        conn.execute(insert(pod_clusters), [pod_cluster("k1")])
        conn.execute(insert(allocations), [{"id": a, "cluster_id": "k1"} for a in ("a2", "a1")])
    held = Dependants("cluster", "allocation", allocations.c.cluster_id)
    with store._db.read() as conn:
        assert held.of(conn, "k1") == ["a1", "a2"]
        with pytest.raises(Conflict, match=r"cluster k1 still has 2 allocations \(a1, a2\)"):
            held.refuse_while_held(conn, "k1")
        assert not held.explain_refusal(conn, "k1").retryable
        raced = held.explain_refusal(conn, "k9")
    assert raced.retryable
    assert "concurrent change" in str(raced)


def test_a_refused_insert_is_explained_by_the_id_taken_or_the_lowest_unit_held(
    store: Store,
) -> None:
    """``id_taken`` names a taken id and nothing else; ``first_held`` finds the lowest of the
    wanted units another row holds, in that cluster only, and not the asker's own."""
    add_cluster(store, "c1", machines=4)
    add_cluster(store, "c2", machines=4)
    add_allocation(store, "al1", (3, 1), "c1")
    add_allocation(store, "al2", (0,), "c2")
    machines = allocation_machines.c
    with store._db.read() as conn:
        taken = id_taken(conn, allocations.c.id, "allocation", "al1")
        assert isinstance(taken, AlreadyExists)
        assert (
            str(taken)
            == "allocation al1 exists already: pick another id, or remove the allocation first"
        )
        assert id_taken(conn, allocations.c.id, "allocation", "al9") is None
        held = first_held(conn, machines.machine, machines.allocation_id, "c1", [0, 3, 1])
        assert held == (1, "al1")
        assert first_held(conn, machines.machine, machines.allocation_id, "c1", [0, 2]) is None
        mine = first_held(conn, machines.machine, machines.allocation_id, "c1", [1], besides="al1")
        assert mine is None
        assert first_held(conn, machines.machine, machines.allocation_id, "c2", [0]) == (0, "al2")
    raced = insert_raced("allocation", "al3")
    assert raced.retryable
    assert str(raced) == "allocation al3 could not be added because of a concurrent change: retry"


@dataclass(frozen=True)
class Claim:
    allowed: tuple[str, ...]
    outcome: str


@pytest.mark.parametrize(
    "claim",
    [
        Claim(("ACTIVE",), "claimed"),
        Claim(("SUSPENDED",), "cluster one is ACTIVE: the operation cannot start from there"),
    ],
)
def test_one_task_at_a_time_claims_a_cluster(store: Store, cloud: CloudStore, claim: Claim) -> None:
    with store._db.write() as conn:
        clusters.insert_cluster(conn, cluster("c1", "one"))
    with store._db.write() as conn:
        if claim.outcome == "claimed":
            clusters.ROWS.claim(conn, "c1", "t1", claim.allowed, {"status": "SUSPENDING"})
        else:
            with pytest.raises(Conflict, match=claim.outcome):
                clusters.ROWS.claim(conn, "c1", "t1", claim.allowed, {})
    if claim.outcome != "claimed":
        return
    claimed = cloud.get_cluster("c1")
    assert (claimed.active_task_id, claimed.status) == ("t1", "SUSPENDING")
    with store._db.write() as conn, pytest.raises(Conflict, match="busy with task t1"):
        clusters.ROWS.claim(conn, "c1", "t2", ("SUSPENDING",), {})
    with store._db.write() as conn:
        clusters.ROWS.unclaim(conn, "c1", "t2")  # not its holder: nothing changes
        assert clusters.ROWS.get(conn, "c1").active_task_id == "t1"
        clusters.ROWS.unclaim(conn, "c1", "t1")
        assert clusters.ROWS.get(conn, "c1").active_task_id is None
    with pytest.raises(ValueError, match="clusters have no column colour"):
        cloud.update_cluster("c1", colour="red")
    with pytest.raises(NotFound, match="cluster c9 does not exist"):
        cloud.get_cluster("c9")
