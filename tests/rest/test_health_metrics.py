"""/healthz, /readyz and /metrics; the metrics helpers for the gRPC side."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import grpc
import httpx
import pytest
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from prometheus_client.parser import text_string_to_metric_families

from vpod.controller.agent_grpc import GrpcAgentGateway
from vpod.controller.app import Controller, build_controller
from vpod.controller.metrics import ControllerMetrics, split_rpc_method, state_snapshot
from vpod.controller.settings import Settings
from vpod.controller.transports.http_health import Readiness
from vpod.controller.transports.rest import create_http_app
from vpod.domain.entities import Agent, Allocation, Cluster
from vpod.store.records import AgentHealth, AgentHealthState
from vpod.store.store import Store

from .live import LivePod

UNREACHABLE_DATABASE = "postgresql+psycopg://nobody@127.0.0.1:1/nothing?connect_timeout=2"
"""Port 1 on loopback: connections are refused at once."""


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of a Prometheus text page, by name and sorted labels."""
    found = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


def value(page: str, name: str, **labels: str) -> float | None:
    return samples(page).get((name, tuple(sorted(labels.items()))))


# -- health -----------------------------------------------------------------------------------


def test_healthz_says_ok(http: httpx.Client) -> None:
    assert http.get("/healthz").json() == {"status": "ok"}


def test_readyz_is_200_when_the_store_answers(http: httpx.Client) -> None:
    reply = http.get("/readyz")
    assert reply.status_code == 200
    assert reply.json() == {"ready": True, "checks": [{"name": "store", "ok": True, "detail": ""}]}


def test_readyz_waits_for_every_named_component(pod: LivePod) -> None:
    """503 until the gRPC endpoints are marked started, 200 then, 503 again once one stops."""
    readiness = Readiness(["user gRPC API", "admin gRPC API"])
    url = pod.serve_app(create_http_app(pod.controller, readiness=readiness))
    with httpx.Client(base_url=url) as client:
        reply = client.get("/readyz")
        assert reply.status_code == 503
        waiting = {c["name"] for c in reply.json()["checks"] if not c["ok"]}
        assert waiting == {"user gRPC API", "admin gRPC API"}
        readiness.started("user gRPC API")
        readiness.started("admin gRPC API")
        assert client.get("/readyz").status_code == 200
        readiness.stopped("admin gRPC API")
        reply = client.get("/readyz")
        assert reply.status_code == 503
        assert {"name": "admin gRPC API", "ok": False, "detail": "not started"} in (
            reply.json()["checks"]
        )


@pytest.fixture
def storeless(pod: LivePod, tmp_path: Path) -> Iterator[str]:
    """The URL of an HTTP API whose controller's database refuses connections."""

    gateway = GrpcAgentGateway()

    async def build() -> Controller:
        store = Store.open(UNREACHABLE_DATABASE)
        return build_controller(Settings(data_dir=tmp_path), gateway, store=store)

    controller = pod.run(build())
    yield pod.serve_app(create_http_app(controller))
    pod.run(gateway.close())
    controller.close()


def test_without_a_database_alive_but_not_ready(storeless: str) -> None:
    """/healthz 200, /readyz 503 saying why, /metrics 200 with vpod_state_up 0, /api 503."""
    with httpx.Client(base_url=storeless) as client:
        assert client.get("/healthz").status_code == 200
        ready = client.get("/readyz")
        assert ready.status_code == 503
        (store,) = ready.json()["checks"]
        assert store["name"] == "store"
        assert not store["ok"]
        assert store["detail"]
        partitions = client.get("/api/v1/partitions")
        assert partitions.status_code == 503
        assert partitions.json()["error"]["code"] == "UNAVAILABLE"
        page = client.get("/metrics").text
    assert value(page, "vpod_state_up") == 0
    assert value(page, "vpod_http_requests_total", method="GET", route="/readyz", status="503") == 1


# -- metrics over HTTP --------------------------------------------------------------------------


def test_requests_are_counted_by_route_template_and_status(http: httpx.Client) -> None:
    """Raw paths never become labels: ids collapse into the template, unknown paths into one."""
    for pid in ("m1", "m2"):
        http.get(f"/api/v1/partitions/{pid}/status")
    http.get("/no/such/thing")
    page = http.get("/metrics").text
    assert (
        value(
            page,
            "vpod_http_requests_total",
            method="GET",
            route="/api/v1/partitions/{partition_id}/status",
            status="404",
        )
        == 2
    )
    assert (
        value(page, "vpod_http_requests_total", method="GET", route="<unmatched>", status="404")
        == 1
    )
    assert (
        value(
            page,
            "vpod_http_request_duration_seconds_count",
            method="GET",
            route="/api/v1/partitions/{partition_id}/status",
        )
        == 2
    )


