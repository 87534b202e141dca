"""Placing a partition inside its allocation.

A partition of ``k`` segments takes, from ``k`` distinct IPU-Link domains of
its allocation, one free aligned block of ``size / k`` IPUs each. Routing ids
run through segment 0 first (lowest domain), then segment 1, and so on; GCDs
are consecutive groups of routing ids. The policy (:mod:`.policy`) chooses
among the domains and blocks that fit; the level sets of the allocation's
index say which domains can fit without looking at the others.
"""

from __future__ import annotations

from collections.abc import Iterable

from vpod.domain.errors import InvalidSpec
from vpod.domain.sizes import SEGMENT_SIZES

from .buddy import SLOT_TOP_LEVEL
from .indexes import AllocationIndex
from .policy import Policy, pick_block, rank_domains
from .reasons import block_text, ipus_text, listing, plural
from .requests import PartitionRequest, PartitionShape, partition_shape
from .results import PartitionPlacement, Rejected, Segment
from .snapshot import Snapshot


def place_partition(
    snapshot: Snapshot, request: PartitionRequest, policy: Policy
) -> PartitionPlacement | Rejected:
    """Where ``request`` fits in its allocation, or why it does not."""
    shape = partition_shape(request)
    if snapshot.has_partition(request.id):
        raise InvalidSpec(f"partition {request.id} already exists")
    alloc = snapshot.allocation_index(request.allocation_id)
    if alloc is None:
        return Rejected((f"allocation {request.allocation_id} does not exist",))
    if request.ipus is not None:
        return _place_named(snapshot, request, shape, alloc)
    if alloc.ipus < shape.size:
        return Rejected(
            (
                f"allocation {alloc.id} has only {plural(alloc.ipus, 'IPU')}: a partition of"
                f" {shape.size} needs an allocation of at least {shape.size}",
            )
        )
    domains = rank_domains(policy.order, alloc.levels, shape.segment_level, alloc, shape.segments)
    if len(domains) < shape.segments:
        return Rejected(_why_not(snapshot, shape, alloc))
    segments = []
    for domain in sorted(domains):
        position = pick_block(policy, alloc.parts[domain].free, shape.segment_level, SLOT_TOP_LEVEL)
        first = snapshot.pod.domains[domain].first_slot + position
        segments.append(Segment(domain, tuple(range(first, first + shape.segment_size))))
    return _placement(request, shape, segments)


def _placement(
    request: PartitionRequest, shape: PartitionShape, segments: Iterable[Segment]
) -> PartitionPlacement:
    ordered = tuple(segments)
    slots = tuple(slot for segment in ordered for slot in segment.slots)
    gcds = tuple(
        tuple(range(g * shape.gcd_size, (g + 1) * shape.gcd_size)) for g in range(request.num_gcds)
    )
    return PartitionPlacement(request=request, slots=slots, segments=ordered, gcds=gcds)


def _why_not(snapshot: Snapshot, shape: PartitionShape, alloc: AllocationIndex) -> tuple[str, ...]:
    """Reasons a partition of ``shape`` finds no room in ``alloc`` (which is large enough)."""
    size, k, per = shape.size, shape.segments, shape.segment_size
    widest = alloc.widest
    unavailable = snapshot.unavailable_ipus(alloc.id)
    note = f" ({plural(unavailable, 'IPU')} of it unavailable)" if unavailable else ""
    if k == 1 and widest < per:
        hint = ""
        if widest in SEGMENT_SIZES and size % widest == 0:
            hint = f": ask for {size // widest} IPU-Link segments of {widest} IPUs"
        return (
            f"a partition of {size} IPUs in one segment needs {size} IPUs of one IPU-Link"
            f" domain, but allocation {alloc.id} holds at most {widest} per domain{hint}",
        )
    if k == 1:
        block = snapshot.largest_free_block(alloc.id)
        if block is None:
            return (
                f"no aligned block of {size} free IPUs in allocation {alloc.id}; every IPU of it"
                f" is in a partition{' or unavailable' if unavailable else ''}",
            )
        return (
            f"no aligned block of {size} free IPUs in allocation {alloc.id}; largest free"
            f" block: {block_text(snapshot, block)}{note}",
        )
    if len(alloc.parts) < k:
        return (
            f"allocation {alloc.id} spans {plural(len(alloc.parts), 'IPU-Link domain')}:"
            f" {k} segments need {k} distinct domains",
        )
    holding = sum(1 for part in alloc.parts.values() if part.region.bit_count() >= per)
    if holding < k:
        return (
            f"only {plural(holding, 'IPU-Link domain')} of allocation {alloc.id}"
            f" {'holds' if holding == 1 else 'hold'}"
            f" {per} IPUs: {k} segments of {per} need {k} distinct domains",
        )
    fitting = len(frozenset().union(*alloc.levels[shape.segment_level :]))
    return (
        f"only {plural(fitting, 'IPU-Link domain')} of allocation {alloc.id}"
        f" {'has' if fitting == 1 else 'have'} an aligned block of {per} free IPUs:"
        f" {k} segments need {k} distinct domains{note}",
    )


