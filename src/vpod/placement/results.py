"""What the placement engine answers: a placement to commit, or reasons it does not fit.

A placement is a plain value. The controller commits it in one transaction
(the database re-checks that no IPU and no machine is taken twice); a
simulator applies it to a :class:`~vpod.placement.snapshot.Snapshot`.
"""

from __future__ import annotations

from dataclasses import dataclass

from .requests import AllocationRequest, PartitionRequest


@dataclass(frozen=True)
class Segment:
    """The IPUs of one partition segment: consecutive, aligned slots of one IPU-Link domain.

    Slots are in routing order (ascending ladder order). A segment's index in
    :attr:`PartitionPlacement.segments` is its ``ipulink_domain_routing_id``.
    """

    domain: int
    slots: tuple[int, ...]


@dataclass(frozen=True)
class PartitionPlacement:
    """Where a partition goes: routing id ``i`` is the IPU in ``slots[i]``.

    ``segments`` split ``slots`` in order (segment 0 holds routing ids
    ``0..segment_size-1``, and so on). ``gcds[g]`` lists the routing ids of GCD
    ``g``: consecutive groups of equal size, never crossing a segment.
    """

    request: PartitionRequest
    slots: tuple[int, ...]
    segments: tuple[Segment, ...]
    gcds: tuple[tuple[int, ...], ...]

    @property
    def id(self) -> str:
        return self.request.id

    @property
    def allocation_id(self) -> str:
        return self.request.allocation_id

    def gcd_slots(self, gcd: int) -> tuple[int, ...]:
        """The slots of GCD ``gcd`` in routing order."""
        return tuple(self.slots[rid] for rid in self.gcds[gcd])


@dataclass(frozen=True)
class AllocationPlacement:
    """The machines an allocation gets, ascending."""

    request: AllocationRequest
    machines: tuple[int, ...]

    @property
    def id(self) -> str:
        return self.request.id


@dataclass(frozen=True)
class Rejected:
    """The request does not fit now; each reason is a sentence a person can act on."""

    reasons: tuple[str, ...]

    def __str__(self) -> str:
        return "; ".join(self.reasons)


Placement = PartitionPlacement | AllocationPlacement
Request = PartitionRequest | AllocationRequest
