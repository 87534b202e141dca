"""The free-block indexes a snapshot keeps, so placement never scans every slot.

Two views, both immutable and shared between snapshots until they change:

* per IPU-Link domain, a :class:`DomainCells` value: which machines are
  allocated (and to whom) and which machines and IPUs are unavailable;
* per allocation, an :class:`AllocationIndex`: its share of each domain as
  bitmasks (region, IPUs used by partitions, IPUs free to place on) and, for
  every buddy level, the set of domains holding a maximal free block of that
  level (:mod:`vpod.placement.buddy`).

The level sets answer "which domains can take a block of size s, and how
tight is the tightest fit" without looking at domains that cannot.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field

from vpod.domain.catalog import IPUS_PER_MACHINE
from vpod.domain.topology import Pod

from .buddy import MACHINE_TOP_LEVEL, SLOT_TOP_LEVEL, maximal_profile, positions

LevelSets = tuple[frozenset[int], ...]
"""``sets[l]``: the keys (domain indexes) that hold a maximal free block of level ``l``."""

_MACHINE_SLOTS = (1 << IPUS_PER_MACHINE) - 1


def empty_levels(top: int) -> LevelSets:
    return tuple(frozenset() for _ in range(top + 1))


def levels_of(profiles: Iterable[tuple[int, int]], top: int) -> LevelSets:
    """Level sets from ``(key, profile)`` pairs, built in one pass."""
    members: list[list[int]] = [[] for _ in range(top + 1)]
    for key, profile in profiles:
        for level in positions(profile):
            members[level].append(key)
    return tuple(frozenset(keys) for keys in members)


def update_levels(levels: LevelSets, key: int, old_profile: int, new_profile: int) -> LevelSets:
    """``levels`` with ``key`` moved from the levels of ``old_profile`` to ``new_profile``'s."""
    changed = old_profile ^ new_profile
    if not changed:
        return levels
    out = list(levels)
    for level in positions(changed):
        if new_profile >> level & 1:
            out[level] = levels[level] | {key}
        else:
            out[level] = levels[level] - {key}
    return tuple(out)


def machine_slot_bits(machine_bits: int) -> int:
    """Slot positions covered by the machines in ``machine_bits`` (both domain-relative)."""
    slots = 0
    for machine in positions(machine_bits):
        slots |= _MACHINE_SLOTS << (machine * IPUS_PER_MACHINE)
    return slots


@dataclass(frozen=True, slots=True)
class DomainCells:
    """One domain's machines and IPUs as bitmasks relative to the domain.

    ``down_machines`` are machines no new allocation gets: unavailable ones
    and those with an unavailable IPU. ``down_slots`` are IPUs no partition
    gets: unavailable IPUs and every IPU of an unavailable machine.
    """

    all_machines: int
    owners: tuple[str | None, ...]
    allocated: int = 0
    down_machines: int = 0
    down_slots: int = 0

    @property
    def free_machines(self) -> int:
        """Machines a new allocation may take."""
        return self.all_machines & ~self.allocated & ~self.down_machines

    def with_owner(self, machine_bits: int, owner: str | None) -> DomainCells:
        owners = list(self.owners)
        for machine in positions(machine_bits):
            owners[machine] = owner
        allocated = (
            self.allocated | machine_bits if owner is not None else self.allocated & ~machine_bits
        )
        return DomainCells(
            self.all_machines, tuple(owners), allocated, self.down_machines, self.down_slots
        )

    def with_down(self, machine_bits: int, slot_bits: int) -> DomainCells:
        """Cells where exactly ``machine_bits`` are unavailable machines and ``slot_bits`` IPUs."""
        down_slots = slot_bits | machine_slot_bits(machine_bits)
        down_machines = machine_bits
        for machine in range(len(self.owners)):
            if down_slots >> (machine * IPUS_PER_MACHINE) & _MACHINE_SLOTS:
                down_machines |= 1 << machine
        return DomainCells(
            self.all_machines, self.owners, self.allocated, down_machines, down_slots
        )


@dataclass(frozen=True, slots=True)
class AllocationPart:
    """An allocation's share of one domain (slot positions relative to the domain).

    ``held`` counts the partitions with IPUs here (a multi-segment partition
    counts once in each of its domains): the placement policy uses it to
    tell which domain is closest to draining.
    """

    region: int
    used: int
    free: int
    held: int = 0

    @property
    def profile(self) -> int:
        return maximal_profile(self.free, SLOT_TOP_LEVEL)


