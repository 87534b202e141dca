"""The inventory version moves with every change to what a controller's inventory view holds
(agents, their keys, clusters, allocations), whoever writes it, and with nothing else: an
agent's health, heartbeats and faults are written every few seconds and must not make every
controller reload the inventory."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from alembic import command
from sqlalchemy import inspect, text

from tests.store.conftest import MigratedDatabase
from tests.store.factories import add_allocation, add_cluster, at, record
from vpod.domain.entities import Agent
from vpod.store import AgentHealthState, Store
from vpod.store.migrate import _config

CHANGES: dict[str, Callable[[Store], object]] = {
    "add an agent": lambda s: s.add_agent(Agent("new", "10.9.0.1", 8091)),
    "move an agent": lambda s: s.update_agent(Agent("c1-m0", "10.9.0.2", 8092)),
    "give an agent a key": lambda s: s.set_agent_key("c1-m1", "10.0.0.2", 8091, "k" * 32, at=at(1)),
    "add a cluster": lambda s: add_cluster(s, "c2", machines=1),
    "add an allocation": lambda s: add_allocation(s, "al2", (2,)),
    "set an allocation's hosts": lambda s: s.set_allocation_hosts("al1", ["127.0.0.1/32"]),
    "remove an allocation": lambda s: s.remove_allocation("al1"),
}
UNCHANGED: dict[str, Callable[[Store], object]] = {
    "heartbeats": lambda s: s.set_agent_heartbeats({"c1-m0": at(5), "c1-m1": at(5)}),
    "health": lambda s: s.set_agent_health("c1-m0", AgentHealthState.UNREACHABLE, reason="x"),
    "faults": lambda s: s.set_agent_faults("c1-m0", {1: "ECC"}),
    "IPUoF facts": lambda s: s.set_ipuof_facts("c1-m0", {"address": "127.0.0.1"}),
    "a partition": lambda s: s.reserve_partition(record("p1", range(4))),
}


def _pod(store: Store) -> None:
    add_cluster(store, "c1", machines=4)
    add_allocation(store, "al1", (0, 1))


@pytest.mark.parametrize("change", list(CHANGES))
def test_every_change_to_the_inventory_moves_it(store: Store, change: str) -> None:
    _pod(store)
    before = store.inventory_version()
    CHANGES[change](store)
    assert store.inventory_version() > before


@pytest.mark.parametrize("write", list(UNCHANGED))
def test_health_heartbeats_faults_and_partitions_leave_it(store: Store, write: str) -> None:
    _pod(store)
    before = store.inventory_version()
    UNCHANGED[write](store)
    assert store.inventory_version() == before


def test_removing_agents_and_clusters_moves_it(store: Store) -> None:
    _pod(store)
    store.remove_allocation("al1")
    before = store.inventory_version()
    store.remove_cluster("c1")
    after_cluster = store.inventory_version()
    store.remove_agent("c1-m3")
    assert before < after_cluster < store.inventory_version()


def test_a_database_emptied_row_by_row_counts_again(
    migrated: MigratedDatabase, store: Store
) -> None:
    """A restore or a wipe may delete the counter's row: the next change writes it anew."""
    with migrated.engine.begin() as conn:
        conn.execute(text("DELETE FROM inventory_version"))
    assert store.inventory_version() == 0
    _pod(store)
    assert store.inventory_version() > 0


def test_the_migration_goes_down_and_up_again(migrated: MigratedDatabase, store: Store) -> None:
    _pod(store)
    with migrated.engine.begin() as conn:
        command.downgrade(_config(conn), "0014_ssh_direct_ports")
        assert "inventory_version" not in inspect(conn).get_table_names()
        add_agent = text(
            "INSERT INTO agents (id, host, port, machine_type, serial, health,"
            " health_reason) VALUES ('down', 'h', 1, 'BOW2000', '', 'UNKNOWN', '')"
        )
        conn.execute(add_agent)  # no trigger is left behind to fail on a missing table
        command.upgrade(_config(conn), "head")
    first = store.inventory_version()
    store.add_agent(Agent("up", "10.9.0.3", 8091))
    assert store.inventory_version() > first
