"""What a caller asks the placement engine for, and the shape rules placement relies on.

Requests arrive already validated by the domain layer (sizes, GCDs, replicas,
segment defaults). Placement still re-checks the few rules its own arithmetic
depends on, because a request that breaks them cannot be placed at all: that is
a caller bug, reported as :class:`~vpod.domain.errors.InvalidSpec`, never as a
``Rejected`` value.
"""

from __future__ import annotations

from dataclasses import dataclass

from vpod.domain.catalog import IPUS_PER_MACHINE
from vpod.domain.errors import InvalidSpec
from vpod.domain.sizes import (
    DOMAIN_MAX_IPUS,
    GCD_SIZES,
    SEGMENT_SIZES,
    check_allocation_size,
    check_partition_size,
)


@dataclass(frozen=True)
class AllocationRequest:
    """A run of whole machines for an allocation: by ``size`` in IPUs, or explicit ``machines``.

    Machines are pod machine indexes (the controller maps agent ids to them).
    When both are given, ``size`` must equal the number of IPUs of ``machines``.
    """

    id: str
    size: int | None = None
    machines: tuple[int, ...] | None = None


@dataclass(frozen=True)
class PartitionRequest:
    """A partition of ``size`` IPUs inside allocation ``allocation_id``.

    ``num_segments`` 0 means the default: one segment up to 64 IPUs, else one
    segment of 64 per IPU-Link domain. ``ipus`` optionally names the IPUs as
    ``(domain, position)`` pairs in routing order (segment 0 first).
    """

    id: str
    size: int
    allocation_id: str
    num_segments: int = 0
    num_gcds: int = 1
    reconfigurable: bool = False
    ipus: tuple[tuple[int, int], ...] | None = None


@dataclass(frozen=True, slots=True)
class PartitionShape:
    """How a partition splits: ``segments`` of ``segment_size`` IPUs, GCDs of ``gcd_size``."""

    size: int
    segments: int
    segment_size: int
    gcd_size: int

    @property
    def segment_level(self) -> int:
        """The segment size as a buddy level (size = 2**level)."""
        return self.segment_size.bit_length() - 1


def default_segments(size: int) -> int:
    """One segment up to a whole domain of 64 IPUs, else one segment of 64 per domain."""
    return 1 if size <= DOMAIN_MAX_IPUS else size // DOMAIN_MAX_IPUS


def partition_shape(request: PartitionRequest) -> PartitionShape:
    """Resolve segments and GCDs of ``request``; raise ``InvalidSpec`` when it cannot exist."""
    check_partition_size(request.size)
    segments = request.num_segments or default_segments(request.size)
    if segments < 1 or request.size % segments:
        raise InvalidSpec(
            f"partition {request.id}: {request.size} IPUs cannot be split into"
            f" {request.num_segments} IPU-Link segments: use a number of segments that divides"
            " the size"
        )
    segment_size = request.size // segments
    if segment_size not in SEGMENT_SIZES:
        raise InvalidSpec(
            f"partition {request.id}: segments of {segment_size} IPUs are not supported: each of"
            f" the {segments} segments must hold 1, 2, 4, 8, 16 or 64 IPUs"
        )
    if request.reconfigurable and segments > 1:
        raise InvalidSpec(
            f"partition {request.id}: a reconfigurable partition lives in one IPU-Link domain,"
            f" not {segments}: ask for at most {DOMAIN_MAX_IPUS} IPUs in one segment"
        )
    if request.num_gcds < 1 or request.size % request.num_gcds:
        raise InvalidSpec(
            f"partition {request.id}: {request.num_gcds} GCDs do not divide {request.size} IPUs"
        )
    gcd_size = request.size // request.num_gcds
    if gcd_size not in GCD_SIZES or gcd_size > segment_size:
        raise InvalidSpec(
            f"partition {request.id}: {request.num_gcds} GCD{'s' if request.num_gcds > 1 else ''}"
            f" of {gcd_size} IPUs: not possible, a GCD holds 1, 2, 4, 8, 16 or 64 IPUs and"
            f" never spans IPU-Link domains (segments of {segment_size}): use num_gcds"
            f" {_gcd_choices(request.size, segment_size)}"
        )
    if request.ipus is not None and len(request.ipus) != request.size:
        raise InvalidSpec(
            f"partition {request.id}: {len(request.ipus)} IPUs were named for a partition of"
            f" {request.size}: name exactly {request.size}"
        )
    return PartitionShape(
        size=request.size, segments=segments, segment_size=segment_size, gcd_size=gcd_size
    )


def _gcd_choices(size: int, segment_size: int) -> str:
    choices = [str(size // g) for g in GCD_SIZES if g <= segment_size and size % g == 0]
    return (
        ", ".join(reversed(choices[1:])) + f" or {choices[0]}" if len(choices) > 1 else choices[0]
    )


def allocation_size(request: AllocationRequest) -> int:
    """The size in IPUs of ``request``; raise ``InvalidSpec`` when it is missing or not allowed."""
    if request.machines is not None:
        if len(set(request.machines)) != len(request.machines):
            raise InvalidSpec(f"allocation {request.id}: a machine is named twice")
        size = len(request.machines) * IPUS_PER_MACHINE
        if request.size is not None and request.size != size:
            raise InvalidSpec(
                f"allocation {request.id}: size {request.size} does not match the"
                f" {len(request.machines)} machines named ({size} IPUs)"
            )
    elif request.size is None:
        raise InvalidSpec(f"allocation {request.id}: give a size or the machines to allocate")
    else:
        size = request.size
    check_allocation_size(size)
    return size
