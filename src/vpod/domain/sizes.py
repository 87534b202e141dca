"""The sizes the system allows, with the messages that explain them.

Sizes are counted in IPUs. A POD64 IPU-Link domain holds 64 IPUs, so sizes
above 64 are whole domains joined through GW-Links (vipu-system.md §3).
"""

from __future__ import annotations

from .errors import InvalidSpec

DOMAIN_MAX_IPUS = 64
"""An IPU-Link domain is at most one rack: 16 machines of 4 IPUs."""

SEGMENT_SIZES: tuple[int, ...] = (1, 2, 4, 8, 16, 64)
"""Sizes a partition may take inside one IPU-Link domain (also the GCD sizes)."""

GCD_SIZES = SEGMENT_SIZES
REPLICA_SIZES: tuple[int, ...] = (1, 2, 4)
ALLOCATION_SMALL_SIZES: tuple[int, ...] = (4, 8, 16, 32, 64)


def _is_multiple_of_domain(size: int) -> bool:
    return size > DOMAIN_MAX_IPUS and size % DOMAIN_MAX_IPUS == 0


def is_partition_size(size: int) -> bool:
    """Sizes 1, 2, 4, 8, 16, 64 and multiples of 64."""
    return size in SEGMENT_SIZES or _is_multiple_of_domain(size)


def is_allocation_size(size: int) -> bool:
    """Sizes 4, 8, 16, 32, 64 and multiples of 64."""
    return size in ALLOCATION_SMALL_SIZES or _is_multiple_of_domain(size)


def check_partition_size(size: int) -> None:
    if not is_partition_size(size):
        raise InvalidSpec(
            f"partition size {size} is not supported: use 1, 2, 4, 8, 16, 64 or a multiple of 64"
        )


def check_allocation_size(size: int) -> None:
    if not is_allocation_size(size):
        raise InvalidSpec(
            f"allocation size {size} is not supported: use 4, 8, 16, 32, 64 or a multiple of 64"
        )


def smallest_partition_size_at_least(ipus: int) -> int:
    """The smallest valid partition size that holds ``ipus`` IPUs (jobs ask for k accelerators)."""
    if ipus < 1:
        raise InvalidSpec(f"a job needs at least 1 IPU, not {ipus}")
    for size in SEGMENT_SIZES:
        if size >= ipus:
            return size
    return -(-ipus // DOMAIN_MAX_IPUS) * DOMAIN_MAX_IPUS


def alignment(size: int) -> int:
    """Alignment of a block of ``size`` IPUs in a domain's ladder order.

    Blocks up to a domain are aligned to their own size (buddy style); larger
    partitions are whole domains.
    """
    return min(size, DOMAIN_MAX_IPUS)
