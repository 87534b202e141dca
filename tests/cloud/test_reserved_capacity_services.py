"""Reserved capacity holds for every flavor kind, driven through the cloud's services.

A live secure controller over 2 emulated Bow-2000s (the cloud's IPU-Machine
pool), one bare-metal Poplar host (dedicated vPODs) and two
bare-metal H100 hosts, with the real store and the real task runner.
Hypothesis draws sequences of reserve, cancel, create (virtual vPOD-4 and
vPOD-8, dedicated vPOD-4, GPU bare metal), suspend, resume and delete by
two projects, each call made on the services and each task waited for.
After every step:

- no pool holds more than it has: units clusters hold or are about to take,
  plus units reserved and unused, never exceed the hardware (so nobody took
  what another project reserved);
- an owner can always use what it reserved: for every unused reserved unit,
  the owner's creation of that flavor is admitted;
- every creation or resumption admitted ends FINISHED (admission never
  promised hardware that was not there), and an owner's creation within its
  unused reservations is never refused.

The pools are small on purpose: requests contend at once, and vPOD-4 and
vPOD-8 on 2 machines cannot fragment, so every refusal of an owner or
failure of an admitted task is a capacity-accounting bug.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vpod.cloud.flavors import find_flavor
from vpod.cloud.model import errors
from vpod.cloud.model.records import Cluster
from vpod.cloud.model.statuses import ClusterStatus
from vpod.cloud.pools import IPU_MACHINE_POOL, claims_of, host_pool
from vpod.cloud.services.clusters import ClusterRequest
from vpod.cloud.services.projects import Principal

from .conftest import error
from .live import CALL_TIMEOUT_S, LiveCloud, start_cloud, stop_cloud

V4, V8 = "g2a-ai-fast-v1pod-4", "g2a-ai-fast-v1pod-8"
D4 = "bm1-ai-small-v1pod-4"
GPU = "bm3-ai-1xlarge-h100-80-8"
RESERVABLE = (V4, V8, GPU)
CREATABLE = (V4, V8, D4, GPU)
PROJECTS = ("pa", "pb")
REFUSALS = (errors.NoCapacity, errors.FailedPrecondition)


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveCloud]:
    cloud = start_cloud(Path(tmp_path_factory.mktemp("reserved-capacity")), machines=2)
    try:
        with cloud.admin() as admin:
            hosts = [
                {"id": "pop-1", "role": "baremetal", "model": "poplar"},
                {"id": "h100-1", "role": "baremetal", "model": "h100-80", "fabric": "ib-a"},
                {"id": "h100-2", "role": "baremetal", "model": "h100-80", "fabric": "ib-a"},
            ]
            for host in hosts:
                reply = admin.post("/admin/hosts", json=host)
                assert reply.status_code == 201, reply.text
        for project in PROJECTS:
            cloud.project(project)
        _wait_for_the_machines(cloud)
        yield cloud
    finally:
        stop_cloud(cloud)


SIZES = {IPU_MACHINE_POOL: 2, host_pool("poplar"): 1, host_pool("h100-80"): 2}
"""Each pool's hardware, as the fixture builds it."""


def _wait_for_the_machines(live: LiveCloud) -> None:
    """Until the controller has heard from every machine (before, none is placeable)."""
    deadline = time.monotonic() + CALL_TIMEOUT_S
    while live.run(live.cloud.ctx.vipu.capacity(4, limit=8)) < SIZES[IPU_MACHINE_POOL]:
        assert time.monotonic() < deadline, "the emulated machines never became placeable"
        time.sleep(0.2)


@dataclass
class Run:
    live: LiveCloud
    reservations: list[tuple[str, str]] = field(default_factory=list)
    """(project, reservation id) of those bought in this example."""
    serial: int = 0

    def principal(self, project: str) -> Principal:
        return Principal(token_id="test", project_id=project)

    def unused(self) -> dict[tuple[str, str], int]:
        cloud = self.live.cloud
        views = self.live.run(cloud.reservations.pools())
        out: dict[tuple[str, str], int] = {}
        for view in views.values():
            out.update({k: v for k, v in view.own_unused.items() if v > 0})
        return out

    def finish(self, task_id: str) -> str:
        return str(self.live.wait(task_id)["state"])

    def records(self) -> list[Cluster]:
        return self.live.run(self.live.cloud.ctx.records.list_clusters(None))

    def clusters(self) -> list[tuple[str, str, ClusterStatus]]:
        found = self.records()
        return [(c.project_id, c.id, c.status) for c in found if c.status != ClusterStatus.DELETED]


