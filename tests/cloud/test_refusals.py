"""What the API refuses, and how: quotas, capacity, bad requests, wrong states, busy clusters,
other tenants' resources, missing or wrong tokens."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from vpod.cloud.drivers import Layout, LocalCompute

from .conftest import error, ok, run_task
from .gates import GatedCompute
from .live import LiveCloud, start_cloud, stop_cloud

VPOD4, VPOD8 = "g2a-ai-fast-v1pod-4", "g2a-ai-fast-v1pod-8"


@pytest.fixture(scope="module")
def gated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LiveCloud, GatedCompute]]:
    data_dir: Path = tmp_path_factory.mktemp("refusals")
    compute = GatedCompute(LocalCompute(Layout(data_dir / "cloud")))
    live = start_cloud(data_dir, compute=compute)
    try:
        yield live, compute
    finally:
        stop_cloud(live)


@pytest.fixture
def live(gated: tuple[LiveCloud, GatedCompute]) -> LiveCloud:
    return gated[0]


def test_a_quota_overrun_is_refused_before_anything_happens(live: LiveCloud) -> None:
    """ipus=4: a vPOD-8 is 409 RESOURCE_EXHAUSTED naming the quota; check_limits agrees."""
    with live.client(live.project("small", ipus=4)) as http:
        limits = ok(http.post("/check_limits", json={"flavor": VPOD8}))
        assert limits["fits"] is False
        assert [e["quota"] for e in limits["exceeded"]] == ["ipus"]
        message = error(
            http.post("/clusters", json={"name": "big", "flavor": VPOD8}), 409, "RESOURCE_EXHAUSTED"
        )
        assert "project small is over quota: quota ipus is 4 and 0 are in use" in message
        assert ok(http.get("/clusters")) == []
        assert ok(http.post("/check_limits", json={"flavor": VPOD4}))["fits"] is True


def test_missing_capacity_is_refused_with_the_reason(live: LiveCloud) -> None:
    """A vPOD-64 on a 16-IPU pod: 409 RESOURCE_EXHAUSTED saying there is no room."""
    with live.client(live.project("hungry")) as http:
        message = error(
            http.post("/clusters", json={"name": "huge", "flavor": "g2a-ai-fast-v1pod-64"}),
            409,
            "RESOURCE_EXHAUSTED",
        )
        assert "no capacity for g2a-ai-fast-v1pod-64 now" in message
        assert ok(http.get("/flavors"))[3]["capacity"] == 0


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"name": "ok-name", "flavor": "g2a-ai-fast-v1pod-61"}, "there is no flavor"),
        ({"name": "x", "flavor": VPOD4}, "cluster name 'x' is not valid"),
        ({"name": "ok-name", "flavor": VPOD4, "image": "win11"}, "image 'win11' does not run"),
        ({"name": "ok-name", "flavor": VPOD4, "interfaces": []}, "at least one network interface"),
        (
            {
                "name": "ok-name",
                "flavor": "bm1-ai-small-v1pod-4",
                "volumes": [{"name": "d1", "size_gib": 10}],
            },
            "bare metal: it takes no external volumes",
        ),
        ({"name": "ok-name", "flavor": VPOD4, "server_count": 3}, "leave server_count out"),
        ({"name": "ok-name", "flavor": VPOD4, "volumes": [{"name": "d1"}]}, "needs an id"),
        ({"name": "ok-name"}, "body.flavor"),
    ],
)
def test_bad_requests_are_400_with_a_sentence(
    live: LiveCloud, body: dict[str, object], message: str
) -> None:
    """Bad flavors, names, images, interfaces, volumes on bare metal, missing fields."""
    with live.client(live.project("sloppy")) as http:
        assert message in error(http.post("/clusters", json=body), 400, "INVALID_ARGUMENT")


def test_operations_in_the_wrong_state_are_refused(live: LiveCloud) -> None:
    """Resize a vPOD, reboot or attach while SUSPENDED, delete an attached volume: refused;
    suspending twice and resuming an active cluster are harmless."""
    with live.client(live.project("stateful")) as http:
        assert (
            run_task(live, http, "POST", "/clusters", json={"name": "st1", "flavor": VPOD4})[
                "state"
            ]
            == "FINISHED"
        )
        assert "its size is its flavor" in error(
            http.post("/clusters/st1/resize", json={"server_count": 2}), 400, "INVALID_ARGUMENT"
        )
        again = run_task(live, http, "POST", "/clusters/st1/resume")
        assert (again["state"], ok(http.get("/clusters/st1"))["status"]) == ("FINISHED", "ACTIVE")
        assert run_task(live, http, "POST", "/volumes", json={"name": "vol1", "size_gib": 1})
        assert run_task(live, http, "POST", "/volumes/vol1/attach", json={"cluster": "st1"})
        assert "detach it first" in error(http.delete("/volumes/vol1"), 409, "FAILED_PRECONDITION")
        boot = "st1-poplar-1-boot"
        assert "boot volume" in error(
            http.post(f"/volumes/{boot}/detach"), 409, "FAILED_PRECONDITION"
        )
        for _ in range(2):
            assert run_task(live, http, "POST", "/clusters/st1/suspend")["state"] == "FINISHED"
        assert ok(http.get("/clusters/st1"))["status"] == "SUSPENDED"
        assert "resume it first" in error(
            http.post("/clusters/st1/reboot"), 409, "FAILED_PRECONDITION"
        )
        assert run_task(live, http, "POST", "/volumes", json={"name": "vol2", "size_gib": 1})
        assert "resume it first" in error(
            http.post("/volumes/vol2/attach", json={"cluster": "st1"}), 409, "FAILED_PRECONDITION"
        )
        assert run_task(live, http, "DELETE", "/clusters/st1")["state"] == "FINISHED"


def test_a_busy_cluster_refuses_a_second_operation(gated: tuple[LiveCloud, GatedCompute]) -> None:
    """While its creation waits at a gate the cluster is CREATING: suspend and delete wait."""
    live, compute = gated
    gate = compute.hold("create_server")
    with live.client(live.project("busy")) as http:
        task = ok(http.post("/clusters", json={"name": "slow", "flavor": VPOD4}), 202)
        gate.wait_entered()
        cluster = ok(http.get("/clusters/slow"))
        assert (cluster["status"], cluster["task_id"]) == ("CREATING", task["id"])
        running = ok(http.get(f"/tasks/{task['id']}"))
        assert (running["state"], running["detailed_state"]) == ("RUNNING", "POPLAR_SERVERS")
        assert "wait for it to be created" in error(
            http.post("/clusters/slow/suspend"), 409, "FAILED_PRECONDITION"
        )
        assert f"busy with task {task['id']}" in error(
            http.delete("/clusters/slow"), 409, "FAILED_PRECONDITION"
        )
        gate.open()
        assert live.wait(task["id"])["state"] == "FINISHED"
        assert run_task(live, http, "DELETE", "/clusters/slow")["state"] == "FINISHED"


def test_a_project_sees_only_its_own_resources(live: LiveCloud) -> None:
    """Another project's cluster, volume and task are not found; invoices are separate."""
    with live.client(live.project("owner")) as mine, live.client(live.project("nosy")) as theirs:
        task = run_task(live, mine, "POST", "/volumes", json={"name": "secret", "size_gib": 1})
        error(theirs.get("/volumes/secret"), 404, "NOT_FOUND")
        error(theirs.get(f"/volumes/{task['resource_id']}"), 404, "NOT_FOUND")
        error(theirs.get(f"/tasks/{task['id']}"), 404, "NOT_FOUND")
        error(theirs.delete("/volumes/secret"), 404, "NOT_FOUND")
        assert ok(theirs.get("/tasks")) == []
        assert ok(theirs.get("/invoice"))["lines"] == []
        assert [v["name"] for v in ok(mine.get("/volumes"))] == ["secret"]