def test_state_gauges_follow_partitions(http: httpx.Client) -> None:
    """A partition of 4 IPUs shows as 4 used IPUs and one ACTIVE/IDLE partition, then goes."""
    before = http.get("/metrics").text
    used_before = value(before, "vpod_ipus", cluster="pod", state="used") or 0
    created = http.post(
        "/api/v1/partitions", json={"id": "gauge4", "size": 4, "allocation_id": "alloc-b"}
    )
    assert created.status_code == 201, created.text
    page = http.get("/metrics").text
    assert value(page, "vpod_ipus", cluster="pod", state="used") == used_before + 4
    assert value(page, "vpod_ipus", cluster="pod", state="free") == 16 - used_before - 4
    assert (
        value(page, "vpod_partitions", cluster="pod", ready_state="ACTIVE", operation_state="IDLE")
        == used_before / 4 + 1
    )
    assert value(page, "vpod_ipus_allocated", cluster="pod") == 16
    assert value(page, "vpod_agents", state="unknown") == 6
    assert value(page, "vpod_state_up") == 1
    http.delete("/api/v1/partitions/gauge4")
    after = http.get("/metrics").text
    assert value(after, "vpod_ipus", cluster="pod", state="used") == used_before


def test_each_app_has_its_own_registry(pod: LivePod) -> None:
    """A second app on the same controller starts from zero: nothing global is shared."""
    url = pod.serve_app(create_http_app(pod.controller))
    with httpx.Client(base_url=url) as client:
        page = client.get("/metrics").text
    assert (
        value(page, "vpod_http_requests_total", method="GET", route="/healthz", status="200")
        is None
    )


# -- the pure parts and the gRPC helper ------------------------------------------------------


def test_state_snapshot_counts_agents_by_reachability_and_ipus_per_cluster() -> None:
    """Agents without a health record are `unknown`; a cluster with no partition is all free."""
    agents = [Agent(id=f"a{i}", host="127.0.0.1", port=9000 + i) for i in range(4)]
    cluster = Cluster(id="c", agent_ids=("a0", "a1"))
    snap = state_snapshot(
        clusters=[cluster],
        allocations=[Allocation(id="al", cluster_id="c", machines=(0,))],
        partitions=[],
        agents=agents,
        health=[
            AgentHealth(agent_id="a0", state=AgentHealthState.REACHABLE),
            AgentHealth(agent_id="a1", state=AgentHealthState.UNREACHABLE, reason="silent"),
        ],
    )
    assert snap.agents == {"reachable": 1, "unreachable": 1, "unknown": 2}
    assert (snap.ipus_used, snap.ipus_free, snap.ipus_allocated) == ({"c": 0}, {"c": 8}, {"c": 4})
    assert snap.partitions == {}


def test_split_rpc_method() -> None:
    assert split_rpc_method("/virmgrpc.UserService/GetVersion") == (
        "virmgrpc.UserService",
        "GetVersion",
    )
    assert split_rpc_method("Odd") == ("", "Odd")


def test_the_grpc_interceptor_counts_calls_by_status_code(pod: LivePod) -> None:
    """Calls through a real gRPC server are counted as OK or by the code they failed with."""
    metrics = ControllerMetrics()

    async def exercise() -> None:
        server = grpc.aio.server(interceptors=[metrics.grpc_interceptor()])
        servicer = health.aio.HealthServicer()
        health_pb2_grpc.add_HealthServicer_to_server(servicer, server)
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        await servicer.set("", health_pb2.HealthCheckResponse.SERVING)
        try:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
                stub = health_pb2_grpc.HealthStub(channel)
                await stub.Check(health_pb2.HealthCheckRequest(service=""))
                await stub.Check(health_pb2.HealthCheckRequest(service=""))
                with pytest.raises(grpc.aio.AioRpcError):
                    await stub.Check(health_pb2.HealthCheckRequest(service="nope"))
        finally:
            await server.stop(0)

    pod.run(exercise())
    page = metrics.render().decode()
    labels = {"service": "grpc.health.v1.Health", "method": "Check"}
    assert value(page, "vpod_grpc_requests_total", code="OK", **labels) == 2
    assert value(page, "vpod_grpc_requests_total", code="NOT_FOUND", **labels) == 1
    assert value(page, "vpod_grpc_request_duration_seconds_count", **labels) == 3


def test_observe_rpc_takes_a_status_code_or_its_name() -> None:
    metrics = ControllerMetrics()
    metrics.observe_rpc("/vpod.admin.v1.AdminService/ListAgents", grpc.StatusCode.OK, 0.01)
    metrics.observe_rpc("/vpod.admin.v1.AdminService/ListAgents", "UNAVAILABLE", 0.02)
    page = metrics.render().decode()
    labels = {"service": "vpod.admin.v1.AdminService", "method": "ListAgents"}
    assert value(page, "vpod_grpc_requests_total", code="OK", **labels) == 1
    assert value(page, "vpod_grpc_requests_total", code="UNAVAILABLE", **labels) == 1
    assert value(page, "vpod_state_up") == 0  # no controller: no state to show
