"""Bitmask buddy helpers against a slot-by-slot reading of the same mask."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from vpod.placement.buddy import (
    SLOT_TOP_LEVEL,
    best_fit,
    block_mask,
    first_fit,
    free_blocks,
    largest,
    maximal_blocks,
    positions,
)

masks = st.integers(0, (1 << 64) - 1)
levels = st.integers(0, SLOT_TOP_LEVEL)


def block_free(free: int, start: int, level: int) -> bool:
    return all(free >> (start + i) & 1 for i in range(1 << level))


def aligned_starts(free: int, level: int) -> list[int]:
    size = 1 << level
    return [p for p in range(0, 64, size) if block_free(free, p, level)]


@given(masks, levels)
def test_free_blocks_are_the_aligned_all_free_runs(free: int, level: int) -> None:
    """Bit p of level l is set exactly when the 2**l slots from p are free and p is aligned."""
    assert list(positions(free_blocks(free, SLOT_TOP_LEVEL)[level])) == aligned_starts(free, level)


@given(masks, levels)
def test_maximal_blocks_have_a_busy_parent(free: int, level: int) -> None:
    """A free block is maximal when the aligned block twice its size is not wholly free."""
    expected = []
    for start in aligned_starts(free, level):
        if level == SLOT_TOP_LEVEL:
            expected.append(start)
            continue
        parent = start - start % (2 << level)
        if not block_free(free, parent, level + 1):
            expected.append(start)
    assert list(positions(maximal_blocks(free, SLOT_TOP_LEVEL)[level])) == expected


@given(masks, levels)
def test_best_fit_carves_from_the_smallest_enclosing_free_block(free: int, level: int) -> None:
    """Best fit picks a free aligned block whose enclosing maximal block is as small as any."""
    found = best_fit(free, level, SLOT_TOP_LEVEL)
    starts = aligned_starts(free, level)
    if not starts:
        assert found is None
        return
    assert found is not None
    position, enclosing = found
    assert position in starts

    def enclosing_level(start: int) -> int:
        top = level
        while top < SLOT_TOP_LEVEL and block_free(free, start - start % (2 << top), top + 1):
            top += 1
        return top

    assert enclosing == enclosing_level(position)
    assert enclosing == min(enclosing_level(s) for s in starts)


@given(masks, levels)
def test_first_fit_takes_the_lowest_aligned_block(free: int, level: int) -> None:
    starts = aligned_starts(free, level)
    assert first_fit(free, level, SLOT_TOP_LEVEL) == (starts[0] if starts else None)


@given(masks)
def test_largest_is_the_biggest_aligned_free_block(free: int) -> None:
    found = largest(free, SLOT_TOP_LEVEL)
    if free == 0:
        assert found is None
        return
    assert found is not None
    position, level = found
    assert block_free(free, position, level)
    assert level == SLOT_TOP_LEVEL or not aligned_starts(free, level + 1)


def test_block_mask_covers_the_block() -> None:
    assert block_mask(8, 3) == 0xFF << 8
    assert list(positions(block_mask(4, 2))) == [4, 5, 6, 7]
