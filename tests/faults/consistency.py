"""Does the store agree with the agents? The check every crash and stress test ends with.

Two independent views of the pod are compared:

- the store (read directly, as a second controller would): partitions, their
  states and IPU slots, turned into "agent A should hold partition P on
  devices D";
- every agent, asked directly with ``ListConfigurations`` (the controller is
  not in the loop): which partitions it holds on which devices.

:func:`disagreements` returns one sentence per problem; an empty list means
the two views agree: no IPU in two partitions (in the store or on an agent),
no operation left half-done, every ACTIVE partition configured on exactly its
agents and devices, and nothing configured that the store does not know.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass

from vpod.domain.partition_states import ReadyState
from vpod.store import Store
from vpod.store.records import PartitionRecord

from .live import Holding, agent_holdings


@dataclass(frozen=True)
class StoreView:
    """The store's partitions, and per agent what it should hold: {agent: {partition: devices}}."""

    records: dict[str, PartitionRecord]
    expected: dict[str, dict[str, frozenset[int]]]
    problems: list[str]


def read_store(database_url: str) -> StoreView:
    with Store.open(database_url) as store:
        records = store.list_partitions()
        clusters = {c.id: c for c in store.list_clusters()}
    problems: list[str] = []
    owner_of_slot: dict[tuple[str, int], str] = {}
    expected: dict[str, dict[str, set[int]]] = defaultdict(lambda: defaultdict(set))
    for record in records:
        if record.state.busy:
            problems.append(f"store: partition {record.id} is stuck {record.state.label}")
        cluster = clusters[record.cluster_id]
        pod = cluster.pod()
        if len(record.ipus) != record.spec.size:
            problems.append(
                f"store: partition {record.id} of {record.spec.size} IPUs holds {len(record.ipus)}"
            )
        for ipu in record.ipus:
            key = (record.cluster_id, ipu.slot)
            if key in owner_of_slot:
                problems.append(
                    f"store: IPU slot {ipu.slot} is in {owner_of_slot[key]} and {record.id}"
                )
            owner_of_slot[key] = record.id
            ref = pod.ipu(ipu.slot)
            expected[cluster.agent_of(ref.machine)][record.id].add(ref.device_id)
    return StoreView(
        records={r.id: r for r in records},
        expected={a: {p: frozenset(d) for p, d in parts.items()} for a, parts in expected.items()},
        problems=problems,
    )


def read_agents(addresses: Mapping[str, str]) -> dict[str, list[Holding]]:
    """Every agent's holdings, asked directly."""
    return {agent_id: agent_holdings(address)[1] for agent_id, address in addresses.items()}


def compare(view: StoreView, held: Mapping[str, list[Holding]]) -> list[str]:
    problems = list(view.problems)
    for agent_id, holdings in sorted(held.items()):
        wanted = view.expected.get(agent_id, {})
        owner_of_device: dict[int, str] = {}
        for holding in holdings:
            for device in sorted(holding.device_ids):
                if device in owner_of_device:
                    problems.append(
                        f"agent {agent_id}: device {device} is in {owner_of_device[device]}"
                        f" and {holding.partition_id}"
                    )
                owner_of_device[device] = holding.partition_id
            if holding.partition_id not in view.records:
                problems.append(
                    f"agent {agent_id} holds {holding.partition_id}, which the store does not know"
                )
            elif holding.partition_id not in wanted:
                problems.append(
                    f"agent {agent_id} holds {holding.partition_id}, which the store puts elsewhere"
                )
            elif holding.device_ids != wanted[holding.partition_id]:
                problems.append(
                    f"agent {agent_id} holds {holding.partition_id} on devices"
                    f" {sorted(holding.device_ids)}, the store says"
                    f" {sorted(wanted[holding.partition_id])}"
                )
        held_ids = {h.partition_id for h in holdings}
        for partition_id in sorted(set(wanted) - held_ids):
            record = view.records[partition_id]
            if record.state.ready is ReadyState.ACTIVE:
                problems.append(f"agent {agent_id} does not hold ACTIVE partition {partition_id}")
    return problems


def disagreements(database_url: str, addresses: Mapping[str, str]) -> list[str]:
    """Every way the store and the agents disagree (empty: they agree).

    The agents are read before the store: a configuration an agent holds was
    reserved in the store before it was sent, so a store read that follows
    knows it unless it was removed meanwhile (callers check a quiet pod).
    """
    held = read_agents(addresses)
    return compare(read_store(database_url), held)