@dataclass(frozen=True)
class AllocationIndex:
    """An allocation: its machines, its share of each domain, and its free-block level sets.

    ``parts`` is never mutated once built; changes build a new index that
    copies the small dict and the level sets that changed.
    """

    id: str
    machines: tuple[int, ...]
    parts: Mapping[int, AllocationPart]
    levels: LevelSets
    partitions: frozenset[str] = field(default_factory=frozenset)
    widest: int = 0
    """The most IPUs the allocation holds in any one domain (fixed at creation)."""
    occupied: frozenset[int] = field(default_factory=frozenset)
    """The domains where at least one partition holds IPUs."""
    by_holders: Mapping[int, frozenset[int]] = field(default_factory=dict)
    """Partition count (1 or more) -> the domains holding exactly that many partitions."""

    @classmethod
    def create(
        cls,
        allocation_id: str,
        machines: Iterable[int],
        pod: Pod,
        down_slots: Mapping[int, int],
        used: Mapping[int, int] | None = None,
        partitions: frozenset[str] = frozenset(),
        held: Mapping[int, int] | None = None,
    ) -> AllocationIndex:
        """An allocation over ``machines``, ``used`` slots (per domain) taken by ``partitions``.

        ``down_slots`` gives the unavailable IPUs of (at least) the domains
        the machines lie in; ``held`` how many partitions have IPUs in each.
        """
        ordered = tuple(sorted(machines))
        machine_bits: dict[int, int] = {}
        for machine in ordered:
            dom = pod.domain_of_machine(machine)
            bit = 1 << (machine - dom.first_machine)
            machine_bits[dom.index] = machine_bits.get(dom.index, 0) | bit
        parts: dict[int, AllocationPart] = {}
        for domain in sorted(machine_bits):
            region = machine_slot_bits(machine_bits[domain])
            taken = (used or {}).get(domain, 0)
            parts[domain] = AllocationPart(
                region,
                taken,
                region & ~taken & ~down_slots.get(domain, 0),
                (held or {}).get(domain, 0),
            )
        levels = levels_of(((d, part.profile) for d, part in parts.items()), SLOT_TOP_LEVEL)
        widest = max(part.region.bit_count() for part in parts.values())
        grouped: dict[int, set[int]] = {}
        for domain, part in parts.items():
            if part.held:
                grouped.setdefault(part.held, set()).add(domain)
        by_holders = {count: frozenset(grouped[count]) for count in sorted(grouped)}
        occupied = frozenset(d for d, part in parts.items() if part.held)
        return cls(allocation_id, ordered, parts, levels, partitions, widest, occupied, by_holders)

    @property
    def ipus(self) -> int:
        return len(self.machines) * IPUS_PER_MACHINE

    @property
    def domains(self) -> tuple[int, ...]:
        return tuple(sorted(self.parts))

    def free_count(self, domain: int) -> int:
        return self.parts[domain].free.bit_count()

    def holders(self, domain: int) -> int:
        """How many partitions have IPUs in ``domain``."""
        return self.parts[domain].held

    def occupancy(self) -> Iterator[tuple[int, int]]:
        """``(domain, partitions holding IPUs there)`` for every domain that holds any."""
        return ((domain, part.held) for domain, part in self.parts.items() if part.held)

    def draining(self) -> int | None:
        """The occupied domain holding the fewest partitions (the highest on ties), if any.

        See :func:`vpod.placement.policy.draining_domain` for why.
        """
        if not self.by_holders:
            return None
        return max(self.by_holders[min(self.by_holders)])

    def with_parts(
        self, changes: Mapping[int, AllocationPart], partitions: frozenset[str] | None = None
    ) -> AllocationIndex:
        """This allocation with some domain shares replaced (and maybe its partition set)."""
        parts = dict(self.parts)
        levels = self.levels
        occupied = self.occupied
        by_holders: Mapping[int, frozenset[int]] = self.by_holders
        for domain in sorted(changes):
            old, new = parts[domain], changes[domain]
            parts[domain] = new
            levels = update_levels(levels, domain, old.profile, new.profile)
            if old.held != new.held:
                by_holders = _moved(by_holders, domain, old.held, new.held)
                occupied = occupied | {domain} if new.held else occupied - {domain}
        return AllocationIndex(
            self.id,
            self.machines,
            parts,
            levels,
            self.partitions if partitions is None else partitions,
            self.widest,
            occupied,
            by_holders,
        )


def _moved(
    by_holders: Mapping[int, frozenset[int]], domain: int, old: int, new: int
) -> dict[int, frozenset[int]]:
    """``by_holders`` with ``domain`` moved from count ``old`` to count ``new`` (0: absent)."""
    out = dict(by_holders)
    if old:
        remaining = out[old] - {domain}
        if remaining:
            out[old] = remaining
        else:
            del out[old]
    if new:
        out[new] = out.get(new, frozenset()) | {domain}
    return out


def cells_of(
    pod: Pod,
    domain: int,
    owners: tuple[str | None, ...],
    bad_slots: frozenset[int],
    bad_machines: frozenset[int],
) -> DomainCells:
    """The cells of ``domain`` given its machines' owners and the pod's unavailable hardware."""
    dom = pod.domains[domain]
    allocated = sum(1 << i for i, owner in enumerate(owners) if owner is not None)
    machine_bits = sum(1 << (m - dom.first_machine) for m in dom.machines if m in bad_machines)
    slot_bits = sum(1 << (s - dom.first_slot) for s in dom.slots if s in bad_slots)
    cells = DomainCells((1 << dom.num_machines) - 1, owners, allocated)
    return cells.with_down(machine_bits, slot_bits)


def machine_profile(cells: DomainCells) -> int:
    return maximal_profile(cells.free_machines, MACHINE_TOP_LEVEL)


def is_whole_free(cells: DomainCells) -> bool:
    return cells.free_machines == cells.all_machines


def machine_index_of(cells: tuple[DomainCells, ...]) -> tuple[LevelSets, frozenset[int]]:
    """Per machine-block level the domains with a maximal free run; and the wholly free domains."""
    levels = levels_of(((d, machine_profile(c)) for d, c in enumerate(cells)), MACHINE_TOP_LEVEL)
    whole = frozenset(d for d, c in enumerate(cells) if is_whole_free(c))
    return levels, whole
