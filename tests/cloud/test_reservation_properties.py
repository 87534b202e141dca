"""Property tests of reservation accounting, on the pure rules the cloud applies.

For any sequence of reservations, cancellations, creations, deletions,
suspensions and resumptions (each accepted or refused by the same functions
the services call), on an IPU-Machine pool and a bare-metal GPU pool:

- no flavor is ever promised beyond the hardware: clusters' units plus
  reserved-unused units never exceed a pool, and what the catalog shows any
  project fits in the free hardware;
- a project's unused reservation is always backed by free hardware;
- invoice lines add up exactly: cut the history at any two moments and the
  two invoices sum, line by line and in total, to the whole period's.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal

from hypothesis import given, settings
from hypothesis import strategies as st

from vpod.cloud.billing import MeterRecord
from vpod.cloud.flavors import find_flavor
from vpod.cloud.reservations import (
    Plan,
    PoolView,
    Term,
    add_months,
    apply_reservations,
    cancellation_end,
    capacity_for,
    creation_refusal,
    pool_of,
    price_per_unit_month,
    purchase_refusal,
)
from vpod.cloud.reserved_billing import invoice_with_reservations, utilisation

START = datetime(2026, 1, 20, 7, 13, 29, tzinfo=UTC)
FLAVORS = ("g2a-ai-fast-v1pod-4", "g2a-ai-fast-v1pod-8", "bm3-ai-1xlarge-h100-80-8")
PROJECTS = ("p0", "p1", "p2")
TERMS = (Term("1m", 1, Decimal("0.30")), Term("2m", 2, Decimal("0.50")))


@dataclass
class Cluster:
    id: str
    project: str
    flavor: str
    servers: int
    active: bool = True


@dataclass
class World:
    machines: int
    gpu_servers: int
    now: datetime = START
    clusters: dict[str, Cluster] = field(default_factory=dict)
    plans: list[Plan] = field(default_factory=list)
    records: list[MeterRecord] = field(default_factory=list)
    serial: int = 0

    def total(self, pool: str) -> int:
        return self.machines if pool == "ipu-machines" else self.gpu_servers

    def units(self, cluster: Cluster) -> int:
        """Hardware units a cluster holds now."""
        if not cluster.active:
            return 0
        return pool_of(find_flavor(cluster.flavor)).per_unit * cluster.servers

    def views(self) -> dict[str, PoolView]:
        views = {}
        for name in ("ipu-machines", "baremetal:h100-80"):
            used = sum(
                self.units(c)
                for c in self.clusters.values()
                if pool_of(find_flavor(c.flavor)).name == name
            )
            views[name] = PoolView(name, self.total(name), self.total(name) - used)
        using: dict[tuple[str, str], int] = defaultdict(int)
        for c in self.clusters.values():
            using[(c.project, c.flavor)] += c.servers if c.active else 0
        holding = [(p.project_id, p.flavor, p.units) for p in self.plans if p.holds_at(self.now)]
        apply_reservations(views, using, holding)
        return views

    def meter(self, cluster: Cluster, state: str) -> None:
        flavor = find_flavor(cluster.flavor)
        self.records.append(
            MeterRecord(
                time=self.now,
                project_id=cluster.project,
                resource_type="cluster",
                resource_id=cluster.id,
                resource_name=cluster.id,
                item=flavor.name,
                quantity=flavor.meter_quantity(cluster.servers),
                unit_price_per_hour=flavor.price_per_hour,
                billable=cluster.active and state != "DELETED",
                state=state,
            )
        )

    def admit(self, project: str, flavor_name: str, count: int) -> bool:
        """The services' creation rule; when it admits, the hardware must really be free."""
        flavor = find_flavor(flavor_name)
        views = self.views()
        view = views[pool_of(flavor).name]
        if creation_refusal(project, flavor, count, views) is not None:
            return False
        assert view.free >= count * pool_of(flavor).per_unit, "admitted beyond the hardware"
        return True

    def check(self) -> None:
        views = self.views()
        for name, view in views.items():
            used = view.total - view.free
            assert used + view.reserved_unused <= view.total, (name, view)
            for project in PROJECTS:
                for flavor_name in FLAVORS:
                    flavor = find_flavor(flavor_name)
                    pool = pool_of(flavor)
                    if pool.name != name:
                        continue
                    shown = capacity_for(project, flavor, view.free // pool.per_unit, views)
                    assert shown * pool.per_unit <= view.free, (project, flavor_name, view)


operation = st.one_of(
    st.tuples(
        st.just("reserve"),
        st.sampled_from(PROJECTS),
        st.sampled_from(FLAVORS),
        st.integers(1, 3),
        st.sampled_from(TERMS),
    ),
    st.tuples(st.just("cancel"), st.integers(0, 20)),
    st.tuples(
        st.just("create"), st.sampled_from(PROJECTS), st.sampled_from(FLAVORS), st.integers(1, 2)
    ),
    st.tuples(st.just("delete"), st.integers(0, 30)),
    st.tuples(st.just("suspend"), st.integers(0, 30)),
    st.tuples(st.just("resume"), st.integers(0, 30)),
)


def step(world: World, op: tuple[object, ...]) -> None:
    kind = op[0]
    if kind == "reserve":
        _, project, flavor_name, units, term = op
        assert isinstance(project, str)
        assert isinstance(flavor_name, str)
        assert isinstance(units, int)
        assert isinstance(term, Term)
        flavor = find_flavor(flavor_name)
        if purchase_refusal(flavor, units, world.views()[pool_of(flavor).name]) is None:
            world.serial += 1
            world.plans.append(
                Plan(
                    id=f"rsv-{world.serial}",
                    project_id=project,
                    flavor=flavor_name,
                    units=units,
                    term=term.name,
                    price_per_unit_month=price_per_unit_month(flavor, term),
                    starts_at=world.now,
                    ends_at=add_months(world.now, term.months),
                )
            )
    elif kind == "cancel":
        live = [p for p in world.plans if p.holds_at(world.now)]
        if live:
            plan = live[int(op[1]) % len(live)]  # type: ignore[call-overload]
            index = world.plans.index(plan)
            world.plans[index] = Plan(
                **{
                    **plan.__dict__,
                    "cancelled_at": world.now,
                    "billed_until": cancellation_end(plan, world.now),
                }
            )
    elif kind == "create":
        _, project, flavor_name, servers = op
        assert isinstance(project, str)
        assert isinstance(flavor_name, str)
        assert isinstance(servers, int)
        count = 1 if find_flavor(flavor_name).is_vpod else servers
        if world.admit(project, flavor_name, count):
            world.serial += 1
            cluster = Cluster(f"cl-{world.serial}", project, flavor_name, count)
            world.clusters[cluster.id] = cluster
            world.meter(cluster, "ACTIVE")
    else:
        ids = sorted(world.clusters)
        if not ids:
            return
        cluster = world.clusters[ids[int(op[1]) % len(ids)]]  # type: ignore[call-overload]
        if kind == "delete":
            cluster.active = False
            world.meter(cluster, "DELETED")
            del world.clusters[cluster.id]
        elif kind == "suspend" and cluster.active and find_flavor(cluster.flavor).is_vpod:
            cluster.active = False
            world.meter(cluster, "SUSPENDED")
        elif (
            kind == "resume"
            and not cluster.active
            and world.admit(cluster.project, cluster.flavor, cluster.servers)
        ):
            cluster.active = True
            world.meter(cluster, "ACTIVE")


def _sums(invoice: object) -> dict[tuple[str, str, str], Decimal]:
    sums: dict[tuple[str, str, str], Decimal] = defaultdict(Decimal)
    for line in invoice.lines:  # type: ignore[attr-defined]
        sums[(line.resource_type, line.resource_id, line.billing)] += line.amount
    return dict(sums)


@settings(max_examples=60, deadline=None)
@given(
    machines=st.integers(2, 16),
    gpu_servers=st.integers(1, 6),
    steps=st.lists(st.tuples(operation, st.integers(0, 3 * 24 * 3600)), min_size=1, max_size=40),
    cuts=st.tuples(st.floats(0, 1), st.floats(0, 1)),
)
def test_nothing_is_promised_beyond_the_hardware_and_invoices_add_up(
    machines: int,
    gpu_servers: int,
    steps: list[tuple[tuple[object, ...], int]],
    cuts: tuple[float, float],
) -> None:
    world = World(machines, gpu_servers)
    for op, seconds in steps:
        world.now += timedelta(seconds=seconds)
        step(world, op)
        world.check()
    end = world.now + timedelta(days=40)
    span = (end - START).total_seconds()
    first, second = sorted(START + timedelta(seconds=span * c) for c in cuts)
    for project in PROJECTS:
        whole = invoice_with_reservations(
            world.records, world.plans, project_id=project, start=START, end=end
        )
        parts = [
            invoice_with_reservations(
                world.records, world.plans, project_id=project, start=a, end=b
            )
            for a, b in ((START, first), (first, second), (second, end))
            if b > a
        ]
        assert sum((p.total for p in parts), Decimal(0)) == whole.total
        joined: dict[tuple[str, str, str], Decimal] = defaultdict(Decimal)
        for part in parts:
            for key, amount in _sums(part).items():
                joined[key] += amount
        assert {k: v for k, v in joined.items() if v} == {
            k: v for k, v in _sums(whole).items() if v
        }
    for plan_id, use in utilisation(world.records, world.plans, start=START, end=end).items():
        assert 0 <= use.used_unit_minutes <= use.reserved_unit_minutes, plan_id


def test_a_reserved_month_costs_the_monthly_price_and_a_partial_one_pro_rata() -> None:
    flavor = find_flavor("g2a-ai-fast-v1pod-4")
    price = price_per_unit_month(flavor, TERMS[0])
    assert price == Decimal("1226.40")
    plan = Plan(
        id="r",
        project_id="p0",
        flavor=flavor.name,
        units=2,
        term="1m",
        price_per_unit_month=price,
        starts_at=datetime(2026, 2, 15, tzinfo=UTC),
        ends_at=datetime(2026, 3, 15, tzinfo=UTC),
    )
    february = invoice_with_reservations(
        [],
        [plan],
        project_id="p0",
        start=datetime(2026, 2, 1, tzinfo=UTC),
        end=datetime(2026, 3, 1, tzinfo=UTC),
    )
    # 14 of February's 28 days, two units: one month's price exactly
    assert february.total == price
    both = invoice_with_reservations(
        [],
        [plan],
        project_id="p0",
        start=datetime(2026, 2, 1, tzinfo=UTC),
        end=datetime(2026, 4, 1, tzinfo=UTC),
    )
    # and 14 of March's 31 days
    march = (price * 2 * 14 / 31).quantize(Decimal("0.01"))
    assert both.total == price + march
