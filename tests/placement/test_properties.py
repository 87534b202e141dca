"""Property tests: random pods, random create/remove sequences, invariants after every step.

Pods have 1-8 IPU-Link domains of 1-16 machines (powers of two), torus or
mesh, with a few unavailable IPUs and machines. Each step creates or
removes an allocation or a partition (by size or by naming IPUs/machines),
or marks hardware unavailable/available, and checks the engine against the
brute-force model in :mod:`tests.placement.oracle`.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from vpod.domain.catalog import IPUS_PER_MACHINE
from vpod.domain.errors import InvalidSpec
from vpod.domain.sizes import SEGMENT_SIZES, is_allocation_size
from vpod.domain.topology import IldTopology, Pod, build_pod
from vpod.placement import (
    BEST_FIT,
    FIRST_FIT,
    TIGHTEST_FIT,
    AllocationPlacement,
    AllocationRequest,
    PartitionFootprint,
    PartitionPlacement,
    PartitionRequest,
    Policy,
    Rejected,
    place,
    place_many,
)
from vpod.placement.policy import rank_domains

from .oracle import Facts

POLICIES = [
    BEST_FIT,
    FIRST_FIT,
    TIGHTEST_FIT,
    Policy("drain-fit", order=("occupied", "drain", "fit")),
    Policy("fullest", order=("fit", "fullest"), block="first"),
    Policy("emptiest", order=("emptiest", "drain")),
]
"""Policies the machine also places under: any order must find a block whenever one exists."""


@st.composite
def pods(draw: st.DrawFn) -> Pod:
    domains = draw(st.integers(1, 8))
    per_domain = draw(st.sampled_from([1, 2, 4, 8, 16]))
    topology = draw(st.sampled_from(list(IldTopology)))
    return build_pod(domains * per_domain, num_domains=domains, topology=topology)


def check_partition(facts: Facts, request: PartitionRequest, placed: PartitionPlacement) -> None:
    """A placement takes free, available IPUs of its allocation in aligned segments."""
    size = request.size
    free = facts.free_slots(request.allocation_id)
    assert len(placed.slots) == size
    assert len(set(placed.slots)) == size
    assert set(placed.slots) <= free, "IPUs must be free, available and in the allocation"
    per = size // len(placed.segments)
    assert [s for seg in placed.segments for s in seg.slots] == list(placed.slots)
    assert len({seg.domain for seg in placed.segments}) == len(placed.segments)
    for segment in placed.segments:
        dom = facts.pod.domains[segment.domain]
        start = segment.slots[0] - dom.first_slot
        assert segment.slots == tuple(range(segment.slots[0], segment.slots[0] + per))
        assert start % per == 0
        assert segment.slots[-1] < dom.end_slot
    gcd = size // request.num_gcds
    assert placed.gcds == tuple(
        tuple(range(g * gcd, (g + 1) * gcd)) for g in range(request.num_gcds)
    )
    assert gcd <= per


def check_allocation(facts: Facts, size: int, placed: AllocationPlacement) -> None:
    """An allocation takes free, available machines: one aligned run, or whole domains."""
    assert len(placed.machines) * IPUS_PER_MACHINE == size
    assert list(placed.machines) == sorted(set(placed.machines))
    assert facts.machines_allowed(placed.machines)


class PlacementMachine(RuleBasedStateMachine):
    """Drives one snapshot and one brute-force model through the same steps."""

    def __init__(self) -> None:
        super().__init__()
        self.counter = 0

    def new_id(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    @initialize(pod=pods(), data=st.data())
    def start(self, pod: Pod, data: st.DataObject) -> None:
        bad_slots = data.draw(st.sets(st.integers(0, pod.num_ipus - 1), max_size=2))
        bad_machines = data.draw(st.sets(st.integers(0, pod.num_machines - 1), max_size=1))
        self.facts = Facts(pod, bad_slots=bad_slots, bad_machines=bad_machines)
        self.snapshot = self.facts.snapshot()

    # -- allocations ------------------------------------------------------------------

    @rule(data=st.data())
    def create_allocation_by_size(self, data: st.DataObject) -> None:
        sizes = [s for s in range(4, self.facts.pod.num_ipus + 1, 4) if is_allocation_size(s)]
        size = data.draw(st.sampled_from(sizes))
        request = AllocationRequest(self.new_id("a"), size=size)
        result = place(self.snapshot, request)
        assert isinstance(result, AllocationPlacement) == self.facts.allocation_fits(size), result
        if isinstance(result, AllocationPlacement):
            check_allocation(self.facts, size, result)
            self.commit_allocation(result)

    @rule(data=st.data())
    def create_allocation_by_machines(self, data: st.DataObject) -> None:
        pod = self.facts.pod
        count = data.draw(st.sampled_from([1, 2, 4, 8, 16]).filter(lambda c: c <= pod.num_machines))
        first = data.draw(st.integers(0, pod.num_machines - count))
        machines = tuple(range(first, first + count))
        request = AllocationRequest(self.new_id("a"), machines=machines)
        result = place(self.snapshot, request)
        allowed = self.facts.machines_allowed(machines)
        assert isinstance(result, AllocationPlacement) == allowed, result
        if isinstance(result, AllocationPlacement):
            assert result.machines == machines
            self.commit_allocation(result)
        else:
            assert isinstance(result, Rejected)
            assert result.reasons

    def commit_allocation(self, placed: AllocationPlacement) -> None:
        after = self.snapshot.apply(placed)
        assert after.release_allocation(placed.id) == self.snapshot, "release must undo apply"
        self.snapshot = after
        self.facts.allocations[placed.id] = set(placed.machines)

    @precondition(lambda self: self.facts.allocations)
    @rule(data=st.data())
    def remove_allocation(self, data: st.DataObject) -> None:
        aid = data.draw(st.sampled_from(sorted(self.facts.allocations)))
        for pid in [p for p, fp in self.facts.partitions.items() if fp.allocation_id == aid]:
            self.snapshot = self.snapshot.release_partition(pid)
            del self.facts.partitions[pid]
        self.snapshot = self.snapshot.release_allocation(aid)
        del self.facts.allocations[aid]

    # -- partitions -------------------------------------------------------------------

    def draw_shape(self, data: st.DataObject) -> tuple[int, int]:
        """A partition size and a segment count that split validly."""
        domains = len(self.facts.pod.domains)
        sizes = [*SEGMENT_SIZES, *(64 * k for k in range(2, domains + 1))]
        size = data.draw(st.sampled_from(sizes))
        options = [k for k in range(1, domains + 1) if size % k == 0 and size // k in SEGMENT_SIZES]
        return size, data.draw(st.sampled_from(options))

    @precondition(lambda self: self.facts.allocations)
    @rule(data=st.data())
    def create_partition(self, data: st.DataObject) -> None:
        aid = data.draw(st.sampled_from(sorted(self.facts.allocations)))
        size, segments = self.draw_shape(data)
        request = PartitionRequest(
            self.new_id("p"), size, aid, num_segments=segments, num_gcds=segments
        )
        result = place(self.snapshot, request)
        fits = self.facts.partition_fits(aid, size, segments)
        assert isinstance(result, PartitionPlacement) == fits, result
        shuffled = self.facts.snapshot(shuffle=random.Random(data.draw(st.integers(0, 99))))
        assert place(shuffled, request) == result, "same facts, same answer"
        if isinstance(result, PartitionPlacement):
            check_partition(self.facts, request, result)
            self.commit_partition(result)
        else:
            assert isinstance(result, Rejected)
            assert result.reasons

    @precondition(lambda self: self.facts.allocations)
    @rule(data=st.data())
    def create_partition_under_any_policy(self, data: st.DataObject) -> None:
        """Every policy finds a valid place exactly when one exists, whatever it prefers."""
        aid = data.draw(st.sampled_from(sorted(self.facts.allocations)))
        size, segments = self.draw_shape(data)
        policy = data.draw(st.sampled_from(POLICIES))
        request = PartitionRequest(
            self.new_id("p"), size, aid, num_segments=segments, num_gcds=segments
        )
        result = place(self.snapshot, request, policy=policy)
        assert isinstance(result, PartitionPlacement) == self.facts.partition_fits(
            aid, size, segments
        ), result
        if isinstance(result, PartitionPlacement):
            check_partition(self.facts, request, result)
            self.commit_partition(result)

    @precondition(lambda self: self.facts.allocations)
    @rule(data=st.data())
    def first_choice_is_the_head_of_the_ranking(self, data: st.DataObject) -> None:
        """The set-filtering shortcut for one domain agrees with the full key ranking."""
        aid = data.draw(st.sampled_from(sorted(self.facts.allocations)))
        index = self.snapshot.allocation_index(aid)
        assert index is not None
        level = data.draw(st.integers(0, 6))
        policy = data.draw(st.sampled_from(POLICIES))
        ranked = rank_domains(policy.order, index.levels, level, index, len(index.parts))
        assert rank_domains(policy.order, index.levels, level, index, 1) == ranked[:1]

    @precondition(lambda self: self.facts.allocations)
    @rule(data=st.data())
    def create_partition_on_named_ipus(self, data: st.DataObject) -> None:
        pod = self.facts.pod
        aid = data.draw(st.sampled_from(sorted(self.facts.allocations)))
        size, segments = self.draw_shape(data)
        per = size // segments
        ipus: list[tuple[int, int]] = []
        for _ in range(segments):
            domain = data.draw(st.integers(0, len(pod.domains) - 1))
            span = pod.domains[domain].ipus
            if span < per:
                return
            start = data.draw(st.integers(0, span - per))
            if data.draw(st.booleans()):
                start -= start % per
            ipus.extend((domain, start + i) for i in range(per))
        request = PartitionRequest(
            self.new_id("p"),
            size,
            aid,
            num_segments=segments,
            num_gcds=segments,
            ipus=tuple(ipus),
        )
        slots = [pod.slot_of(d, p) for d, p in ipus]
        if len(set(slots)) < len(slots):
            with pytest.raises(InvalidSpec, match="named twice"):
                place(self.snapshot, request)
            return
        result = place(self.snapshot, request)
        groups = [slots[i * per : (i + 1) * per] for i in range(segments)]
        allowed = (
            len({pod.domain_of_slot(g[0]).index for g in groups}) == segments
            and all((g[0] - pod.domain_of_slot(g[0]).first_slot) % per == 0 for g in groups)
            and set(slots) <= self.facts.free_slots(aid)
        )
        assert isinstance(result, PartitionPlacement) == allowed, result
        if isinstance(result, PartitionPlacement):
            assert list(result.slots) == slots
            check_partition(self.facts, request, result)
            self.commit_partition(result)

    def commit_partition(self, placed: PartitionPlacement) -> None:
        after = self.snapshot.apply(placed)
        assert after.release_partition(placed.id) == self.snapshot, "release must undo apply"
        self.snapshot = after
        self.facts.partitions[placed.id] = PartitionFootprint(
            placed.allocation_id, placed.slots, placed.request.num_gcds
        )

    @precondition(lambda self: self.facts.partitions)
    @rule(data=st.data())
    def remove_partition(self, data: st.DataObject) -> None:
        pid = data.draw(st.sampled_from(sorted(self.facts.partitions)))
        self.snapshot = self.snapshot.release_partition(pid)
        del self.facts.partitions[pid]

    @rule()
    def unknown_allocation_is_rejected(self) -> None:
        result = place(self.snapshot, PartitionRequest(self.new_id("p"), 1, "no-such"))
        assert result == Rejected(("allocation no-such does not exist",))

    # -- faults and what-ifs ----------------------------------------------------------

    @rule(data=st.data())
    def toggle_unavailable_slot(self, data: st.DataObject) -> None:
        slot = data.draw(st.integers(0, self.facts.pod.num_ipus - 1))
        if slot in self.facts.bad_slots:
            self.snapshot = self.snapshot.mark_available(slots=[slot])
            self.facts.bad_slots.discard(slot)
        else:
            self.snapshot = self.snapshot.mark_unavailable(slots=[slot])
            self.facts.bad_slots.add(slot)

    @precondition(lambda self: self.facts.allocations)
    @rule(data=st.data())
    def what_if_many(self, data: st.DataObject) -> None:
        aid = data.draw(st.sampled_from(sorted(self.facts.allocations)))
        sizes = data.draw(st.lists(st.sampled_from([1, 2, 4, 8, 16]), min_size=1, max_size=6))
        requests = [PartitionRequest(f"w{i}", s, aid) for i, s in enumerate(sizes)]
        before = self.facts.snapshot()
        results = place_many(self.snapshot, requests)
        assert self.snapshot == before, "place_many must not change the caller's snapshot"
        taken: set[int] = set()
        for result in results:
            if isinstance(result, PartitionPlacement):
                assert taken.isdisjoint(result.slots)
                assert set(result.slots) <= self.facts.free_slots(aid)
                taken |= set(result.slots)

    # -- invariants -------------------------------------------------------------------

    @invariant()
    def incremental_indexes_equal_a_fresh_build(self) -> None:
        assert self.snapshot == self.facts.snapshot()

    @invariant()
    def free_sets_match_the_model(self) -> None:
        assert set(self.snapshot.free_machines()) == self.facts.free_machines()
        for aid in self.facts.allocations:
            assert set(self.snapshot.free_slots(aid)) == self.facts.free_slots(aid)

    @invariant()
    def partition_counts_per_domain_match_the_model(self) -> None:
        """The engine's per-domain partition counts (used by ``drain``) equal a recount."""
        pod = self.facts.pod
        for aid in self.facts.allocations:
            counted: dict[int, int] = {}
            for footprint in self.facts.partitions.values():
                if footprint.allocation_id == aid:
                    for domain in {pod.domain_of_slot(slot).index for slot in footprint.slots}:
                        counted[domain] = counted.get(domain, 0) + 1
            index = self.snapshot.allocation_index(aid)
            assert index is not None
            assert dict(index.occupancy()) == counted

    @invariant()
    def nothing_is_held_twice(self) -> None:
        machines = [m for ms in self.facts.allocations.values() for m in ms]
        assert len(machines) == len(set(machines))
        slots = [s for fp in self.facts.partitions.values() for s in fp.slots]
        assert len(slots) == len(set(slots))


PlacementMachine.TestCase.settings = settings(
    max_examples=200,
    stateful_step_count=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
TestPlacementProperties = PlacementMachine.TestCase