def test_tokens_are_required_and_scoped(live: LiveCloud) -> None:
    """No token or a wrong one: 401; an admin token on project routes and a project token on
    admin routes: 403."""
    with live.client() as anonymous:
        assert "needs a token" in error(anonymous.get("/clusters"), 401, "UNAUTHENTICATED")
    with live.client("vpod_nothere.secret") as wrong:
        assert "unknown or revoked token" in error(wrong.get("/clusters"), 401, "UNAUTHENTICATED")
    with live.client("Basic nonsense") as garbled:
        assert "not a vpod cloud token" in error(garbled.get("/clusters"), 401, "UNAUTHENTICATED")
    with live.admin() as admin:
        assert "administrator's token" in error(admin.get("/clusters"), 403, "PERMISSION_DENIED")
        assert ok(admin.get("/admin/projects"))
    with live.client(live.project("plain")) as plain:
        assert "only an administrator" in error(plain.get("/admin/hosts"), 403, "PERMISSION_DENIED")


def test_admin_manages_quotas_tokens_and_hosts(live: LiveCloud) -> None:
    """Quotas change, a new token works and a revoked one stops; hosts register once."""
    with live.admin() as admin:
        updated = ok(admin.put("/admin/projects/plain/quotas", json={"quotas": {"ipus": 0}}))
        assert updated["quotas"]["ipus"] == 0
        error(
            admin.put("/admin/projects/plain/quotas", json={"quotas": {"cpus": 1}}),
            400,
            "INVALID_ARGUMENT",
        )
        token = ok(admin.post("/admin/projects/plain/tokens", json={"label": "ci"}), 201)
        with live.client(token["token"]) as ci:
            assert ok(ci.get("/project"))["quotas"]["ipus"] == 0
            assert admin.delete(f"/admin/tokens/{token['id']}").status_code == 204
            error(ci.get("/project"), 401, "UNAUTHENTICATED")
        host = {"id": "gpu-x", "role": "baremetal", "model": "l40s-48"}
        assert ok(admin.post("/admin/hosts", json=host), 201)["free_slots"] == 8
        error(admin.post("/admin/hosts", json=host), 409, "ALREADY_EXISTS")
        assert admin.delete("/admin/hosts/gpu-x").status_code == 204