def _place_named(
    snapshot: Snapshot, request: PartitionRequest, shape: PartitionShape, alloc: AllocationIndex
) -> PartitionPlacement | Rejected:
    """Check the IPUs ``request.ipus`` names and place the partition exactly there."""
    assert request.ipus is not None
    pod = snapshot.pod
    slots = [pod.slot_of(domain, position) for domain, position in request.ipus]
    if len(set(slots)) != len(slots):
        raise InvalidSpec(f"partition {request.id}: an IPU is named twice")
    reasons: list[str] = []
    segments: list[Segment] = []
    seen: dict[int, int] = {}
    per = shape.segment_size
    for index in range(shape.segments):
        named = request.ipus[index * per : (index + 1) * per]
        domains = sorted({domain for domain, _ in named})
        if len(domains) > 1:
            reasons.append(
                f"segment {index} mixes IPU-Link domains {listing([str(d) for d in domains])}:"
                " the IPUs of one segment lie in one domain"
            )
            continue
        domain = domains[0]
        start = named[0][1]
        if [p for _, p in named] != list(range(start, start + per)) or start % per:
            first = start - start % per
            reasons.append(
                f"segment {index} is not {per} consecutive IPUs starting at a multiple of"
                f" {per} in ladder order: name, for example, positions {first}..{first + per - 1}"
                f" of domain {domain} in that order"
            )
        if domain in seen:
            reasons.append(
                f"segments {seen[domain]} and {index} are both in IPU-Link domain {domain}:"
                " each segment needs its own domain"
            )
        seen.setdefault(domain, index)
        segment_slots = slots[index * per : (index + 1) * per]
        segments.append(Segment(domain, tuple(segment_slots)))
    reasons.extend(_unusable(snapshot, alloc, slots))
    if reasons:
        return Rejected(tuple(reasons))
    return _placement(request, shape, segments)


def _unusable(snapshot: Snapshot, alloc: AllocationIndex, slots: list[int]) -> list[str]:
    """Reasons named IPUs cannot be used: outside the allocation, unavailable, or busy."""
    outside, down, busy = [], [], []
    for slot in slots:
        ref = snapshot.pod.ipu(slot)
        part = alloc.parts.get(ref.domain)
        bit = 1 << ref.position
        if part is None or not part.region & bit:
            outside.append(slot)
        elif snapshot.domain_cells(ref.domain).down_slots & bit:
            down.append(slot)
        elif part.used & bit:
            busy.append(slot)
    reasons = []
    if outside:
        reasons.append(
            f"{ipus_text(snapshot, outside)}"
            f" {'is' if len(outside) == 1 else 'are'} outside allocation {alloc.id}"
        )
    if down:
        reasons.append(
            f"{ipus_text(snapshot, down)}"
            f" {'is' if len(down) == 1 else 'are'} unavailable (fault or unreachable agent)"
        )
    if busy:
        holders = _holders(snapshot, alloc, busy)
        reasons.append(
            f"{ipus_text(snapshot, busy)}"
            f" {'is' if len(busy) == 1 else 'are'} already in partition"
            f"{'' if len(holders) == 1 else 's'} {listing(holders)}"
        )
    return reasons


def _holders(snapshot: Snapshot, alloc: AllocationIndex, slots: list[int]) -> list[str]:
    wanted = set(slots)
    return [
        pid
        for pid in sorted(alloc.partitions)
        if wanted.intersection(snapshot.partition(pid).slots)
    ]
