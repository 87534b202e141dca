"""A brute-force model of placement facts, independent of the engine's bitmask indexes.

It keeps plain sets (who holds which machine and slot, what is unavailable)
and answers "could this request be placed?" by trying every aligned
position, slot by slot. Property tests compare the engine against it.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import dataclass, field

from vpod.domain.catalog import IPUS_PER_MACHINE
from vpod.domain.topology import Pod
from vpod.placement import PartitionFootprint, Snapshot


@dataclass
class Facts:
    """What holds what in a pod, as plain Python sets and dicts."""

    pod: Pod
    allocations: dict[str, set[int]] = field(default_factory=dict)
    partitions: dict[str, PartitionFootprint] = field(default_factory=dict)
    bad_slots: set[int] = field(default_factory=set)
    bad_machines: set[int] = field(default_factory=set)

    def snapshot(self, shuffle: random.Random | None = None) -> Snapshot:
        """A fresh snapshot of these facts; ``shuffle`` scrambles every insertion order."""
        allocations = [(aid, sorted(ms)) for aid, ms in self.allocations.items()]
        partitions = list(self.partitions.items())
        bad_slots, bad_machines = sorted(self.bad_slots), sorted(self.bad_machines)
        if shuffle is not None:
            for items in (allocations, partitions, bad_slots, bad_machines):
                shuffle.shuffle(items)
            for _, machines in allocations:
                shuffle.shuffle(machines)
        return Snapshot.build(
            self.pod,
            allocations=dict(allocations),
            partitions=dict(partitions),
            unavailable_slots=bad_slots,
            unavailable_machines=bad_machines,
        )

    # -- plain derived sets ----------------------------------------------------------

    def machine_slots(self, machine: int) -> set[int]:
        return set(self.pod.machine_slots(machine))

    def down_slots(self) -> set[int]:
        down = set(self.bad_slots)
        for machine in self.bad_machines:
            down |= self.machine_slots(machine)
        return down

    def down_machines(self) -> set[int]:
        return set(self.bad_machines) | {slot // IPUS_PER_MACHINE for slot in self.bad_slots}

    def used_slots(self) -> set[int]:
        return {slot for fp in self.partitions.values() for slot in fp.slots}

    def free_slots(self, allocation_id: str) -> set[int]:
        region = {s for m in self.allocations[allocation_id] for s in self.machine_slots(m)}
        return region - self.used_slots() - self.down_slots()

    def free_machines(self) -> set[int]:
        allocated = {m for ms in self.allocations.values() for m in ms}
        return set(range(self.pod.num_machines)) - allocated - self.down_machines()

    # -- could it fit? ---------------------------------------------------------------

    def aligned_free_blocks(self, free: set[int], size: int) -> dict[int, list[int]]:
        """Per domain, the first slots of aligned runs of ``size`` slots all in ``free``."""
        found: dict[int, list[int]] = {}
        for dom in self.pod.domains:
            for start in range(0, dom.ipus - size + 1, size):
                first = dom.first_slot + start
                if all(first + i in free for i in range(size)):
                    found.setdefault(dom.index, []).append(first)
        return found

    def partition_fits(self, allocation_id: str, size: int, segments: int) -> bool:
        per = size // segments
        blocks = self.aligned_free_blocks(self.free_slots(allocation_id), per)
        return len(blocks) >= segments

    def allocation_fits(self, size: int) -> bool:
        machines = size // IPUS_PER_MACHINE
        free = self.free_machines()
        biggest = max(dom.num_machines for dom in self.pod.domains)
        if machines <= biggest:
            for dom in self.pod.domains:
                for start in range(0, dom.num_machines - machines + 1, machines):
                    first = dom.first_machine + start
                    if all(first + i in free for i in range(machines)):
                        return True
            return False
        whole = [dom for dom in self.pod.domains if set(dom.machines) <= free]
        return any(
            size % dom.ipus == 0 and sum(d.ipus == dom.ipus for d in whole) >= size // dom.ipus
            for dom in whole
        )

    def machines_allowed(self, machines: Iterable[int]) -> bool:
        """Whether named machines are free, available and one aligned run or whole domains."""
        listed = sorted(machines)
        if not set(listed) <= self.free_machines():
            return False
        domains = {self.pod.domain_of_machine(m).index for m in listed}
        if len(domains) == 1:
            dom = self.pod.domains[domains.pop()]
            first, count = listed[0], len(listed)
            run = listed == list(range(first, first + count))
            aligned = (first - dom.first_machine) % count == 0 or count == dom.num_machines
            return run and aligned
        return all(set(self.pod.domains[d].machines) <= set(listed) for d in domains)
