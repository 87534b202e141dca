"""Placing an allocation: a run of whole neighbouring machines, aligned like a partition.

Sizes up to a domain (4, 8, 16, 32, 64 IPUs = 1, 2, 4, 8, 16 machines) take
an aligned run of machines inside one IPU-Link domain. Larger sizes take
whole free domains: ``k`` domains of 64 IPUs for ``k × 64``, and on pods with
smaller domains (a POD16 rack is 4 machines) as many whole domains as the
size needs. Machines that are unavailable, or hold an unavailable IPU, are
never given out.
"""

from __future__ import annotations

from collections.abc import Set as AbstractSet
from functools import cached_property

from vpod.domain.catalog import IPUS_PER_MACHINE
from vpod.domain.errors import InvalidSpec

from .buddy import MACHINE_TOP_LEVEL, level_of
from .policy import Policy, pick_block, rank_domains
from .reasons import listing, machine_range, plural, run_text
from .requests import AllocationRequest, allocation_size
from .results import AllocationPlacement, Rejected
from .snapshot import Snapshot


def place_allocation(
    snapshot: Snapshot, request: AllocationRequest, policy: Policy
) -> AllocationPlacement | Rejected:
    """Which machines ``request`` gets, or why none fit."""
    size = allocation_size(request)
    if snapshot.has_allocation(request.id):
        raise InvalidSpec(f"allocation {request.id} already exists")
    if request.machines is not None:
        return _place_named(snapshot, request)
    pod = snapshot.pod
    if size > pod.num_ipus:
        return Rejected(
            (f"cluster {pod.name} has only {plural(pod.num_ipus, 'IPU')}: ask for at most that",)
        )
    machines = size // IPUS_PER_MACHINE
    if machines <= snapshot.domain_sizes[0]:
        return _place_run(snapshot, request, machines, policy)
    return _place_whole_domains(snapshot, request, size)


def _place_run(
    snapshot: Snapshot, request: AllocationRequest, machines: int, policy: Policy
) -> AllocationPlacement | Rejected:
    level = level_of(machines)
    view = _MachineView(snapshot)
    chosen = rank_domains(policy.machine_order, snapshot.machine_levels, level, view, 1)
    if not chosen:
        name = snapshot.pod.name
        run = snapshot.largest_free_run()
        if run is None:
            return Rejected(
                (f"no free machine in cluster {name}: every machine is allocated or unavailable",)
            )
        wanted = (
            f"no run of {machines} free neighbouring machines aligned to {machines}"
            if machines > 1
            else "no free machine"
        )
        return Rejected((f"{wanted} in cluster {name}; largest: {run_text(snapshot, run)}",))
    domain = chosen[0]
    free = snapshot.domain_cells(domain).free_machines
    first = snapshot.pod.domains[domain].first_machine + pick_block(
        policy, free, level, MACHINE_TOP_LEVEL
    )
    return AllocationPlacement(request, tuple(range(first, first + machines)))


