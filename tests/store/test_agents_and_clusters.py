"""Agents, their health, and clusters of agents in cabling order."""

from __future__ import annotations

import dataclasses

import pytest
from sqlalchemy import text

from tests.store.conftest import MigratedDatabase
from tests.store.factories import add_allocation, add_cluster, agent_ids, at
from vpod.domain.catalog import MachineType
from vpod.domain.entities import Agent, Cluster
from vpod.domain.topology import GwTopology, IldTopology
from vpod.store import AgentHealthState, AlreadyExists, Conflict, NotFound, Store, StoreError


def test_an_agent_comes_back_as_it_was_added(store: Store) -> None:
    """add, get, find and list return the domain value that was stored."""
    agent = Agent("a1", "ipum1.example", 8091, machine_type=MachineType.M2000, serial="S1")
    store.add_agent(agent)
    assert store.get_agent("a1") == agent
    assert store.find_agent("a1") == agent
    assert store.find_agent("nobody") is None
    assert store.list_agents() == [agent]


def test_agents_are_listed_by_id_and_can_be_filtered(store: Store) -> None:
    """Agents come back sorted by id; a list of ids narrows them (unknown ids are ignored)."""
    for agent_id in ("b", "a", "c"):
        store.add_agent(Agent(agent_id, "h", 1))
    assert [a.id for a in store.list_agents()] == ["a", "b", "c"]
    assert [a.id for a in store.list_agents(["c", "a", "zz"])] == ["a", "c"]


def test_a_duplicate_agent_id_is_refused(store: Store) -> None:
    """A second agent with a taken id is AlreadyExists and leaves the first untouched."""
    store.add_agent(Agent("a1", "h", 1))
    with pytest.raises(AlreadyExists, match="agent a1 exists already"):
        store.add_agent(Agent("a1", "other", 2))
    assert store.get_agent("a1").host == "h"


def test_updating_an_agent_replaces_address_and_serial(store: Store) -> None:
    """update_agent replaces host, port and serial; an unknown agent is NotFound."""
    store.add_agent(Agent("a1", "h", 1))
    moved = Agent("a1", "h2", 2, serial="S9")
    store.update_agent(moved)
    assert store.get_agent("a1") == moved
    with pytest.raises(NotFound, match="agent ghost does not exist"):
        store.update_agent(Agent("ghost", "h", 1))


def test_health_starts_unknown_and_records_what_the_caller_says(store: Store) -> None:
    """Health carries state, last heartbeat (the caller's clock) and a reason."""
    store.add_agent(Agent("a1", "h", 1))
    assert store.get_agent_health("a1").state is AgentHealthState.UNKNOWN
    store.set_agent_health("a1", AgentHealthState.REACHABLE, at=at(10))
    down = store.set_agent_health("a1", AgentHealthState.UNREACHABLE, reason="timed out")
    assert down.state is AgentHealthState.UNREACHABLE
    assert down.last_heartbeat == at(10)  # kept: no new heartbeat was given
    assert down.reason == "timed out"
    assert store.list_agent_health() == [down]
    with pytest.raises(NotFound):
        store.set_agent_health("ghost", AgentHealthState.REACHABLE, at=at(1))


def test_removing_an_agent(store: Store) -> None:
    """A removed agent is gone; removing it again is NotFound."""
    store.add_agent(Agent("a1", "h", 1))
    store.remove_agent("a1")
    assert store.list_agents() == []
    with pytest.raises(NotFound):
        store.remove_agent("a1")


def test_an_agent_in_a_cluster_cannot_be_removed(store: Store) -> None:
    """The cluster must go first; the message says so."""
    add_cluster(store, machines=4)
    with pytest.raises(Conflict, match="part of cluster c1: remove the cluster first") as e:
        store.remove_agent("c1-m0")
    assert e.value.retryable is False


def test_a_cluster_keeps_its_agents_in_cabling_order(store: Store) -> None:
    """Agent i drives machine i: the order survives the round trip."""
    ids = agent_ids("c1", 8)
    for agent_id in reversed(ids):
        store.add_agent(Agent(agent_id, "h", 1))
    cluster = Cluster(
        "c1",
        tuple(reversed(ids)),
        num_domains=2,
        ild_topology=IldTopology.MESH,
        gw_topology=GwTopology.SWITCHED,
    )
    store.add_cluster(cluster)
    stored = store.get_cluster("c1")
    assert stored == cluster
    assert stored.agent_ids == tuple(reversed(ids))
    assert store.find_cluster("c1") == cluster
    assert store.find_cluster("c2") is None
    assert store.list_clusters() == [cluster]


