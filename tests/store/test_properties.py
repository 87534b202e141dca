"""Property tests: random histories never break the invariants the database enforces.

A history is a random sequence of allocation adds/removes and partition
reservations/releases on a cluster of 8 machines (32 IPUs), many of them
doomed (taken machines, taken IPUs, IPUs outside the allocation, unknown
ids). A plain-Python model predicts which succeed; after every step the
store must agree with the model exactly, which checks at once that

- no IPU is in two partitions and no machine in two allocations;
- a refused operation leaves nothing behind (no partial rows);
- a release gives back exactly what the reservation took.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from tests.store.factories import add_cluster, record
from vpod.domain.catalog import IPUS_PER_MACHINE
from vpod.domain.entities import Allocation
from vpod.store import AlreadyExists, Conflict, NotFound, Store, StoreError

MACHINES = 8
SLOTS = MACHINES * IPUS_PER_MACHINE
ALLOCATION_IDS = ("a0", "a1", "a2", "a3")
PARTITION_IDS = ("p0", "p1", "p2", "p3", "p4", "p5")
pytestmark = pytest.mark.slow

PROPERTY_SETTINGS = settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@dataclass(frozen=True)
class AddAllocation:
    id: str
    machines: tuple[int, ...]


@dataclass(frozen=True)
class RemoveAllocation:
    id: str


@dataclass(frozen=True)
class Reserve:
    id: str
    allocation_id: str
    slots: tuple[int, ...]


@dataclass(frozen=True)
class Release:
    id: str


Step = AddAllocation | RemoveAllocation | Reserve | Release

random_steps = st.one_of(
    st.builds(
        AddAllocation,
        st.sampled_from(ALLOCATION_IDS),
        st.sampled_from((1, 2, 4)).flatmap(
            lambda n: st.lists(
                st.integers(0, MACHINES - 1), min_size=n, max_size=n, unique=True
            ).map(tuple)
        ),
    ),
    st.builds(RemoveAllocation, st.sampled_from(ALLOCATION_IDS)),
    st.builds(
        Reserve,
        st.sampled_from(PARTITION_IDS),
        st.sampled_from(ALLOCATION_IDS),
        st.builds(
            lambda first, size: tuple((first + i) % SLOTS for i in range(size)),
            st.integers(0, SLOTS - 1),
            st.sampled_from((1, 2, 4, 8)),
        ),
    ),
    st.builds(Release, st.sampled_from(PARTITION_IDS)),
)


@dataclass
class Model:
    """What the store should hold: allocations (id -> machines), partitions (id -> slots)."""

    allocations: dict[str, tuple[int, ...]] = field(default_factory=dict)
    partitions: dict[str, tuple[str, tuple[int, ...]]] = field(default_factory=dict)

    def expected_error(self, step: Step) -> type[StoreError] | None:
        """The error the store must raise for ``step`` (None: it must succeed)."""
        if isinstance(step, AddAllocation):
            if step.id in self.allocations:
                return AlreadyExists
            taken = {m for ms in self.allocations.values() for m in ms}
            return Conflict if taken & set(step.machines) else None
        if isinstance(step, RemoveAllocation):
            if step.id not in self.allocations:
                return NotFound
            in_use = any(a == step.id for a, _ in self.partitions.values())
            return Conflict if in_use else None
        if isinstance(step, Reserve):
            if step.id in self.partitions:
                return AlreadyExists
            if step.allocation_id not in self.allocations:
                return NotFound
            held = set(self.allocations[step.allocation_id])
            taken = {s for _, slots in self.partitions.values() for s in slots}
            outside = any(s // IPUS_PER_MACHINE not in held for s in step.slots)
            return Conflict if outside or taken & set(step.slots) else None
        return None if step.id in self.partitions else NotFound

    def apply(self, step: Step) -> None:
        if isinstance(step, AddAllocation):
            self.allocations[step.id] = tuple(sorted(step.machines))
        elif isinstance(step, RemoveAllocation):
            del self.allocations[step.id]
        elif isinstance(step, Reserve):
            self.partitions[step.id] = (step.allocation_id, step.slots)
        else:
            del self.partitions[step.id]


def steps_for(model: Model) -> st.SearchStrategy[Step]:
    """Random steps, plus reservations aimed inside existing allocations (so many succeed)."""
    if not model.allocations:
        return random_steps
    aimed = st.sampled_from(sorted(model.allocations)).flatmap(
        lambda aid: st.builds(
            Reserve,
            st.sampled_from(PARTITION_IDS),
            st.just(aid),
            _slots_inside(model.allocations[aid]),
        )
    )
    return st.one_of(random_steps, aimed, aimed)


def _slots_inside(machines: tuple[int, ...]) -> st.SearchStrategy[tuple[int, ...]]:
    slots = [m * IPUS_PER_MACHINE + k for m in machines for k in range(IPUS_PER_MACHINE)]
    return st.builds(
        lambda first, size: tuple(slots[(first + i) % len(slots)] for i in range(size)),
        st.integers(0, len(slots) - 1),
        st.sampled_from([n for n in (1, 2, 4, 8) if n <= len(slots)]),
    )


def run(store: Store, step: Step) -> None:
    if isinstance(step, AddAllocation):
        store.add_allocation(Allocation(step.id, "c1", step.machines))
    elif isinstance(step, RemoveAllocation):
        store.remove_allocation(step.id)
    elif isinstance(step, Reserve):
        store.reserve_partition(record(step.id, step.slots, step.allocation_id))
    else:
        store.release_partition(step.id)


def assert_store_matches(store: Store, model: Model) -> None:
    occupancy = store.occupancy("c1")
    assert dict(occupancy.allocations) == model.allocations
    assert {pid: (f.allocation_id, f.slots) for pid, f in occupancy.partitions.items()} == (
        model.partitions
    )
    machines = [m for ms in occupancy.allocations.values() for m in ms]
    assert len(machines) == len(set(machines)), "a machine is in two allocations"
    slots = [s for f in occupancy.partitions.values() for s in f.slots]
    assert len(slots) == len(set(slots)), "an IPU is in two partitions"
    for footprint in occupancy.partitions.values():
        held = set(occupancy.allocations[footprint.allocation_id])
        assert all(s // IPUS_PER_MACHINE in held for s in footprint.slots)


@PROPERTY_SETTINGS
@given(length=st.integers(1, 30), data=st.data())
def test_random_histories_keep_the_invariants(
    fresh_store: Callable[[], Store], length: int, data: st.DataObject
) -> None:
    """Every step succeeds or fails exactly as the model says, and the store matches the model."""
    store = fresh_store()
    add_cluster(store, machines=MACHINES)
    model = Model()
    for _ in range(length):
        step = data.draw(steps_for(model))
        expected = model.expected_error(step)
        event(f"{type(step).__name__}: {expected.__name__ if expected else 'ok'}")
        if expected is None:
            run(store, step)
            model.apply(step)
        else:
            with pytest.raises(expected):
                run(store, step)
        assert_store_matches(store, model)


@PROPERTY_SETTINGS
@given(
    blocks=st.lists(st.integers(0, SLOTS // 4 - 1), min_size=1, max_size=6, unique=True),
    released=st.data(),
)
def test_release_restores_exactly_what_was_taken(
    fresh_store: Callable[[], Store], blocks: list[int], released: st.DataObject
) -> None:
    """Reserve some partitions, release one: occupancy is as if it was never reserved."""
    store = fresh_store()
    add_cluster(store, machines=MACHINES)
    store.add_allocation(Allocation("a0", "c1", tuple(range(MACHINES))))
    victim = released.draw(st.sampled_from(blocks))
    for block in blocks:
        if block != victim:
            store.reserve_partition(record(f"p{block}", range(4 * block, 4 * block + 4), "a0"))
    before = store.occupancy("c1")
    taken = store.reserve_partition(record("victim", range(4 * victim, 4 * victim + 4), "a0"))
    assert store.release_partition("victim") == taken
    assert store.occupancy("c1") == before
