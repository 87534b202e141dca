"""Which of the blocks that fit the engine takes: the placement policy, in one place.

A policy ranks the domains that can take the request by an ordered list of
criteria, then picks a block inside the winner. The default, :data:`BEST_FIT`:

1. **Tightest fit over buddy blocks** (``"fit"``). Every candidate block sits
   inside a smallest enclosing *maximal* free block (one a buddy allocator
   would keep on its free list). Take the domain whose enclosing block is
   smallest: a 2-IPU job fills a lone free pair before it splits a free
   machine, and a machine before a free 8. Splitting the smallest block that
   fits leaves larger ones whole for the jobs that need them.
2. **Lowest domain** (``"index"``) among equally tight fits. A fixed order
   packs small jobs into the low domains, again and again, so the high ones
   drain back to whole domains for 64-IPU and multi-domain jobs.
3. **Best block inside the domain** (``block="best"``): the first block of
   the smallest maximal free block that holds one, lowest position on ties.

Why not "fullest domain first" (``"fullest"``), the intuitive tie-break?
Replaying the ITP traces through the simulator on pods of 128 and 256 IPUs
(fifo queue) it was the worst variant: fullness changes with every start and
end, so successive small jobs scatter over domains that take turns being
fullest, and no domain drains. A fixed order concentrates them. See
``docs/placement.md`` for the numbers.

:data:`FIRST_FIT` (lowest domain, lowest aligned position) is the naive
baseline. Policies are values, so a simulator can try variants, for example
``Policy("fullest", order=("fit", "fullest", "index"))``, without touching
the engine. Every order ends in ``"index"`` (added if missing), which makes
the choice deterministic.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Literal

from .buddy import best_fit, first_fit
from .indexes import LevelSets

Criterion = Literal["fit", "fullest", "emptiest", "index"]
"""``fit``: tightest enclosing free block first; ``fullest``/``emptiest``: fewest/most
free IPUs (machines, for allocations) in the domain first; ``index``: lowest domain first."""


@dataclass(frozen=True)
class Policy:
    """How to rank the domains that fit (``order``) and pick a block inside one (``block``)."""

    name: str
    order: tuple[Criterion, ...] = ("fit", "index")
    block: Literal["best", "first"] = "best"


BEST_FIT = Policy("best-fit")
"""The default: tightest buddy fit, then lowest domain; best block inside it."""

FIRST_FIT = Policy("first-fit", order=("index",), block="first")
"""The naive baseline: lowest domain that fits, lowest aligned position in it."""


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
    ``level`` or above, and its tightest fit is the lowest such level.
    ``free_count(domain)`` measures how full a domain is.
    """
    order = policy.order if policy.order[-1:] == ("index",) else (*policy.order, "index")
    if order[0] == "fit":
        return _rank_fit_first(levels, level, want, _key(order[1:], free_count, {}))
    fits: dict[int, int] = {}
    for enclosing in range(level, len(levels)):
        for domain in levels[enclosing]:
            fits.setdefault(domain, enclosing)
    return _best(fits, want, _key(order, free_count, fits))


def _rank_fit_first(
    levels: LevelSets, level: int, want: int, key: Callable[[int], tuple[int, ...]]
) -> list[int]:
    """Walk the levels upwards: only the tightest level that still has candidates is ranked."""
    chosen: list[int] = []
    for enclosing in range(level, len(levels)):
        if len(chosen) == want:
            break
        candidates = levels[enclosing]
        if chosen:
            candidates = candidates.difference(chosen)
        chosen.extend(_best(candidates, want - len(chosen), key))
    return chosen


def _key(
    order: tuple[Criterion, ...], free_count: Callable[[int], int], fits: dict[int, int]
) -> Callable[[int], tuple[int, ...]]:
    def key(domain: int) -> tuple[int, ...]:
        values = []
        for criterion in order:
            if criterion == "fit":
                values.append(fits[domain])
            elif criterion == "fullest":
                values.append(free_count(domain))
            elif criterion == "emptiest":
                values.append(-free_count(domain))
            else:
                values.append(domain)
        return tuple(values)

    return key


def _best(
    candidates: Collection[int], want: int, key: Callable[[int], tuple[int, ...]]
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
    if policy.block == "first":
        found = first_fit(free, level, top)
    else:
        fit = best_fit(free, level, top)
        found = None if fit is None else fit[0]
    if found is None:
        raise AssertionError("the level sets promised a free block that is not there")
    return found
