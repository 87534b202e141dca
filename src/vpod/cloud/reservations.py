"""Reservation plans: terms, prices, hardware pools, monthly charges, coverage. Pure.

A project reserves ``units`` clusters of one flavor for a term (``1y`` or
``3y`` by default, configurable) at a discount, and pays every month of the
term whether it uses them or not. What a reservation holds is hardware of a
*pool*: IPU-Machines for virtual vPODs (a vPOD-16 takes 4), whole
bare-metal GPU servers of one model for GPU bare-metal flavors (1 each).
Other flavors are not reservable: dedicated vPODs would need a Poplar host
and IPU-Machines reserved together, GPU VMs share hypervisors.

Monthly charge (decision): a reservation accrues ``units × price per
unit-month`` for each calendar month (UTC) of its billed span, pro rata by
the minute for a partial month (a month of 30 days has 43,200 minutes, each
worth 1/43,200 of the month). Like on-demand lines, a reserved line's amount
for a period is its running total rounded half up to the cent at the
period's end minus the same at its start, so consecutive periods add up
exactly.

Coverage (decision): in every minute, the owner's billable clusters of a
reserved flavor are covered by its active reservations of that flavor,
oldest cluster first, up to the reserved units; covered units are not billed
per minute (the reservation pays for them), the rest are on-demand.
"""

from __future__ import annotations

import calendar
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from fractions import Fraction

from .billing import CENT, MINUTE, MeterRecord, minute_of
from .flavors import HOURS_PER_MONTH, ClusterKind, Flavor, find_flavor
from .model import errors
from .model.reservations import Plan as Plan
from .pools import IPU_MACHINE_POOL, IPUS_PER_MACHINE, draws, host_pool

MAX_UNITS = 1000
"""The most units one reservation may hold."""


@dataclass(frozen=True)
class Term:
    name: str
    months: int
    discount: Decimal
    """Fraction off the on-demand price (``0.30``: 30 % off)."""


DEFAULT_TERMS_TEXT = "1y:12:0.30,3y:36:0.50"
"""The terms offered unless ``cloud.toml`` says ``reservation_terms``: one year at 30 %
off, three years at 50 % off."""


def parse_terms(text: str, *, source: str = "reservation_terms") -> dict[str, Term]:
    """``NAME:MONTHS:DISCOUNT,...`` as terms; InvalidArgument saying what is wrong."""
    terms: dict[str, Term] = {}
    for part in (p.strip() for p in text.split(",")):
        pieces = part.split(":")
        try:
            name, months, discount = pieces[0], int(pieces[1]), Decimal(pieces[2])
            ok = len(pieces) == 3 and name != "" and 1 <= months <= 120
            ok = ok and Decimal(0) <= discount < Decimal(1)
        except (IndexError, ValueError, ArithmeticError):
            ok = False
        if not ok:
            raise errors.InvalidArgument(
                f"{source}: {part!r} is not a term: write NAME:MONTHS:DISCOUNT, e.g. 1y:12:0.30"
                " (1 to 120 months, a discount from 0 to below 1)"
            )
        terms[name] = Term(name, months, discount)
    return terms


DEFAULT_TERMS: Mapping[str, Term] = parse_terms(DEFAULT_TERMS_TEXT)


def find_term(terms: Mapping[str, Term], name: str) -> Term:
    found = terms.get(name)
    if found is None:
        raise errors.InvalidArgument(
            f"there is no reservation term {name!r}: the terms are {', '.join(terms)}"
        )
    return found


@dataclass(frozen=True)
class Pool:
    """The hardware a reservation of a flavor holds: ``per_unit`` units of pool ``name``."""

    name: str
    per_unit: int
    what: str
    """The pool's units, in words (``IPU-Machines``)."""