def test_a_cluster_of_unregistered_agents_is_refused(store: Store) -> None:
    """A cluster naming unregistered agents is NotFound, listing them; nothing is stored."""
    store.add_agent(Agent("a1", "h", 1))
    with pytest.raises(NotFound, match="agents a2, a3, which are not registered"):
        store.add_cluster(Cluster("c1", ("a1", "a2", "a3", "a1b")[:3]))
    assert store.list_clusters() == []


def test_an_agent_belongs_to_one_cluster_only(store: Store) -> None:
    """The database refuses a second cluster using an agent of the first; nothing is left."""
    first = add_cluster(store, "c1", machines=4)
    store.add_agent(Agent("extra", "h", 1))
    with pytest.raises(Conflict, match=f"agent {first.agent_ids[0]} is already part of cluster c1"):
        store.add_cluster(Cluster("c2", ("extra", first.agent_ids[0])))
    assert [c.id for c in store.list_clusters()] == ["c1"]


def test_a_duplicate_cluster_id_is_refused(store: Store) -> None:
    """A second cluster with a taken id is AlreadyExists; the first keeps its agents."""
    add_cluster(store, "c1", machines=4)
    store.add_agent(Agent("x", "h", 1))
    with pytest.raises(AlreadyExists, match="cluster c1 exists already"):
        store.add_cluster(Cluster("c1", ("x",)))
    assert store.get_cluster("c1").agent_ids == agent_ids("c1", 4)


def test_removing_a_cluster_keeps_its_agents(store: Store) -> None:
    """Agents stay registered and may join another cluster."""
    cluster = add_cluster(store, machines=4)
    store.remove_cluster("c1")
    assert store.list_clusters() == []
    assert [a.id for a in store.list_agents()] == list(cluster.agent_ids)
    store.add_cluster(dataclasses.replace(cluster, id="c2"))
    with pytest.raises(NotFound, match="cluster c1 does not exist"):
        store.remove_cluster("c1")


def test_a_cluster_with_allocations_cannot_be_removed(store: Store) -> None:
    """Removing a cluster refuses while allocations exist, naming them."""
    add_cluster(store, machines=4)
    add_allocation(store, "al1", (0,))
    add_allocation(store, "al2", (1,))
    with pytest.raises(Conflict, match=r"still has 2 allocations \(al1, al2\): remove them") as e:
        store.remove_cluster("c1")
    assert e.value.retryable is False
    assert store.get_cluster("c1").id == "c1"


def test_rows_from_a_newer_vpod_are_reported_not_leaked(
    store: Store, migrated: MigratedDatabase
) -> None:
    """A machine type this version does not know is a StoreError saying why, not a KeyError."""
    store.add_agent(Agent("a1", "h", 1))
    with migrated.engine.begin() as conn:
        conn.execute(text("UPDATE agents SET machine_type = 'BOW3000' WHERE id = 'a1'"))
    with pytest.raises(StoreError, match="written by a newer version"):
        store.get_agent("a1")


def test_device_faults_are_replaced_whole_and_read_by_every_reader(store: Store) -> None:
    """set_agent_faults replaces an agent's faulty IPUs; agent_faults and the agent's health
    report them by device id; an empty mapping clears them."""
    store.add_agent(Agent("a1", "h", 1))
    store.add_agent(Agent("a2", "h", 2))
    assert store.agent_faults() == {}
    assert store.get_agent_health("a1").device_faults == ()
    store.set_agent_faults("a1", {3: "IPU 3 failed: ECC", 0: "link 0 down"})
    assert store.agent_faults() == {"a1": {0: "link 0 down", 3: "IPU 3 failed: ECC"}}
    assert store.get_agent_health("a1").device_faults == (
        (0, "link 0 down"),
        (3, "IPU 3 failed: ECC"),
    )
    store.set_agent_faults("a1", {2: "IPU 2 failed"})
    assert store.agent_faults() == {"a1": {2: "IPU 2 failed"}}
    store.set_agent_faults("a1", {})
    assert store.agent_faults() == {}


def test_faults_of_a_missing_agent_or_device_are_refused(store: Store) -> None:
    """A missing agent is NotFound; a device id outside 0..3 is a caller bug (ValueError)."""
    store.add_agent(Agent("a1", "h", 1))
    with pytest.raises(NotFound, match="agent ghost does not exist"):
        store.set_agent_faults("ghost", {0: "x"})
    with pytest.raises(ValueError, match=r"device ids are 0\.\.3"):
        store.set_agent_faults("a1", {4: "x"})
    assert store.agent_faults() == {}


def test_agents_from_before_revision_0003_have_no_faults(
    store: Store, migrated: MigratedDatabase
) -> None:
    """A row whose device_faults is NULL (written before the column existed) reads as none."""
    store.add_agent(Agent("a1", "h", 1))
    with migrated.engine.begin() as conn:
        conn.execute(text("UPDATE agents SET device_faults = NULL"))
    assert store.get_agent_health("a1").device_faults == ()
    assert store.agent_faults() == {}
