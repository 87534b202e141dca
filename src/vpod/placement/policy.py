"""Which of the blocks that fit the engine takes: the placement policy, in one place.

The default, :data:`BEST_FIT`, keeps large aligned blocks free:

1. **Best fit over buddy blocks.** Every candidate block sits inside a
   smallest enclosing *maximal* free block (a block a buddy allocator would
   keep on its free list). Take the candidate whose enclosing block is
   smallest: a 2-IPU job goes into a lone free pair before it splits a free
   machine, and a machine before a free 8. Splitting the smallest block
   that fits leaves the larger ones whole for jobs that need them.
2. **Fullest domain first.** Among domains whose tightest fit is equally
   small, take the one with the fewest free IPUs (machines, for
   allocations). Small jobs pile into domains that are already busy, so
   whole domains stay free for 64-IPU and multi-domain jobs, and a busy
   domain drains back to whole sooner once its jobs end.
3. **Lowest index, lowest position.** The final tie-break makes the choice
   deterministic: same snapshot and request, same answer.

:data:`FIRST_FIT` (lowest domain, lowest aligned position) is the naive
baseline simulators compare against. Policies are values, so a simulator
can try variants (``Policy("best-fit-by-index", domain_order="index")``)
without touching the engine.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Literal

from .buddy import best_fit, first_fit
from .indexes import LevelSets


@dataclass(frozen=True)
class Policy:
    """How to choose among domains and blocks that fit.

    ``fit``: ``"best"`` takes the block whose smallest enclosing free buddy
    block is smallest; ``"first"`` takes the lowest aligned free block.
    ``domain_order`` breaks ties between domains: ``"fullest"`` (fewest free
    IPUs or machines first) or ``"index"`` (lowest domain first).
    """

    name: str
    fit: Literal["best", "first"] = "best"
    domain_order: Literal["fullest", "index"] = "fullest"


BEST_FIT = Policy("best-fit")
"""The default: best fit over buddy blocks, fullest domain first."""

FIRST_FIT = Policy("first-fit", fit="first", domain_order="index")
"""The naive baseline: lowest domain, lowest aligned position."""


def rank_domains(
    policy: Policy,
    levels: LevelSets,
    level: int,
    free_count: Callable[[int], int],
    want: int,
) -> list[int]:
    """Up to ``want`` distinct domains that hold a free block of ``level``, best first.

    ``levels[l]`` lists the domains holding a maximal free block of level
    ``l``; a domain can take a block of ``level`` exactly when it appears at
    ``level`` or above. ``free_count(domain)`` measures how full a domain is.
    """

    def fullest(domain: int) -> tuple[int, int]:
        return free_count(domain), domain

    def by_index(domain: int) -> tuple[int, int]:
        return 0, domain

    key = fullest if policy.domain_order == "fullest" else by_index
    if policy.fit == "first":
        return _best(frozenset().union(*levels[level:]), want, key)
    chosen: list[int] = []
    for enclosing in range(level, len(levels)):
        if len(chosen) == want:
            break
        candidates = levels[enclosing]
        if chosen:
            candidates = candidates.difference(chosen)
        chosen.extend(_best(candidates, want - len(chosen), key))
    return chosen


def _best(
    candidates: Collection[int], want: int, key: Callable[[int], tuple[int, int]]
) -> list[int]:
    if not candidates:
        return []
    if want == 1:
        return [min(candidates, key=key)]
    return heapq.nsmallest(want, candidates, key=key)


def pick_block(policy: Policy, free: int, level: int, top: int) -> int:
    """The position of the block of ``level`` to take in a domain whose free bits are ``free``.

    The caller has checked (through the level sets) that one exists.
    """
    if policy.fit == "first":
        found = first_fit(free, level, top)
    else:
        fit = best_fit(free, level, top)
        found = None if fit is None else fit[0]
    if found is None:
        raise AssertionError("the level sets promised a free block that is not there")
    return found