def pool_of(flavor: Flavor) -> Pool:
    """The pool a flavor draws from; InvalidArgument if the flavor is not reservable."""
    if flavor.kind is ClusterKind.VIRTUAL_VPOD:
        return Pool(IPU_MACHINE_POOL, flavor.ipus // IPUS_PER_MACHINE, "IPU-Machines")
    if flavor.kind is ClusterKind.GPU_BAREMETAL and flavor.host_model is not None:
        return Pool(host_pool(flavor.host_model), 1, f"bare-metal {flavor.host_model} servers")
    raise errors.InvalidArgument(
        f"{flavor.name} is not reservable: reserve a virtual vPOD (g2a-...) or a GPU bare-metal"
        " flavor (bm2-/bm3-...)"
    )


@dataclass
class PoolView:
    """A pool's hardware now, with reservations applied (see :func:`apply_reservations`)."""

    pool: str
    total: int
    """Hardware units the pool has."""
    free: int
    """Not held by any cluster now."""
    reserved_unused: int = 0
    """Held by reservations, not used by their owners' clusters now."""
    own_unused: dict[tuple[str, str], int] = field(default_factory=dict)
    """(project, flavor) -> reserved clusters (or servers) it can still create."""

    @property
    def on_demand_free(self) -> int:
        """What anyone may take: free units less those reserved and unused."""
        return max(0, self.free - self.reserved_unused)


def apply_reservations(
    views: Mapping[str, PoolView],
    using: Mapping[tuple[str, str], int],
    holding: Iterable[tuple[str, str, int]],
) -> None:
    """Fill ``views`` from the units (project, flavor) clusters use now and the active
    reservations ``(project, flavor, units)``."""
    reserved: dict[tuple[str, str], int] = defaultdict(int)
    for project_id, flavor_name, units in holding:
        reserved[(project_id, flavor_name)] += units
    for (project_id, flavor_name), units in reserved.items():
        pool = pool_of(find_flavor(flavor_name))
        unused = max(0, units - using.get((project_id, flavor_name), 0))
        views[pool.name].reserved_unused += unused * pool.per_unit
        views[pool.name].own_unused[(project_id, flavor_name)] = unused


def capacity_for(project_id: str, flavor: Flavor, fits: int, views: Mapping[str, PoolView]) -> int:
    """What the catalog shows ``project_id`` for ``flavor``, ``fits`` being what placement
    alone would allow: its unused reserved units plus on-demand capacity nobody reserved, in
    every pool the flavor draws from."""
    on_demand = fits
    for pool, units in draws(flavor, 1).items():
        if units > 0:
            on_demand = min(on_demand, views[pool].on_demand_free // units)
    if not reservable(flavor):
        return on_demand
    return on_demand + views[pool_of(flavor).name].own_unused.get((project_id, flavor.name), 0)


def creation_refusal(
    project_id: str,
    flavor: Flavor,
    count: int,
    views: Mapping[str, PoolView],
    *,
    taking: Mapping[str, int] | None = None,
) -> str | None:
    """Why ``count`` clusters (vPODs) or servers (GPU) of ``flavor`` cannot be created (or
    resumed) for ``project_id`` now, or None. Every flavor kind answers here: what a project's
    own unused reservations of the flavor cover is taken from them, the rest must be free and
    not reserved by anyone, in each pool the flavor draws from (``taking``: the units it
    takes when that is not a creation's, e.g. a resume's)."""
    mine = 0
    if reservable(flavor):
        mine = views[pool_of(flavor).name].own_unused.get((project_id, flavor.name), 0)
    covered = min(mine, count)
    for pool, need in (draws(flavor, count) if taking is None else taking).items():
        view = views[pool]
        if reservable(flavor) and pool == pool_of(flavor).name:
            need -= covered * pool_of(flavor).per_unit
        if need <= view.on_demand_free:
            continue
        what = "IPU-Machines" if pool == IPU_MACHINE_POOL else f"{pool.split(':', 1)[1]} hosts"
        yours = f" beyond your reservations ({mine} unused)" if reservable(flavor) else ""
        return (
            f"no capacity for {flavor.name} now: {need} {what} are needed{yours} and"
            f" {view.on_demand_free} are free and not reserved ({view.free} free,"
            f" {view.reserved_unused} of them reserved); reserve capacity"
            " (`vpod reservation create`) or try later"
        )
    return None


def purchase_refusal(flavor: Flavor, units: int, view: PoolView) -> str | None:
    """Why ``units`` of ``flavor`` cannot be reserved now, with the numbers, or None."""
    pool = pool_of(flavor)
    need = units * pool.per_unit
    if need <= view.on_demand_free:
        return None
    return (
        f"cannot reserve {units} × {flavor.name}: that needs {need} {pool.what}; the"
        f" cloud has {view.total}, {view.total - view.free} are in use and"
        f" {view.reserved_unused} of the {view.free} free ones are reserved already,"
        f" so {view.on_demand_free} can be reserved: reserve fewer, or later"
    )


def reservable(flavor: Flavor) -> bool:
    return flavor.kind is ClusterKind.VIRTUAL_VPOD or flavor.kind is ClusterKind.GPU_BAREMETAL


def price_per_unit_month(flavor: Flavor, term: Term) -> Decimal:
    """A reserved unit's monthly price: 730 on-demand hours less the term's discount."""
    return (flavor.price_per_hour * HOURS_PER_MONTH * (1 - term.discount)).quantize(CENT)


def add_months(moment: datetime, months: int) -> datetime:
    """``moment`` plus calendar months (the day clamped to the month's last)."""
    index = moment.month - 1 + months
    year, month = moment.year + index // 12, index % 12 + 1
    day = min(moment.day, calendar.monthrange(year, month)[1])
    return moment.replace(year=year, month=month, day=day)


def held_minutes(plan: Plan) -> tuple[int, int]:
    """The minutes the plan holds capacity: from its start's to its hold's end's."""
    return minute_of(plan.starts_at), minute_of(plan.held_until)


def cancellation_end(plan: Plan, now: datetime) -> datetime:
    """Policy: a cancelled reservation is billed to the end of the current calendar month
    (UTC) and no further; its capacity is released at once."""
    month_start = now.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    return min(plan.ends_at, add_months(month_start, 1))


def _month_start(minute: int) -> datetime:
    moment = datetime(1970, 1, 1, tzinfo=UTC) + minute * MINUTE
    return moment.replace(day=1, hour=0, minute=0, second=0, microsecond=0)


def accrued(plan: Plan, until_minute: int) -> Fraction:
    """The exact charge of ``plan`` for its minutes before ``until_minute``."""
    begin = minute_of(plan.starts_at)
    stop = min(minute_of(plan.billed_end), until_minute)
    total = Fraction(0)
    monthly = Fraction(plan.price_per_unit_month) * plan.units
    cursor = begin
    while cursor < stop:
        month = _month_start(cursor)
        following = add_months(month, 1)
        month_minutes = int((following - month) / timedelta(minutes=1))
        end = min(stop, minute_of(following))
        total += monthly * (end - cursor) / month_minutes
        cursor = end
    return total


def cents(exact: Fraction) -> Decimal:
    """Rounded half up to the cent (the billing module's rounding rule)."""
    whole, part = divmod(exact * 100, 1)
    return Decimal(int(whole) + (1 if part >= Fraction(1, 2) else 0)) / 100


def reserved_amount(plan: Plan, first: int, last: int) -> Decimal:
    """The reservation's charge for minutes ``[first, last)`` (telescoping cents)."""
    return (cents(accrued(plan, last)) - cents(accrued(plan, first))).quantize(CENT)


@dataclass(frozen=True)
class Coverage:
    records: list[MeterRecord]
    """The metering records with covered units taken out of the clusters' quantities."""
    used_unit_minutes: dict[str, int]
    """Per reservation: clusters' unit-minutes it covered within the period asked."""


def cover(records: Sequence[MeterRecord], plans: Iterable[Plan], first: int, last: int) -> Coverage:
    """Apply the coverage rule to one project's records (see the module docstring)."""
    by_flavor: dict[str, list[Plan]] = defaultdict(list)
    for plan in plans:
        by_flavor[plan.flavor].append(plan)
    used: dict[str, int] = {plan.id: 0 for group in by_flavor.values() for plan in group}
    untouched = [r for r in records if r.resource_type != "cluster" or r.item not in by_flavor]
    out = list(untouched)
    for flavor, group in by_flavor.items():
        group.sort(key=lambda p: (p.starts_at, p.id))
        histories: dict[str, list[MeterRecord]] = defaultdict(list)
        for record in records:
            if record.resource_type == "cluster" and record.item == flavor:
                histories[record.resource_id].append(record)
        for history in histories.values():
            history.sort(key=lambda r: r.time)
        out.extend(_cover_flavor(histories, group, first, last, used))
    return Coverage(out, used)


def _cover_flavor(
    histories: Mapping[str, list[MeterRecord]],
    plans: Sequence[Plan],
    first: int,
    last: int,
    used: dict[str, int],
) -> list[MeterRecord]:
    bounds: set[int] = set()
    for history in histories.values():
        bounds.update(minute_of(r.time) for r in history)
    for plan in plans:
        bounds.update(held_minutes(plan))
    order = sorted(histories, key=lambda cid: (histories[cid][0].time, cid))
    out: list[MeterRecord] = []
    sorted_bounds = sorted(bounds)
    position = dict.fromkeys(histories, 0)
    for index, minute in enumerate(sorted_bounds):
        following = sorted_bounds[index + 1] if index + 1 < len(sorted_bounds) else None
        end = following if following is not None else last
        span = max(0, min(end, last) - max(minute, first))
        left = {plan.id: plan.units for plan in plans if _holds(plan, minute)}
        for cid in order:
            history = histories[cid]
            while (
                position[cid] + 1 < len(history)
                and minute_of(history[position[cid] + 1].time) <= minute
            ):
                position[cid] += 1
            current = history[position[cid]]
            if minute_of(current.time) > minute:
                continue  # not yet created
            covered = 0
            if current.billable:
                for plan_id, free in left.items():
                    take = min(free, current.quantity - covered)
                    if take <= 0:
                        continue
                    left[plan_id] -= take
                    covered += take
                    used[plan_id] += take * span
            at = max(current.time, datetime(1970, 1, 1, tzinfo=UTC) + minute * MINUTE)
            out.append(
                replace(
                    current,
                    time=at,
                    quantity=current.quantity - covered,
                    billable=current.billable and current.quantity > covered,
                )
            )
    return out


def _holds(plan: Plan, minute: int) -> bool:
    begin, stop = held_minutes(plan)
    return begin <= minute < stop
