"""Free aligned blocks of a bitmask, seen the way a buddy allocator sees memory.

A domain's IPUs (at most 64) or machines (at most 16) are bits of one int:
bit ``p`` is position ``p`` in ladder order. A *block* of level ``l`` is the
``2**l`` positions starting at a multiple of ``2**l``. A free block is
*maximal* when its parent block (twice the size, same alignment) is not
wholly free: maximal blocks are what a buddy allocator keeps on its free
lists, and each one is the smallest free buddy block enclosing any block
carved from it. Everything here is a few integer operations per level, so
placement never walks slot by slot.
"""

from __future__ import annotations

from collections.abc import Iterator

SLOT_TOP_LEVEL = 6
"""Blocks of IPUs go up to 2**6 = 64: a whole POD64 domain."""

MACHINE_TOP_LEVEL = 4
"""Blocks of machines go up to 2**4 = 16: a whole POD64 domain."""

_WIDTH = 64
_ALIGNED: tuple[int, ...] = tuple(
    sum(1 << p for p in range(0, _WIDTH, 1 << level)) for level in range(SLOT_TOP_LEVEL + 1)
)
"""``_ALIGNED[l]`` has a bit at every multiple of ``2**l``."""


def level_of(size: int) -> int:
    """The level of a power-of-two ``size`` (1 -> 0, 64 -> 6)."""
    return size.bit_length() - 1


def block_mask(position: int, level: int) -> int:
    """The bits of the block of level ``level`` starting at ``position``."""
    return ((1 << (1 << level)) - 1) << position


def lowest(mask: int) -> int:
    """The lowest set bit of a non-zero ``mask``."""
    return (mask & -mask).bit_length() - 1


def positions(mask: int) -> Iterator[int]:
    """The set bits of ``mask``, ascending."""
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low


def free_blocks(free: int, top: int) -> tuple[int, ...]:
    """``result[l]`` has bit ``p`` set when the block of level ``l`` at ``p`` is wholly free."""
    levels = [free]
    current = free
    for level in range(top):
        if current:
            current &= (current >> (1 << level)) & _ALIGNED[level + 1]
        levels.append(current)
    return tuple(levels)


def maximal_blocks(free: int, top: int) -> tuple[int, ...]:
    """``result[l]`` marks the free blocks of level ``l`` whose parent block is not free."""
    levels = free_blocks(free, top)
    maximal = []
    for level in range(top):
        parent = levels[level + 1]
        maximal.append(levels[level] & ~(parent | (parent << (1 << level))))
    maximal.append(levels[top])
    return tuple(maximal)


def maximal_profile(free: int, top: int) -> int:
    """Bit ``l`` is set when ``free`` holds a maximal free block of level ``l``."""
    profile = 0
    for level, blocks in enumerate(maximal_blocks(free, top)):
        if blocks:
            profile |= 1 << level
    return profile


def best_fit(free: int, level: int, top: int) -> tuple[int, int] | None:
    """The block of ``level`` carved from the smallest maximal free block that holds one.

    Returns ``(position, enclosing_level)``; among equally small enclosing
    blocks the lowest position wins, and the block is the first one inside it
    (the way a buddy allocator splits).
    """
    maximal = maximal_blocks(free, top)
    for enclosing in range(level, top + 1):
        if maximal[enclosing]:
            return lowest(maximal[enclosing]), enclosing
    return None


def first_fit(free: int, level: int, top: int) -> int | None:
    """The lowest position of a free block of ``level``, or ``None``."""
    blocks = free_blocks(free, top)[level] if level <= top else 0
    return lowest(blocks) if blocks else None


def largest(free: int, top: int) -> tuple[int, int] | None:
    """``(position, level)`` of the lowest largest free block, or ``None`` when nothing is free."""
    levels = free_blocks(free, top)
    for level in range(top, -1, -1):
        if levels[level]:
            return lowest(levels[level]), level
    return None