class _MachineView:
    """The pod's domains as an allocation policy ranks them: free machines, allocations held.

    Only policies that ask for ``occupied`` or ``drain`` over machines pay
    for the scan of every domain, once per request.
    """

    def __init__(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot

    def free_count(self, domain: int) -> int:
        return self.snapshot.domain_cells(domain).free_machines.bit_count()

    @cached_property
    def holders(self) -> dict[int, int]:
        """Allocations per domain, for the domains holding any."""
        counts = {}
        for domain in range(len(self.snapshot.pod.domains)):
            cells = self.snapshot.domain_cells(domain)
            if cells.allocated:
                counts[domain] = len({owner for owner in cells.owners if owner is not None})
        return counts

    @property
    def occupied(self) -> AbstractSet[int]:
        return frozenset(self.holders)

    def draining(self) -> int | None:
        if not self.holders:
            return None
        return min(self.holders, key=lambda domain: (self.holders[domain], -domain))


def _place_whole_domains(
    snapshot: Snapshot, request: AllocationRequest, size: int
) -> AllocationPlacement | Rejected:
    """Whole free domains of one size; the lowest-numbered ones, so they tend to be neighbours."""
    pod = snapshot.pod
    reasons = []
    for per_domain in snapshot.domain_sizes:
        ipus = per_domain * IPUS_PER_MACHINE
        if size % ipus:
            continue
        needed = size // ipus
        free = sorted(
            d for d in snapshot.whole_free_domains if pod.domains[d].num_machines == per_domain
        )
        if len(free) >= needed:
            chosen = free[:needed]
            machines = tuple(m for d in chosen for m in pod.domains[d].machines)
            return AllocationPlacement(request, machines)
        reasons.append(
            f"an allocation of {size} IPUs takes {needed} whole IPU-Link domains of {ipus}"
            f" IPUs; only {len(free)} {'is' if len(free) == 1 else 'are'} free in cluster"
            f" {pod.name}"
        )
    if not reasons:
        sizes = listing([str(n * IPUS_PER_MACHINE) for n in snapshot.domain_sizes])
        reasons.append(
            f"an allocation of {size} IPUs does not split into whole IPU-Link domains of"
            f" {sizes} IPUs in cluster {pod.name}"
        )
    return Rejected(tuple(reasons))


def _place_named(snapshot: Snapshot, request: AllocationRequest) -> AllocationPlacement | Rejected:
    """Check the machines ``request.machines`` names: free, available, and an allowed shape."""
    assert request.machines is not None
    pod = snapshot.pod
    machines = tuple(sorted(request.machines))
    for machine in machines:
        if not 0 <= machine < pod.num_machines:
            raise InvalidSpec(
                f"allocation {request.id}: machine {machine} is outside the pod"
                f" (0..{pod.num_machines - 1})"
            )
    reasons = []
    taken = [m for m in machines if snapshot.allocation_of_machine(m) is not None]
    if taken:
        holders = sorted({snapshot.allocation_of_machine(m) or "" for m in taken})
        reasons.append(
            f"{_names(snapshot, taken)} {'is' if len(taken) == 1 else 'are'} already in"
            f" allocation{'' if len(holders) == 1 else 's'} {listing(holders)}"
        )
    down = [m for m in machines if _is_down(snapshot, m) and m not in taken]
    if down:
        reasons.append(
            f"{_names(snapshot, down)} {'is' if len(down) == 1 else 'are'} unavailable"
            " (unreachable agent or a faulty IPU)"
        )
    shape = _shape_problem(snapshot, machines)
    if shape:
        reasons.append(shape)
    if reasons:
        return Rejected(tuple(reasons))
    return AllocationPlacement(request, machines)


def _is_down(snapshot: Snapshot, machine: int) -> bool:
    dom = snapshot.pod.domain_of_machine(machine)
    return bool(snapshot.domain_cells(dom.index).down_machines >> (machine - dom.first_machine) & 1)


def _names(snapshot: Snapshot, machines: list[int]) -> str:
    label = "machine" if len(machines) == 1 else "machines"
    return f"{label} {listing([snapshot.machine_name(m) for m in machines])}"


def _shape_problem(snapshot: Snapshot, machines: tuple[int, ...]) -> str | None:
    """Why ``machines`` is not one aligned run in a domain nor a set of whole domains, if so."""
    pod = snapshot.pod
    by_domain: dict[int, list[int]] = {}
    for machine in machines:
        by_domain.setdefault(pod.domain_of_machine(machine).index, []).append(machine)
    count = len(machines)
    if len(by_domain) == 1:
        ((domain, listed),) = by_domain.items()
        dom = pod.domains[domain]
        first = listed[0]
        aligned = (first - dom.first_machine) % count == 0
        if listed == list(range(first, first + count)) and (aligned or count == dom.num_machines):
            return None
        if count <= dom.num_machines and count & (count - 1) == 0:
            start = dom.first_machine + (first - dom.first_machine) // count * count
            example = machine_range(snapshot, start, count)
            return (
                f"{plural(count, 'machine')} of an allocation must be neighbours aligned to"
                f" {count} in their IPU-Link domain: for example {example}"
            )
    partial = [
        d for d, listed in sorted(by_domain.items()) if len(listed) != pod.domains[d].num_machines
    ]
    if not partial:
        return None
    return (
        f"an allocation across IPU-Link domains takes them whole, but the machines named take"
        f" only part of domain{'' if len(partial) == 1 else 's'}"
        f" {listing([str(d) for d in partial])}"
    )
