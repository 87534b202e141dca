"""Which of the blocks that fit the engine takes: the placement policy, in one place.

A policy ranks the domains that can take the request by an ordered list of
criteria, then picks a block inside the winner. The default for partitions,
:data:`BEST_FIT`, is built so that whole IPU-Link domains drain for the
partitions that need one (64 IPUs, or several domains):

1. **Occupied domains first** (``"occupied"``): a partition goes into a
   domain that already holds partitions of its allocation before it opens
   an untouched one, so untouched domains stay whole.
2. **The draining domain last** (``"drain"``): among the occupied domains,
   the one holding the fewest partitions (the highest on ties) takes a new
   partition only when no other can. Nothing new lands in it, so it is the
   next to become whole. The engine does not know how long anything runs;
   fewest partitions is the duration-blind stand-in for "ends soonest".
3. **Lowest domain** (``"index"``) among the rest: a fixed order keeps
   filling the same domains instead of spreading partitions over all.
4. **Best block inside the domain** (``block="best"``): the first block of
   the smallest maximal free block that holds one (buddy best fit), so a
   1-IPU partition fills a hole before it splits a free machine.

Allocations (runs of machines) keep the tightest run, then the lowest
domain (``allocation_order=("fit", "index")``): no trace of allocations was
available to judge a change by.

Replaying the six ITP traces on 25 pod sizes under fifo and backfill, with
jittered copies to average out single lucky decisions, this default beat
the previous one (:data:`TIGHTEST_FIT`: tightest buddy fit anywhere, then
the lowest domain) under both queue disciplines, and first fit under
backfill; under strict fifo every duration-blind policy tried, this one and
first fit included, is within a few per cent of every other, and even a
placer that knows every job's end gains little. ``docs/placement.md`` has
the numbers and the variants that lost (fullest domain, youngest or oldest
domain first, age-aware blocks, tightest fit for large partitions).

:data:`FIRST_FIT` (lowest domain, lowest aligned position) is the naive
baseline. Policies are values, so a simulator can try variants, for example
``Policy("fullest", order=("fit", "fullest", "index"))``, without touching
the engine. Every order ends in ``"index"`` (added if missing), which makes
the choice deterministic.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Collection
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Literal, Protocol, get_args

from .buddy import best_fit, first_fit
from .indexes import LevelSets

Criterion = Literal["fit", "occupied", "drain", "fullest", "emptiest", "index"]
"""How to rank domains, each criterion breaking the ties of the ones before it:

