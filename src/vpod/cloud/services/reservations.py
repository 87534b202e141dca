"""Reservation use-cases: buy, list, show, cancel; the pools' capacity with reservations.

A pool's hardware (see :mod:`..pools`) is measured live: IPU-Machines free
in the cloud's V-IPU clusters plus those the cloud's vPODs hold; enabled
bare-metal hosts of a model, free or not. Units that admitted clusters are
about to take (recorded, their task not yet holding the hardware) are not
free. *Reserved unused* units are what active reservations hold beyond what
their owners' clusters of the flavor use or are about to use; nobody else may
take them, so a pool's *on-demand free* units are its free units less the
reserved unused ones. Every create, resize and resume of every flavor kind
is admitted by :meth:`Reservations.require` against these views, under one
lock with the recording of what it admits (:meth:`Reservations.admission`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from datetime import datetime

from vpod.wire.field_copy import copy_all_fields

from ..flavors import CATALOG, Flavor, HostRole, find_flavor
from ..model import errors
from ..model.hosts import HostUsage
from ..model.records import Cluster
from ..model.reservations import PoolState, Reservation
from ..model.statuses import Operation
from ..pools import (
    IPU_MACHINE_POOL,
    IPUS_PER_MACHINE,
    Claims,
    claims_of,
    draws_on_resume,
    pools_of,
)
from ..quotas import check_limits, refuse_if_exceeded
from ..reservations import (
    MAX_UNITS,
    Plan,
    PoolView,
    Term,
    add_months,
    apply_reservations,
    cancellation_end,
    capacity_for,
    creation_refusal,
    find_term,
    pool_of,
    price_per_unit_month,
    purchase_refusal,
    reservable,
)
from .context import CloudContext
from .projects import Principal

_LIMIT = 100_000
"""Machines counted when measuring the IPU pool (far more than any pod)."""


def plan_of(record: Reservation) -> Plan:
    return copy_all_fields(Plan, record)


class Reservations:
    def __init__(self, ctx: CloudContext, terms: Mapping[str, Term]) -> None:
        self._ctx = ctx
        self.terms = dict(terms)
        self._admitting = asyncio.Lock()

    def admission(self) -> asyncio.Lock:
        """Held from a capacity check to the recording of what it admitted (a cluster, a
        resize, a resume, a reservation), so two requests are never both promised the same
        free units by this process."""
        return self._admitting

    # -- pools ------------------------------------------------------------------------------

    async def _claims(self, clusters: Sequence[Cluster]) -> Claims:
        servers = await self._ctx.records.list_servers([c.id for c in clusters])
        resuming = [
            t.resource_id
            for t in await self._ctx.records.unfinished_tasks()
            if t.operation == Operation.RESUME
        ]
        return claims_of(((c, find_flavor(c.flavor)) for c in clusters), servers, resuming)

    async def _measure(
        self, pool: str, claims: Claims, hosts: Sequence[HostUsage]
    ) -> tuple[int, int]:
        """(total, free) hardware units of ``pool`` now; units admitted clusters are about
        to take are not free."""
        pending = claims.pending.get(pool, 0)
        if pool == IPU_MACHINE_POOL:
            free = await self._ctx.vipu.capacity(IPUS_PER_MACHINE, limit=_LIMIT)
            return free + claims.held.get(pool, 0), max(0, free - pending)
        model = pool.split(":", 1)[1]
        usable = [
            u
            for u in hosts
            if u.host.enabled and u.host.role == HostRole.BAREMETAL and u.host.model == model
        ]
        whole = sum(1 for u in usable if len(u.free) == u.host.slots)
        return len(usable), max(0, whole - pending)

    async def pools(self, now: datetime | None = None) -> dict[str, PoolView]:
        """Every pool some flavor draws from, with its reservations applied."""
        now = now or self._ctx.clock.now()
        clusters = await self._ctx.records.list_clusters(None)
        holding = await self._ctx.records.list_reservations(holding_at=now)
        hosts = await self._ctx.records.list_host_usage()
        claims = await self._claims(clusters)
        views: dict[str, PoolView] = {}
        for name in pools_of(CATALOG):
            total, free = await self._measure(name, claims, hosts)
            views[name] = PoolView(name, total, free)
        apply_reservations(
            views, claims.using, [(r.project_id, r.flavor, r.units) for r in holding]
        )
        return views

    async def capacity_for(
        self, project_id: str, flavor: Flavor, fits: int, views: Mapping[str, PoolView]
    ) -> int:
        """What the catalog shows ``project_id`` for ``flavor`` given ``fits`` placeable now."""
        return capacity_for(project_id, flavor, fits, views)

    async def reserved_free(self, project_id: str, flavor: Flavor) -> int:
        if not reservable(flavor):
            return 0
        views = await self.pools()
        return views[pool_of(flavor).name].own_unused.get((project_id, flavor.name), 0)

    async def require(
        self, project_id: str, flavor: Flavor, count: int, *, resuming: bool = False
    ) -> None:
        """NoCapacity unless ``count`` clusters (vPODs) or servers (GPU) of ``flavor``, of any
        kind, fit the project's reservations plus on-demand capacity nobody else reserved
        (``resuming``: one suspended cluster taking back what it gave up)."""
        taking = draws_on_resume(flavor) if resuming else None
        refusal = creation_refusal(project_id, flavor, count, await self.pools(), taking=taking)
        if refusal is not None:
            raise errors.NoCapacity(refusal)

    # -- use-cases ----------------------------------------------------------------------------

    async def create(
        self, principal: Principal, flavor_name: str, units: int, term_name: str
    ) -> Reservation:
        ctx = self._ctx
        project_id = principal.project()
        flavor = find_flavor(flavor_name)
        pool_of(flavor)  # InvalidArgument unless reservable
        term = find_term(self.terms, term_name)
        if not 1 <= units <= MAX_UNITS:
            raise errors.InvalidArgument(f"reserve 1 to {MAX_UNITS} units, not {units}")
        now = ctx.clock.now()
        project = await ctx.records.get_project(project_id)
        used = {"reserved_units": await self.units_held(project_id, now)}
        refuse_if_exceeded(
            project_id, check_limits(project.quotas, used, {"reserved_units": units})
        )
        async with self._admitting:
            return await self._buy(project_id, flavor, units, term, now)

    async def _buy(
        self, project_id: str, flavor: Flavor, units: int, term: Term, now: datetime
    ) -> Reservation:
        ctx = self._ctx
        pool = pool_of(flavor)
        view = (await self.pools(now))[pool.name]
        need = units * pool.per_unit
        refusal = purchase_refusal(flavor, units, view)
        if refusal is not None:
            raise errors.NoCapacity(refusal)
        record = Reservation(
            id=ctx.ids.new("rsv"),
            project_id=project_id,
            flavor=flavor.name,
            pool=pool.name,
            units=units,
            per_unit=pool.per_unit,
            term=term.name,
            price_per_unit_month=price_per_unit_month(flavor, term),
            starts_at=now,
            ends_at=add_months(now, term.months),
        )

        def admit(state: PoolState) -> None:
            left = state.units - state.held
            if need > left:
                raise errors.NoCapacity(
                    f"cannot reserve {units} × {flavor.name}: that needs {need} {pool.what} and"
                    f" only {left} of the pool's {state.units} are not reserved already"
                )

        await ctx.records.buy_reservation(record, view.total, admit)
        return record

    async def units_held(self, project_id: str, now: datetime | None = None) -> int:
        now = now or self._ctx.clock.now()
        holding = await self._ctx.records.list_reservations(project_id=project_id, holding_at=now)
        return sum(r.units for r in holding)

    async def list_reservations(self, principal: Principal) -> list[Reservation]:
        return await self._ctx.records.list_reservations(project_id=principal.project())

    async def all_plans(self, project_id: str) -> list[Plan]:
        """Every reservation of the project as billing sees it."""
        return [
            plan_of(r) for r in await self._ctx.records.list_reservations(project_id=project_id)
        ]

    async def get(self, principal: Principal, reservation_id: str) -> Reservation:
        record = await self._ctx.records.get_reservation(reservation_id)
        if record.project_id != principal.project():
            raise errors.NotFound(
                f"reservation {reservation_id} does not exist: `vpod reservation list` shows yours"
            )
        return record

    async def cancel(self, principal: Principal, reservation_id: str) -> Reservation:
        """Policy: capacity is released at once; charges run to the end of the current
        calendar month (UTC), never past the term."""
        record = await self.get(principal, reservation_id)
        now = self._ctx.clock.now()
        if record.cancelled_at is not None:
            raise errors.FailedPrecondition(
                f"reservation {reservation_id} was cancelled at {record.cancelled_at.isoformat()}"
            )
        if record.ends_at <= now:
            raise errors.FailedPrecondition(
                f"reservation {reservation_id} ended at {record.ends_at.isoformat()}: nothing to"
                " cancel"
            )
        until = cancellation_end(plan_of(record), now)
        await self._ctx.records.cancel_reservation(reservation_id, now, until)
        return await self._ctx.records.get_reservation(reservation_id)