def test_the_openapi_document_lists_the_cloud_routes(live: LiveCloud) -> None:
    """/api/cloud/v1/openapi.json describes the cloud API, with the bearer scheme."""
    document = ok(live.client().get("/openapi.json"))
    paths = document["paths"]
    for path in (
        "/api/cloud/v1/clusters",
        "/api/cloud/v1/clusters/{cluster}/suspend",
        "/api/cloud/v1/volumes/{volume}/attach",
        "/api/cloud/v1/invoice",
        "/api/cloud/v1/admin/hosts",
    ):
        assert path in paths, path
    assert "CloudToken" in document["components"]["securitySchemes"]


def test_a_vpod_whose_machines_do_not_answer_is_degraded_until_they_do(
    live: LiveCloud, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The health check marks an idle ACTIVE vPOD DEGRADED (still billed) and back ACTIVE."""
    from vpod.cloud.services.health import check_vpods

    from .conftest import meter_of

    with live.client(live.project("healthy")) as http:
        body = {"name": "frail", "flavor": VPOD4}
        assert run_task(live, http, "POST", "/clusters", json=body)["state"] == "FINISHED"
        cluster_id = ok(http.get("/clusters/frail"))["id"]

        async def silent(_allocation: object) -> list[str]:
            return ["ag1"]

        monkeypatch.setattr(live.cloud.ctx.vipu, "unreachable_agents", silent)
        live.run(check_vpods(live.cloud.ctx))
        cluster = ok(http.get("/clusters/frail"))
        assert (cluster["status"], cluster["error"]) == (
            "DEGRADED",
            "IPU-Machines not answering: ag1",
        )
        assert (meter_of(live, cluster_id)[-1].state, meter_of(live, cluster_id)[-1].billable) == (
            "DEGRADED",
            True,
        )
        monkeypatch.undo()
        live.run(check_vpods(live.cloud.ctx))
        assert ok(http.get("/clusters/frail"))["status"] == "ACTIVE"
        assert run_task(live, http, "DELETE", "/clusters/frail")["state"] == "FINISHED"


def test_a_failed_creation_is_rolled_back_to_an_error_cluster_holding_nothing(
    gated: tuple[LiveCloud, GatedCompute],
) -> None:
    """The server cannot be built: the task ends ERROR with the driver's sentence; allocation,
    V-IPU user, servers and the new volume are gone; it is not billed; only delete is left."""
    from .conftest import meter_of

    live, compute = gated
    controller = live.running.controller
    compute.fail_next("create_server", "the hypervisor refused the VM: out of memory")
    with live.client(live.project("unlucky")) as http:
        body = {
            "name": "doomed",
            "flavor": VPOD4,
            "volumes": [{"name": "doomed-data", "size_gib": 5}],
        }
        task = run_task(live, http, "POST", "/clusters", json=body)
        assert (task["state"], task["detailed_state"]) == ("ERROR", "ERROR")
        assert task["error"] == "the hypervisor refused the VM: out of memory"
        cluster = ok(http.get("/clusters/doomed"))
        assert (cluster["status"], cluster["servers"], cluster["volumes"]) == ("ERROR", [], [])
        assert ok(http.get("/volumes")) == []
        user_id = f"vpod-{cluster['id']}"
        store = controller.ctx.db.store
        assert live.run(controller.ctx.db(store.find_allocation, user_id)) is None
        assert live.run(controller.ctx.db(store.find_user_with_hash, user_id)) is None
        assert not any(m.billable for m in meter_of(live, cluster["id"]) if m.state == "ERROR")
        message = error(http.post("/clusters/doomed/suspend"), 409, "FAILED_PRECONDITION")
        assert "holds nothing (its creation failed: the hypervisor refused" in message
        usage = ok(http.get("/project"))["usage"]
        assert (usage["clusters"], usage["ipus"]) == (1, 0)  # a slot, but no IPU held
        assert run_task(live, http, "DELETE", "/clusters/doomed")["state"] == "FINISHED"
        assert ok(http.get("/invoice"))["total"] == "0.00"


def test_an_open_controller_serves_no_tenant(tmp_path: Path) -> None:
    """Without --secure a vPOD's V-IPU user could reach every allocation: the cloud's
    administrator still works, every tenant call is 403 saying to run with --secure."""
    live = start_cloud(tmp_path, machines=1, secure=False)
    try:
        token = live.project("open-tenant")
        with live.client(token) as http:
            for reply in (http.get("/flavors"), http.get("/clusters"), http.get("/project")):
                message = error(reply, 403, "PERMISSION_DENIED")
                assert "runs without authentication" in message
                assert "--secure" in message
        with live.admin() as http:
            assert [p["id"] for p in ok(http.get("/admin/projects"))] == ["open-tenant"]
    finally:
        stop_cloud(live)


def test_two_new_volumes_of_one_name_are_a_400_naming_the_clash(live: LiveCloud) -> None:
    """Two data volumes named alike, or one named like a server's boot volume: 400 naming the
    name, nothing recorded (the store's uniqueness is not a conflict to retry)."""
    with live.client(live.project("twins")) as http:
        for volumes in (
            [{"name": "data", "size_gib": 10}, {"name": "data", "size_gib": 20}],
            [{"name": "pair-poplar-1-boot", "size_gib": 10}],
        ):
            body = {"name": "pair", "flavor": VPOD4, "volumes": volumes}
            message = error(http.post("/clusters", json=body), 400, "INVALID_ARGUMENT")
            assert f"two volumes of this request are named {volumes[0]['name']}" in message
            assert "retry" not in message
        assert ok(http.get("/clusters")) == []
        assert ok(http.get("/volumes")) == []


def test_a_cluster_in_error_holding_nothing_keeps_its_slot_but_no_ipus(
    gated: tuple[LiveCloud, GatedCompute],
) -> None:
    """Quotas count what a cluster holds: a rolled-back creation (ERROR, no server) still
    takes a `clusters` slot until deleted, but its IPUs are free for the next vPOD."""
    live, compute = gated
    compute.fail_next("create_server", "the hypervisor refused the VM: out of memory")
    with live.client(live.project("retrying", ipus=4, clusters=2)) as http:
        failed = run_task(live, http, "POST", "/clusters", json={"name": "one", "flavor": VPOD4})
        assert failed["state"] == "ERROR"
        assert ok(http.get("/project"))["usage"]["ipus"] == 0
        second = run_task(live, http, "POST", "/clusters", json={"name": "two", "flavor": VPOD4})
        assert second["state"] == "FINISHED", second
        message = error(
            http.post("/clusters", json={"name": "three", "flavor": VPOD4}),
            409,
            "RESOURCE_EXHAUSTED",
        )
        assert "quota clusters is 2 and 2 are in use" in message
        assert run_task(live, http, "DELETE", "/clusters/one")["state"] == "FINISHED"
        assert run_task(live, http, "DELETE", "/clusters/two")["state"] == "FINISHED"