* ``fit``: tightest enclosing maximal free block first (a buddy allocator's best fit);
* ``occupied``: domains that already hold something before untouched ones;
* ``drain``: the *draining* domain (:func:`draining_domain`) after every other one;
* ``fullest`` / ``emptiest``: fewest / most free IPUs (machines, for allocations) first;
* ``index``: lowest domain first (always last: it makes the choice deterministic).
"""

CRITERIA: frozenset[str] = frozenset(get_args(Criterion))


@dataclass(frozen=True)
class Policy:
    """How to rank the domains that fit (``order``) and pick a block inside one (``block``).

    ``allocation_order`` ranks domains for new allocations (runs of machines);
    ``None`` means the same as ``order``.
    """

    name: str
    order: tuple[Criterion, ...] = ("occupied", "drain", "index")
    block: Literal["best", "first"] = "best"
    allocation_order: tuple[Criterion, ...] | None = None

    def __post_init__(self) -> None:
        for criterion in (*self.order, *(self.allocation_order or ())):
            if criterion not in CRITERIA:
                known = ", ".join(sorted(CRITERIA))
                raise ValueError(
                    f"policy {self.name}: unknown criterion {criterion!r}; use one of {known}"
                )
        if self.block not in ("best", "first"):
            raise ValueError(
                f"policy {self.name}: block must be 'best' or 'first', not {self.block!r}"
            )

    @property
    def machine_order(self) -> tuple[Criterion, ...]:
        """The order for allocations: ``allocation_order``, or ``order`` when that is unset."""
        return self.order if self.allocation_order is None else self.allocation_order


BEST_FIT = Policy("best-fit", allocation_order=("fit", "index"))
"""The default: occupied domains first, the draining one last, then the lowest; best block."""

TIGHTEST_FIT = Policy("tightest-fit", order=("fit", "index"))
"""The default until the trace study: tightest buddy fit anywhere, then lowest domain."""

FIRST_FIT = Policy("first-fit", order=("index",), block="first")
"""The naive baseline: lowest domain that fits, lowest aligned position in it."""


class DomainView(Protocol):
    """What a policy may ask about the domains it ranks (an allocation's, or the pod's)."""

    def free_count(self, domain: int) -> int:
        """Free IPUs (machines, for allocations) in ``domain``."""
        ...

    @property
    def occupied(self) -> AbstractSet[int]:
        """The domains holding something: a partition (an allocation, over machines)."""
        ...

    def draining(self) -> int | None:
        """The occupied domain holding the fewest things, the highest on ties; see below."""
        ...


def draining_domain(view: DomainView) -> int | None:
    """The occupied domain likeliest to drain first: fewest holders, then the highest index.

    Nothing about how long jobs run is known, so the count of what a domain
    holds stands in for how soon all of it ends: the fewer partitions, the
    sooner the last one is likely to go. The highest index breaks ties so
    that the domains a fixed order reaches last are the ones left to drain.
    ``None`` when no domain holds anything. (The snapshot keeps an index
    that answers this without a scan: :meth:`AllocationIndex.draining`.)
    """
    return view.draining()


def rank_domains(
    order: tuple[Criterion, ...],
    levels: LevelSets,
    level: int,
    view: DomainView,
    want: int,
) -> list[int]:
    """Up to ``want`` distinct domains that hold a free block of ``level``, best first.

    ``levels[l]`` lists the domains holding a maximal free block of level
    ``l``; a domain can take a block of ``level`` exactly when it appears at
    ``level`` or above, and its tightest fit is the lowest such level.
    """
    order = order if order[-1:] == ("index",) else (*order, "index")
    fitting = frozenset().union(*levels[level:])
    if not fitting:
        return []
    if want == 1:
        return [_first_choice(order, fitting, levels, level, view)]
    draining = view.draining() if "drain" in order else None
    if order[0] == "fit":
        return _rank_fit_first(levels, level, want, _key(order[1:], view, {}, draining))
    fits: dict[int, int] = {}
    for enclosing in range(level, len(levels)):
        for domain in levels[enclosing]:
            fits.setdefault(domain, enclosing)
    return _best(fits, want, _key(order, view, fits, draining))


def _first_choice(
    order: tuple[Criterion, ...],
    candidates: frozenset[int],
    levels: LevelSets,
    level: int,
    view: DomainView,
) -> int:
    """The best domain of ``candidates``: keep the best by each criterion in turn.

    The same answer as the smallest key of :func:`_key`, with set operations
    instead of a key per domain: a pod-wide allocation of a 65,536-IPU pod
    has over a thousand candidate domains for a 1-IPU partition.
    """
    for criterion in order:
        if len(candidates) == 1:
            break
        if criterion == "fit":
            for enclosing in range(level, len(levels)):
                tightest = candidates & levels[enclosing]
                if tightest:
                    candidates = tightest
                    break
        elif criterion == "occupied":
            candidates = candidates & view.occupied or candidates
        elif criterion == "drain":
            candidates = candidates - {view.draining()} or candidates
        elif criterion in ("fullest", "emptiest"):
            sign = 1 if criterion == "fullest" else -1
            counts = {domain: sign * view.free_count(domain) for domain in candidates}
            best = min(counts.values())
            candidates = frozenset(d for d, count in counts.items() if count == best)
        else:
            break
    return min(candidates)


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
    order: tuple[Criterion, ...], view: DomainView, fits: dict[int, int], draining: int | None
) -> Callable[[int], tuple[int, ...]]:
    occupied = view.occupied

    def key(domain: int) -> tuple[int, ...]:
        values = []
        for criterion in order:
            if criterion == "fit":
                values.append(fits[domain])
            elif criterion == "occupied":
                values.append(0 if domain in occupied else 1)
            elif criterion == "drain":
                values.append(1 if domain == draining else 0)
            elif criterion == "fullest":
                values.append(view.free_count(domain))
            elif criterion == "emptiest":
                values.append(-view.free_count(domain))
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