def _step(run: Run, op: tuple[object, ...]) -> None:
    cloud = run.live.cloud
    kind = op[0]
    if kind == "reserve":
        _, project, flavor, units = op
        assert isinstance(project, str)
        assert isinstance(flavor, str)
        assert isinstance(units, int)
        try:
            made = run.live.run(
                cloud.reservations.create(run.principal(project), flavor, units, "1y")
            )
        except REFUSALS:
            return
        run.reservations.append((project, made.id))
    elif kind == "cancel":
        if run.reservations:
            project, rid = run.reservations.pop(int(str(op[1])) % len(run.reservations))
            run.live.run(cloud.reservations.cancel(run.principal(project), rid))
    elif kind == "create":
        _, project, flavor, servers = op
        assert isinstance(project, str)
        assert isinstance(flavor, str)
        assert isinstance(servers, int)
        count = 1 if find_flavor(flavor).is_vpod else servers
        owed = run.unused().get((project, flavor), 0) >= count
        run.serial += 1
        request = ClusterRequest(
            name=f"cluster-{run.serial}",
            flavor=flavor,
            server_count=None if find_flavor(flavor).is_vpod else count,
        )
        try:
            task = run.live.run(cloud.clusters.create(run.principal(project), request))
        except REFUSALS as exc:
            refusal = str(exc)
        else:
            refusal = ""
        if refusal:
            assert not owed, f"{project} was refused {flavor} it reserved: {refusal}"
            return
        state = run.finish(task.id)
        assert state == "FINISHED", f"an admitted creation of {flavor} ended {state}"
    else:
        live = [
            c for c in run.clusters() if c[2] in (ClusterStatus.ACTIVE, ClusterStatus.SUSPENDED)
        ]
        if not live:
            return
        project, cluster_id, status = live[int(str(op[1])) % len(live)]
        flavor = find_flavor(next(c.flavor for c in run.records() if c.id == cluster_id))
        principal = run.principal(project)
        try:
            if kind == "delete":
                task = run.live.run(
                    cloud.clusters.delete(principal, cluster_id, delete_volumes=True)
                )
            elif kind == "suspend" and status == ClusterStatus.ACTIVE and flavor.suspendable:
                task = run.live.run(cloud.clusters.suspend(principal, cluster_id))
            elif kind == "resume" and status == ClusterStatus.SUSPENDED:
                task = run.live.run(cloud.clusters.resume(principal, cluster_id))
            else:
                return
        except errors.FailedPrecondition:
            return  # busy, or not in a state for it
        except errors.NoCapacity as exc:
            if kind == "resume" and "IPU-Machines" in str(exc):
                return  # a resume is admitted like a creation: others may hold the machines
            raise  # nothing else may refuse it (a suspended cluster keeps its hosts)
        state = run.finish(task.id)
        assert state == "FINISHED", f"an admitted {kind} ended {state}"


def _check(run: Run) -> None:
    """Against each pool's hardware as built (a machine that stops answering for a moment
    under load leaves the live measure, not the pool)."""
    cloud = run.live.cloud
    views = run.live.run(cloud.reservations.pools())
    records = run.records()
    servers = run.live.run(cloud.ctx.records.list_servers([c.id for c in records]))
    claims = claims_of(((c, find_flavor(c.flavor)) for c in records), servers, [])
    for pool, size in SIZES.items():
        taken = claims.held.get(pool, 0) + claims.pending.get(pool, 0)
        reserved = views[pool].reserved_unused
        assert taken + reserved <= size, (
            f"pool {pool}: {taken} taken by clusters and {reserved} reserved unused, of {size}"
        )
    for (project, flavor), unused in run.unused().items():
        assert unused > 0
        run.live.run(cloud.reservations.require(project, find_flavor(flavor), 1))


def _reset(run: Run) -> None:
    cloud = run.live.cloud
    for project, cluster_id, _status in run.clusters():
        task = run.live.run(
            cloud.clusters.delete(run.principal(project), cluster_id, delete_volumes=True)
        )
        assert run.finish(task.id) == "FINISHED"
    for project, rid in run.reservations:
        run.live.run(cloud.reservations.cancel(run.principal(project), rid))


KINDS = ("reserve",) * 3 + ("create",) * 4 + ("cancel", "suspend", "resume", "delete")
"""Reservations and creations are drawn more often than the rest, so that they contend."""
operation = st.tuples(
    st.sampled_from(KINDS),
    st.sampled_from(PROJECTS),
    st.sampled_from(CREATABLE),
    st.integers(1, 2),
    st.integers(0, 20),
).map(
    lambda o: (
        (o[0], o[1], o[2] if o[2] != D4 or o[0] != "reserve" else V8, o[3])
        if o[0] in ("reserve", "create")
        else (o[0], o[4])
    )
)


@settings(
    max_examples=30,
    deadline=None,
    database=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(ops=st.lists(operation, min_size=3, max_size=8))
def test_no_project_takes_anothers_reserved_capacity(
    live: LiveCloud, ops: list[tuple[object, ...]]
) -> None:
    run = Run(live)
    try:
        for op in ops:
            _step(run, op)
            _check(run)
    finally:
        _reset(run)


def test_a_dedicated_vpod_cannot_take_ipu_machines_reserved_by_another(live: LiveCloud) -> None:
    """The reported case: every IPU-Machine reserved, another project's dedicated vPOD is
    refused, naming the reservation, and the owner then creates what it pays for."""
    run = Run(live)
    try:
        _step(run, ("reserve", "pa", V8, 1))
        assert run.reservations, "the whole pod could not be reserved"
        with pytest.raises(errors.NoCapacity, match="reserved"):
            live.run(live.cloud.clusters.create(run.principal("pb"), ClusterRequest("ded", D4)))
        _step(run, ("create", "pa", V8, 1))
        assert [c[0] for c in run.clusters()] == ["pa"]
    finally:
        _reset(run)


def test_a_reservation_request_with_an_unknown_field_is_refused(live: LiveCloud) -> None:
    before = live.run(live.cloud.reservations.list_reservations(Principal("t", "pa")))
    with live.client(live.project("pa")) as http:
        message = error(
            http.post("/reservations", json={"flavor": V4, "units": 1, "colour": "red"}),
            400,
            "INVALID_ARGUMENT",
        )
    assert "body.colour" in message
    after = live.run(live.cloud.reservations.list_reservations(Principal("t", "pa")))
    assert after == before
