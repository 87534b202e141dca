"""Reservation use-cases: buy, list, show, cancel; the pools' capacity with reservations.

A pool's hardware (see :mod:`..reservations`) is measured live: IPU-Machines
free in the cloud's V-IPU clusters plus those the cloud's vPODs hold;
enabled bare-metal GPU servers of a model, free or not. *Reserved unused*
units are what active reservations hold beyond what their owners' clusters
of the flavor use now; nobody else may take them, so a pool's *on-demand
free* units are its free units less the reserved unused ones.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from datetime import datetime

from vpod.store.cloud_records import HostUsage
from vpod.store.reservation_store import PoolState, ReservationRecord, ReservationStore

from ..flavors import CATALOG, Flavor, HostRole, find_flavor
from ..model import errors
from ..model.records import Cluster
from ..model.reservations import Reservation
from ..quotas import check_limits, refuse_if_exceeded
from ..reservations import (
    IPU_MACHINE_POOL,
    IPUS_PER_MACHINE,
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
from ..states import ClusterStatus
from .context import CloudContext
from .projects import Principal
from .records import reservation_of, row_of_reservation

_LIMIT = 100_000
"""Machines counted when measuring the IPU pool (far more than any pod)."""


def plan_of(record: Reservation | ReservationRecord) -> Plan:
    return Plan(
        id=record.id,
        project_id=record.project_id,
        flavor=record.flavor,
        units=record.units,
        term=record.term,
        price_per_unit_month=record.price_per_unit_month,
        starts_at=record.starts_at,
        ends_at=record.ends_at,
        cancelled_at=record.cancelled_at,
        billed_until=record.billed_until,
    )


def in_use(cluster: Cluster, flavor: Flavor) -> int:
    """Units of its flavor a cluster holds now (vPODs: 1 while they hold IPUs)."""
    if flavor.is_vpod:
        holds = cluster.allocation_id is not None and cluster.status != ClusterStatus.SUSPENDED
        return 1 if holds else 0
    return cluster.server_count if cluster.status != ClusterStatus.ERROR else 0


class Reservations:
    def __init__(self, ctx: CloudContext, terms: Mapping[str, Term]) -> None:
        self._ctx = ctx
        self.terms = dict(terms)

    @property
    def _store(self) -> ReservationStore:
        return self._ctx.store.reservations

    # -- pools ------------------------------------------------------------------------------

    async def _measure(
        self, pool: str, clusters: Sequence[Cluster], hosts: Sequence[HostUsage]
    ) -> tuple[int, int]:
        """(total, free) hardware units of ``pool`` now."""
        if pool == IPU_MACHINE_POOL:
            free = await self._ctx.vipu.capacity(IPUS_PER_MACHINE, limit=_LIMIT)
            held = sum(
                c.ipus // IPUS_PER_MACHINE
                for c in clusters
                if c.ipus and in_use(c, find_flavor(c.flavor))
            )
            return free + held, free
        model = pool.split(":", 1)[1]
        usable = [
            u
            for u in hosts
            if u.host.enabled and u.host.role == HostRole.BAREMETAL and u.host.model == model
        ]
        return len(usable), sum(1 for u in usable if len(u.free) == u.host.slots)

    async def pools(self, now: datetime | None = None) -> dict[str, PoolView]:
        """Every pool some reservable flavor draws from, with its reservations applied."""
        now = now or self._ctx.clock.now()
        clusters = await self._ctx.records.list_clusters(None)
        holding = await self._ctx.db(self._store.list_reservations, holding_at=now)
        hosts = await self._ctx.db(self._ctx.store.list_host_usage)
        views: dict[str, PoolView] = {}
        for flavor in CATALOG:
            if reservable(flavor):
                name = pool_of(flavor).name
                if name not in views:
                    total, free = await self._measure(name, clusters, hosts)
                    views[name] = PoolView(name, total, free)
        using: dict[tuple[str, str], int] = defaultdict(int)
        for cluster in clusters:
            using[(cluster.project_id, cluster.flavor)] += in_use(
                cluster, find_flavor(cluster.flavor)
            )
        apply_reservations(views, using, [(r.project_id, r.flavor, r.units) for r in holding])
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

    async def require(self, project_id: str, flavor: Flavor, count: int) -> None:
        """NoCapacity unless ``count`` units of ``flavor`` fit the project's reservations plus
        on-demand capacity not reserved by others."""
        if not reservable(flavor):
            return
        view = (await self.pools())[pool_of(flavor).name]
        refusal = creation_refusal(project_id, flavor, count, view)
        if refusal is not None:
            raise errors.NoCapacity(refusal)

    # -- use-cases ----------------------------------------------------------------------------

    async def create(
        self, principal: Principal, flavor_name: str, units: int, term_name: str
    ) -> Reservation:
        ctx = self._ctx
        project_id = principal.project()
        flavor = find_flavor(flavor_name)
        pool = pool_of(flavor)
        term = find_term(self.terms, term_name)
        if not 1 <= units <= MAX_UNITS:
            raise errors.InvalidArgument(f"reserve 1 to {MAX_UNITS} units, not {units}")
        now = ctx.clock.now()
        project = await ctx.db(ctx.store.get_project, project_id)
        used = {"reserved_units": await self.units_held(project_id, now)}
        refuse_if_exceeded(
            project_id, check_limits(project.quotas, used, {"reserved_units": units})
        )
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

        await ctx.db(self._store.buy, row_of_reservation(record), view.total, admit)
        return record

    async def units_held(self, project_id: str, now: datetime | None = None) -> int:
        now = now or self._ctx.clock.now()
        holding = await self._ctx.db(
            self._store.list_reservations, project_id=project_id, holding_at=now
        )
        return sum(r.units for r in holding)

    async def list_reservations(self, principal: Principal) -> list[Reservation]:
        found = await self._ctx.db(self._store.list_reservations, project_id=principal.project())
        return [reservation_of(r) for r in found]

    async def all_plans(self, project_id: str) -> list[Plan]:
        """Every reservation of the project as billing sees it."""
        return [
            plan_of(r)
            for r in await self._ctx.db(self._store.list_reservations, project_id=project_id)
        ]

    async def get(self, principal: Principal, reservation_id: str) -> Reservation:
        record = reservation_of(await self._ctx.db(self._store.get, reservation_id))
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
        await self._ctx.db(self._store.cancel, reservation_id, now, until)
        return reservation_of(await self._ctx.db(self._store.get, reservation_id))
