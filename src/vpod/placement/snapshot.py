"""A read-only view of a pod's allocations, partitions and faults, as placement sees it.

The controller builds a :class:`Snapshot` from its store, asks the engine
for a placement and commits that placement in one transaction; a simulator
keeps a snapshot and applies placements to it. A snapshot never changes:
:meth:`Snapshot.apply`, :meth:`Snapshot.release_partition` and friends return
a new snapshot that shares every per-domain and per-allocation structure the
change did not touch, so a change costs about the size of what it touches,
not the size of the pod.

Besides the plain facts (who holds which machine and IPU, what is
unavailable) a snapshot keeps free-block indexes (:mod:`.indexes`): they are
derived from the facts deterministically, so two snapshots with the same
facts compare equal, and releasing what was applied gives back an equal
snapshot.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from vpod.domain.catalog import IPUS_PER_MACHINE
from vpod.domain.errors import DomainError, IllegalTransition, InvalidSpec
from vpod.domain.topology import Pod

from .buddy import (
    MACHINE_TOP_LEVEL,
    SLOT_TOP_LEVEL,
    largest,
    maximal_blocks,
    positions,
)
from .indexes import (
    AllocationIndex,
    AllocationPart,
    DomainCells,
    LevelSets,
    cells_of,
    is_whole_free,
    machine_index_of,
    machine_profile,
    update_levels,
)
from .persistent import ShardedMap
from .results import AllocationPlacement, PartitionPlacement, Placement


class PlacementConflict(DomainError):
    """A placement does not fit the snapshot it is applied to: it was computed on another one."""


@dataclass(frozen=True)
class PartitionFootprint:
    """What an existing partition holds: its allocation and its slots in routing order.

    ``num_gcds`` and ``reconfigurable`` let :func:`~vpod.placement.relocate`
    rebuild the same shape elsewhere.
    """

    allocation_id: str
    slots: tuple[int, ...]
    num_gcds: int = 1
    reconfigurable: bool = False


@dataclass(frozen=True)
class FreeBlock:
    """A free aligned block of IPUs in one domain."""

    domain: int
    slots: range

    @property
    def size(self) -> int:
        return len(self.slots)


@dataclass(frozen=True)
class FreeRun:
    """A free aligned run of whole machines in one domain."""

    domain: int
    machines: range

    @property
    def ipus(self) -> int:
        return len(self.machines) * IPUS_PER_MACHINE


class Snapshot:
    """Allocations, partitions and unavailable hardware of one pod, frozen in time."""

    __slots__ = (
        "_allocations",
        "_cells",
        "_domain_sizes",
        "_machine_levels",
        "_machine_names",
        "_partitions",
        "_unavailable_machines",
        "_unavailable_slots",
        "_whole_free",
        "pod",
    )

    def __init__(
        self,
        pod: Pod,
        cells: tuple[DomainCells, ...],
        allocations: ShardedMap[AllocationIndex],
        partitions: ShardedMap[PartitionFootprint],
        unavailable_slots: frozenset[int],
        unavailable_machines: frozenset[int],
        machine_names: tuple[str, ...],
        machine_index: tuple[LevelSets, frozenset[int]] | None = None,
        domain_sizes: tuple[int, ...] | None = None,
    ) -> None:
        """Use :meth:`build`; this constructor trusts its arguments."""
        self.pod = pod
        self._cells = cells
        self._allocations = allocations
        self._partitions = partitions
        self._unavailable_slots = unavailable_slots
        self._unavailable_machines = unavailable_machines
        self._machine_names = machine_names
        if machine_index is None:
            machine_index = machine_index_of(cells)
        self._machine_levels, self._whole_free = machine_index
        if domain_sizes is None:
            domain_sizes = tuple(sorted({dom.num_machines for dom in pod.domains}, reverse=True))
        self._domain_sizes = domain_sizes

    # -- building -----------------------------------------------------------------

    @classmethod
    def build(
        cls,
        pod: Pod,
        *,
        allocations: Mapping[str, Iterable[int]] | None = None,
        partitions: Mapping[str, PartitionFootprint] | None = None,
        unavailable_slots: Iterable[int] = (),
        unavailable_machines: Iterable[int] = (),
        machine_names: Sequence[str] | None = None,
    ) -> Snapshot:
        """A snapshot of ``pod`` holding ``allocations`` (id -> machine indexes) and ``partitions``.

        ``machine_names`` (one per machine, e.g. agent ids) name machines in
        reasons; the default is ``m<index>``. Raises ``InvalidSpec`` when the
        facts contradict each other (a machine in two allocations, an IPU in
        two partitions, a partition outside its allocation).
        """
        names = tuple(machine_names or (f"m{m}" for m in range(pod.num_machines)))
        if len(names) != pod.num_machines:
            raise InvalidSpec(f"{len(names)} machine names given for {pod.num_machines} machines")
        bad_slots = frozenset(_check_slots(pod, unavailable_slots))
        bad_machines = frozenset(_check_machines(pod, unavailable_machines))
        owners: list[list[str | None]] = [[None] * dom.num_machines for dom in pod.domains]
        machines_of: dict[str, tuple[int, ...]] = {}
        for aid in sorted(allocations or {}):
            machines = tuple(sorted(set(_check_machines(pod, (allocations or {})[aid]))))
            if not machines:
                raise InvalidSpec(f"allocation {aid} holds no machine")
            for machine in machines:
                dom = pod.domain_of_machine(machine)
                holder = owners[dom.index][machine - dom.first_machine]
                if holder is not None:
                    raise InvalidSpec(
                        f"machine {names[machine]} is in two allocations: {holder} and {aid}"
                    )
                owners[dom.index][machine - dom.first_machine] = aid
            machines_of[aid] = machines
        cells = tuple(
            cells_of(pod, dom.index, tuple(owners[dom.index]), bad_slots, bad_machines)
            for dom in pod.domains
        )
        used: dict[str, dict[int, int]] = {aid: {} for aid in machines_of}
        held: dict[str, set[str]] = {aid: set() for aid in machines_of}
        holders: dict[str, dict[int, int]] = {aid: {} for aid in machines_of}
        for pid in sorted(partitions or {}):
            footprint = (partitions or {})[pid]
            if footprint.allocation_id not in machines_of:
                raise InvalidSpec(
                    f"partition {pid} is in allocation {footprint.allocation_id}, which does"
                    " not exist"
                )
            owned = used[footprint.allocation_id]
            touched: set[int] = set()
            for slot in _check_slots(pod, footprint.slots):
                dom = pod.domain_of_slot(slot)
                owner = cells[dom.index].owners[slot // IPUS_PER_MACHINE - dom.first_machine]
                if owner != footprint.allocation_id:
                    raise InvalidSpec(
                        f"partition {pid} holds IPU slot {slot} outside its allocation"
                        f" {footprint.allocation_id}"
                    )
                bit = 1 << (slot - dom.first_slot)
                if owned.get(dom.index, 0) & bit:
                    raise InvalidSpec(f"IPU slot {slot} is in two partitions (one is {pid})")
                owned[dom.index] = owned.get(dom.index, 0) | bit
                touched.add(dom.index)
            held[footprint.allocation_id].add(pid)
            counts = holders[footprint.allocation_id]
            for domain in touched:
                counts[domain] = counts.get(domain, 0) + 1
        down_slots = {dom.index: cells[dom.index].down_slots for dom in pod.domains}
        allocation_map = ShardedMap.from_items(
            (
                aid,
                AllocationIndex.create(
                    aid,
                    machines,
                    pod,
                    down_slots,
                    used[aid],
                    frozenset(held[aid]),
                    holders[aid],
                ),
            )
            for aid, machines in machines_of.items()
        )
        return cls(
            pod,
            cells,
            allocation_map,
            ShardedMap.from_items((partitions or {}).items()),
            bad_slots,
            bad_machines,
            names,
        )

    # -- changes ------------------------------------------------------------------

    def apply(self, placement: Placement) -> Snapshot:
        """This snapshot with what ``placement`` reserves taken.

        Raises :class:`PlacementConflict` when the placement does not fit here.
        """
        if isinstance(placement, AllocationPlacement):
            return self._apply_allocation(placement)
        return self._apply_partition(placement)

    def _apply_partition(self, placement: PartitionPlacement) -> Snapshot:
        pid, aid = placement.id, placement.allocation_id
        if pid in self._partitions:
            raise PlacementConflict(f"partition {pid} already exists")
        alloc = self._allocations.get(aid)
        if alloc is None:
            raise PlacementConflict(f"partition {pid}: allocation {aid} does not exist")
        changes: dict[int, AllocationPart] = {}
        for domain, bits in sorted(self._positions_by_domain(placement.slots).items()):
            part = alloc.parts.get(domain)
            if part is None or part.free & bits != bits:
                raise PlacementConflict(
                    f"partition {pid} wants IPUs of domain {domain} that are not free in"
                    f" allocation {aid}"
                )
            changes[domain] = AllocationPart(
                part.region, part.used | bits, part.free & ~bits, part.held + 1
            )
        footprint = PartitionFootprint(
            aid, placement.slots, placement.request.num_gcds, placement.request.reconfigurable
        )
        return self._evolve(
            allocations=self._allocations.set(
                aid, alloc.with_parts(changes, alloc.partitions | {pid})
            ),
            partitions=self._partitions.set(pid, footprint),
        )

    def _apply_allocation(self, placement: AllocationPlacement) -> Snapshot:
        aid = placement.id
        if aid in self._allocations:
            raise PlacementConflict(f"allocation {aid} already exists")
        machines = _check_machines(self.pod, placement.machines)
        changes: dict[int, DomainCells] = {}
        for domain, bits in sorted(self._machines_by_domain(machines).items()):
            cells = self._cells[domain]
            if cells.free_machines & bits != bits:
                raise PlacementConflict(
                    f"allocation {aid} wants machines of domain {domain} that are not free"
                )
            changes[domain] = cells.with_owner(bits, aid)
        alloc = AllocationIndex.create(
            aid,
            machines,
            self.pod,
            {d: self._cells[d].down_slots for d in changes},
        )
        return self._evolve(cells=changes, allocations=self._allocations.set(aid, alloc))

    def release_partition(self, partition_id: str) -> Snapshot:
        """This snapshot without partition ``partition_id``; its IPUs become free again."""
        footprint = self.partition(partition_id)
        alloc = self._allocations[footprint.allocation_id]
        changes: dict[int, AllocationPart] = {}
        for domain, bits in sorted(self._positions_by_domain(footprint.slots).items()):
            part = alloc.parts[domain]
            used = part.used & ~bits
            free = part.region & ~used & ~self._cells[domain].down_slots
            changes[domain] = AllocationPart(part.region, used, free, part.held - 1)
        return self._evolve(
            allocations=self._allocations.set(
                alloc.id, alloc.with_parts(changes, alloc.partitions - {partition_id})
            ),
            partitions=self._partitions.remove(partition_id),
        )

    def release_allocation(self, allocation_id: str) -> Snapshot:
        """This snapshot without allocation ``allocation_id``, which must hold no partitions."""
        alloc = self._allocation(allocation_id)
        if alloc.partitions:
            held = ", ".join(sorted(alloc.partitions))
            raise IllegalTransition(
                f"allocation {allocation_id} still holds partitions {held}: remove them first"
            )
        changes = {
            domain: self._cells[domain].with_owner(bits, None)
            for domain, bits in self._machines_by_domain(alloc.machines).items()
        }
        return self._evolve(cells=changes, allocations=self._allocations.remove(allocation_id))

    def mark_unavailable(
        self, *, slots: Iterable[int] = (), machines: Iterable[int] = ()
    ) -> Snapshot:
        """This snapshot with more IPUs or machines unavailable (a fault, an unreachable agent)."""
        return self._with_unavailable(
            self._unavailable_slots | frozenset(_check_slots(self.pod, slots)),
            self._unavailable_machines | frozenset(_check_machines(self.pod, machines)),
        )

    def mark_available(
        self, *, slots: Iterable[int] = (), machines: Iterable[int] = ()
    ) -> Snapshot:
        """This snapshot with IPUs or machines available again (repaired, agent back)."""
        return self._with_unavailable(
            self._unavailable_slots - frozenset(slots),
            self._unavailable_machines - frozenset(machines),
        )

    def _with_unavailable(
        self, bad_slots: frozenset[int], bad_machines: frozenset[int]
    ) -> Snapshot:
        touched_slots = bad_slots ^ self._unavailable_slots
        touched_machines = bad_machines ^ self._unavailable_machines
        domains = {self.pod.domain_of_slot(s).index for s in touched_slots}
        domains |= {self.pod.domain_of_machine(m).index for m in touched_machines}
        cells = {
            d: cells_of(self.pod, d, self._cells[d].owners, bad_slots, bad_machines)
            for d in sorted(domains)
        }
        allocations = self._allocations
        for aid in sorted({o for d in domains for o in self._cells[d].owners if o is not None}):
            alloc = allocations[aid]
            changes = {
                d: AllocationPart(
                    alloc.parts[d].region,
                    alloc.parts[d].used,
                    alloc.parts[d].region & ~alloc.parts[d].used & ~cells[d].down_slots,
                    alloc.parts[d].held,
                )
                for d in sorted(domains)
                if d in alloc.parts
            }
            allocations = allocations.set(aid, alloc.with_parts(changes))
        return self._evolve(
            cells=cells,
            allocations=allocations,
            unavailable=(bad_slots, bad_machines),
        )

    def _evolve(
        self,
        *,
        cells: Mapping[int, DomainCells] | None = None,
        allocations: ShardedMap[AllocationIndex] | None = None,
        partitions: ShardedMap[PartitionFootprint] | None = None,
        unavailable: tuple[frozenset[int], frozenset[int]] | None = None,
    ) -> Snapshot:
        new_cells = self._cells
        machine_index = (self._machine_levels, self._whole_free)
        if cells:
            listed = list(self._cells)
            levels, whole = machine_index
            for domain in sorted(cells):
                old, new = self._cells[domain], cells[domain]
                listed[domain] = new
                levels = update_levels(levels, domain, machine_profile(old), machine_profile(new))
                whole = whole | {domain} if is_whole_free(new) else whole - {domain}
            new_cells = tuple(listed)
            machine_index = (levels, whole)
        bad_slots, bad_machines = unavailable or (
            self._unavailable_slots,
            self._unavailable_machines,
        )
        return Snapshot(
            self.pod,
            new_cells,
            self._allocations if allocations is None else allocations,
            self._partitions if partitions is None else partitions,
            bad_slots,
            bad_machines,
            self._machine_names,
            machine_index,
            self._domain_sizes,
        )

    # -- queries ------------------------------------------------------------------

    @property
    def unavailable_slots(self) -> frozenset[int]:
        return self._unavailable_slots

    @property
    def unavailable_machines(self) -> frozenset[int]:
        return self._unavailable_machines

    def machine_name(self, machine: int) -> str:
        return self._machine_names[machine]

    def allocation_ids(self) -> list[str]:
        return self._allocations.keys()

    def has_allocation(self, allocation_id: str) -> bool:
        return allocation_id in self._allocations

    def allocation_machines(self, allocation_id: str) -> tuple[int, ...]:
        return self._allocation(allocation_id).machines

    def allocation_of_machine(self, machine: int) -> str | None:
        """The allocation holding ``machine``, if any."""
        dom = self.pod.domain_of_machine(machine)
        return self._cells[dom.index].owners[machine - dom.first_machine]

    def partition_ids(self) -> list[str]:
        return self._partitions.keys()

    def has_partition(self, partition_id: str) -> bool:
        return partition_id in self._partitions

    def partition(self, partition_id: str) -> PartitionFootprint:
        footprint = self._partitions.get(partition_id)
        if footprint is None:
            raise InvalidSpec(f"partition {partition_id} is not in the snapshot")
        return footprint

    def partitions_of(self, allocation_id: str) -> tuple[str, ...]:
        return tuple(sorted(self._allocation(allocation_id).partitions))

    def free_slots(self, allocation_id: str) -> tuple[int, ...]:
        """Slots of the allocation that are available and in no partition, ascending."""
        alloc = self._allocation(allocation_id)
        return tuple(
            self.pod.domains[d].first_slot + p
            for d in alloc.domains
            for p in positions(alloc.parts[d].free)
        )

    def free_machines(self) -> tuple[int, ...]:
        """Available machines in no allocation, ascending."""
        return tuple(
            dom.first_machine + m
            for dom, cells in zip(self.pod.domains, self._cells, strict=True)
            for m in positions(cells.free_machines)
        )

    def unavailable_ipus(self, allocation_id: str) -> int:
        """How many IPUs of the allocation are unavailable (counted from the few that are)."""
        alloc = self._allocation(allocation_id)
        down = set(self._unavailable_slots)
        for machine in self._unavailable_machines:
            down.update(self.pod.machine_slots(machine))
        return sum(
            1 for slot in down if self.allocation_of_machine(slot // IPUS_PER_MACHINE) == alloc.id
        )

    def largest_free_block(self, allocation_id: str) -> FreeBlock | None:
        """The largest free aligned block of IPUs in the allocation (lowest first on ties)."""
        alloc = self._allocation(allocation_id)
        found = _largest_free(
            alloc.levels,
            SLOT_TOP_LEVEL,
            lambda domain: alloc.parts[domain].free,
            lambda domain: self.pod.domains[domain].first_slot,
        )
        return None if found is None else FreeBlock(*found)

    def largest_free_run(self) -> FreeRun | None:
        """The largest free aligned run of machines in the pod (lowest first on ties)."""
        found = _largest_free(
            self._machine_levels,
            MACHINE_TOP_LEVEL,
            lambda domain: self._cells[domain].free_machines,
            lambda domain: self.pod.domains[domain].first_machine,
        )
        return None if found is None else FreeRun(*found)

    def free_block_counts(self, allocation_id: str) -> dict[int, int]:
        """Number of maximal free aligned blocks per size (a buddy allocator's free lists).

        Many small blocks and no large one is what fragmentation looks like.
        """
        alloc = self._allocation(allocation_id)
        counts = {1 << level: 0 for level in range(SLOT_TOP_LEVEL + 1)}
        for part in alloc.parts.values():
            for level, blocks in enumerate(maximal_blocks(part.free, SLOT_TOP_LEVEL)):
                counts[1 << level] += blocks.bit_count()
        return counts

    # -- index access for the engine (read-only) -------------------------------------

    def allocation_index(self, allocation_id: str) -> AllocationIndex | None:
        return self._allocations.get(allocation_id)

    def domain_cells(self, domain: int) -> DomainCells:
        return self._cells[domain]

    @property
    def machine_levels(self) -> LevelSets:
        """Per machine-block level, the domains holding a maximal free run of that many machines."""
        return self._machine_levels

    @property
    def domain_sizes(self) -> tuple[int, ...]:
        """The distinct numbers of machines per domain in this pod, largest first."""
        return self._domain_sizes

    @property
    def whole_free_domains(self) -> frozenset[int]:
        """Domains whose machines are all free and available."""
        return self._whole_free

    # -- helpers ------------------------------------------------------------------

    def _allocation(self, allocation_id: str) -> AllocationIndex:
        alloc = self._allocations.get(allocation_id)
        if alloc is None:
            raise InvalidSpec(f"allocation {allocation_id} is not in the snapshot")
        return alloc

    def _positions_by_domain(self, slots: Iterable[int]) -> dict[int, int]:
        domain_of_slot = self.pod.domain_of_slot
        out: dict[int, int] = {}
        for slot in _check_slots(self.pod, slots):
            dom = domain_of_slot(slot)
            out[dom.index] = out.get(dom.index, 0) | 1 << (slot - dom.first_slot)
        return out

    def _machines_by_domain(self, machines: Iterable[int]) -> dict[int, int]:
        out: dict[int, int] = {}
        for machine in machines:
            dom = self.pod.domain_of_machine(machine)
            out[dom.index] = out.get(dom.index, 0) | 1 << (machine - dom.first_machine)
        return out

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Snapshot):
            return NotImplemented
        return (
            self.pod == other.pod
            and self._cells == other._cells
            and self._allocations == other._allocations
            and self._partitions == other._partitions
            and self._unavailable_slots == other._unavailable_slots
            and self._unavailable_machines == other._unavailable_machines
            and self._machine_levels == other._machine_levels
            and self._whole_free == other._whole_free
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (
            f"Snapshot(pod={self.pod.name!r}, allocations={len(self._allocations)},"
            f" partitions={len(self._partitions)})"
        )


def _largest_free(
    levels: LevelSets,
    top_level: int,
    free_bits: Callable[[int], int],
    first_unit: Callable[[int], int],
) -> tuple[int, range] | None:
    """The largest free aligned block any domain holds, lowest domain first on ties, as its
    domain and its units (IPU slots or machines): ``levels`` say which domains hold a block of
    each level, ``free_bits`` a domain's free units, ``first_unit`` its first unit's number."""
    for level in range(top_level, -1, -1):
        if levels[level]:
            domain = min(levels[level])
            found = largest(free_bits(domain), top_level)
            assert found is not None, "a level set names a domain with a free block"
            first = first_unit(domain) + found[0]
            return domain, range(first, first + (1 << level))
    return None


def _check_slots(pod: Pod, slots: Iterable[int]) -> list[int]:
    listed = list(slots)
    end = pod.num_ipus
    for slot in listed:
        if not 0 <= slot < end:
            raise InvalidSpec(f"IPU slot {slot} is outside the pod (0..{end - 1})")
    return listed


def _check_machines(pod: Pod, machines: Iterable[int]) -> list[int]:
    listed = list(machines)
    for machine in listed:
        if not 0 <= machine < pod.num_machines:
            raise InvalidSpec(f"machine {machine} is outside the pod (0..{pod.num_machines - 1})")
    return listed
