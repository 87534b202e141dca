"""The admin endpoints over real HTTP: agents, clusters, allocations, users, faults, tests."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import datetime, timedelta

import httpx
import pytest

from .live import LivePod

ADMIN = "/api/v1/admin"


def error_of(reply: httpx.Response) -> tuple[int, str]:
    body = reply.json()["error"]
    return reply.status_code, body["code"]


@pytest.fixture
def spare_cluster(http: httpx.Client) -> Iterator[str]:
    """Cluster ``spare`` of the two agents outside ``pod`` (ag5, ag6), removed afterwards."""
    reply = http.post(f"{ADMIN}/clusters", json={"id": "spare", "agent_ids": ["ag5", "ag6"]})
    assert reply.status_code == 201, reply.text
    yield "spare"
    http.delete(f"{ADMIN}/clusters/spare", params={"force": "true"})


def test_agents_are_listed_with_cluster_allocation_and_health(http: httpx.Client) -> None:
    """GET /agents shows where each agent belongs; ?cluster= filters."""
    agents = {a["id"]: a for a in http.get(f"{ADMIN}/agents").json()["agents"]}
    assert sorted(agents) == ["ag1", "ag2", "ag3", "ag4", "ag5", "ag6"]
    assert (agents["ag1"]["cluster_id"], agents["ag1"]["allocation_id"]) == ("pod", "alloc-a")
    assert (agents["ag5"]["cluster_id"], agents["ag5"]["allocation_id"]) == (None, None)
    assert agents["ag1"]["machine_type"] == "Bow-2000"
    assert agents["ag1"]["reachable"] is True
    in_pod = http.get(f"{ADMIN}/agents", params={"cluster": "pod"}).json()["agents"]
    assert [a["id"] for a in in_pod] == ["ag1", "ag2", "ag3", "ag4"]


def test_ids_are_listed_in_natural_order(http: httpx.Client) -> None:
    """ag2 before ag10 in the agent list, and so for clusters and allocations."""
    extra = ["ag10", "ag11", "ag9"]
    for n, agent_id in enumerate(extra):
        body = {"id": agent_id, "host": f"127.9.9.{n + 1}", "port": 8092}
        assert http.post(f"{ADMIN}/agents", json=body).status_code == 201
    try:
        clusters = {"c10": ["ag10"], "c9": ["ag9"]}
        for cluster_id, members in clusters.items():
            body = {"id": cluster_id, "agent_ids": members}
            made = http.post(f"{ADMIN}/clusters", json=body)
            assert made.status_code == 201, made.text
        for cluster_id in clusters:
            body = {"id": f"a-{cluster_id}", "cluster_id": cluster_id, "size": 4}
            made = http.post(f"{ADMIN}/allocations", json=body)
            assert made.status_code == 201, made.text
        agents = [a["id"] for a in http.get(f"{ADMIN}/agents").json()["agents"]]
        assert agents == ["ag1", "ag2", "ag3", "ag4", "ag5", "ag6", "ag9", "ag10", "ag11"]
        listed = [c["id"] for c in http.get(f"{ADMIN}/clusters").json()["clusters"]]
        assert listed.index("c9") < listed.index("c10")
        allocations = [a["id"] for a in http.get(f"{ADMIN}/allocations").json()["allocations"]]
        assert allocations.index("a-c9") < allocations.index("a-c10")
    finally:
        for cluster_id in ("c10", "c9"):
            http.delete(f"{ADMIN}/clusters/{cluster_id}", params={"force": True})
        for agent_id in extra:
            http.delete(f"{ADMIN}/agents/{agent_id}", params={"force": True})


def test_create_and_remove_an_agent(http: httpx.Client) -> None:
    """POST /agents registers an agent (201), a second time is 409, DELETE forgets it."""
    body = {"id": "extra", "host": "127.9.9.9", "port": 8092}
    created = http.post(f"{ADMIN}/agents", json=body)
    assert created.status_code == 201, created.text
    assert created.json()["id"] == "extra"
    assert error_of(http.post(f"{ADMIN}/agents", json=body)) == (409, "ALREADY_EXISTS")
    assert http.delete(f"{ADMIN}/agents/extra").status_code == 204
    assert error_of(http.delete(f"{ADMIN}/agents/extra")) == (404, "NOT_FOUND")


def test_an_agent_in_a_cluster_cannot_be_removed(http: httpx.Client) -> None:
    assert error_of(http.delete(f"{ADMIN}/agents/ag1")) == (409, "FAILED_PRECONDITION")


def test_forced_agent_removal_takes_its_cluster_along(
    http: httpx.Client, spare_cluster: str
) -> None:
    """DELETE /agents/ag6?force=true removes cluster spare (allocation and all) first; ag5
    stays registered; ag6 is registered again afterwards (its agent still runs)."""
    reply = http.post(
        f"{ADMIN}/allocations", json={"id": "alloc-f", "cluster_id": spare_cluster, "size": 8}
    )
    assert reply.status_code == 201, reply.text
    ag6 = {a["id"]: a for a in http.get(f"{ADMIN}/agents").json()["agents"]}["ag6"]
    assert http.delete(f"{ADMIN}/agents/ag6", params={"force": "true"}).status_code == 204
    agents = [a["id"] for a in http.get(f"{ADMIN}/agents").json()["agents"]]
    assert "ag6" not in agents
    assert "ag5" in agents
    clusters = [c["id"] for c in http.get(f"{ADMIN}/clusters").json()["clusters"]]
    assert spare_cluster not in clusters
    allocations = [a["id"] for a in http.get(f"{ADMIN}/allocations").json()["allocations"]]
    assert "alloc-f" not in allocations
    again = {"id": "ag6", "host": ag6["host"], "port": ag6["port"]}
    assert http.post(f"{ADMIN}/agents", json=again).status_code == 201


def test_invalid_agent_is_400(http: httpx.Client) -> None:
    """A port out of range or a host with spaces is refused before anything is stored."""
    assert error_of(http.post(f"{ADMIN}/agents", json={"id": "a", "host": "h", "port": 0})) == (
        400,
        "INVALID_ARGUMENT",
    )
    reply = http.post(f"{ADMIN}/agents", json={"id": "a", "host": "two words", "port": 1})
    assert error_of(reply) == (400, "INVALID_ARGUMENT")


def test_discover_probes_addresses(http: httpx.Client, pod: LivePod) -> None:
    """POST /agents/discover identifies a running agent and reports it as known."""
    host, port = pod.agent_address("ag5")
    found = http.post(f"{ADMIN}/agents/discover", json={"addresses": [f"{host}:{port}"]})
    assert found.status_code == 200, found.text
    (entry,) = found.json()["agents"]
    assert (entry["agent_id"], entry["known"], entry["added"], entry["error"]) == (
        "ag5",
        True,
        False,
        "",
    )
    for bad in ("nohost", "host:99999", "two words:1"):
        reply = http.post(f"{ADMIN}/agents/discover", json={"addresses": [bad]})
        assert error_of(reply) == (400, "INVALID_ARGUMENT"), bad


def test_clusters_are_created_listed_tested_and_removed(
    http: httpx.Client, spare_cluster: str
) -> None:
    """A cluster of ag5-ag6 appears in the list with its fabric, and passes the link tests."""
    clusters = {c["id"]: c for c in http.get(f"{ADMIN}/clusters").json()["clusters"]}
    assert clusters[spare_cluster] == {
        "id": "spare",
        "agent_ids": ["ag5", "ag6"],
        "num_ipulinkdomains": 1,
        "topology": "torus",
        "cluster_topology": "looped",
        "num_ipus": 8,
        "machine_type": "Bow-2000",
    }
    report = http.post(f"{ADMIN}/clusters/spare/test", json={"tests": ["cabling", "IPU_Link"]})
    assert report.status_code == 200, report.text
    body = report.json()
    assert body["passed"] is True
    assert [r["test"] for r in body["results"]] == [
        "cabling",
        "IPU-Link",
        "GW-Link",
        "Sync-Link",
        "traffic",
    ]
    assert all(r["agents_tested"] == 2 for r in body["results"])
    assert error_of(http.post(f"{ADMIN}/clusters/spare/test", json={"tests": ["smoke"]})) == (
        400,
        "INVALID_ARGUMENT",
    )


def test_a_link_fault_fails_the_ipu_link_test(http: httpx.Client, spare_cluster: str) -> None:
    """An injected link-down shows in the agent's faults and fails the IPU-Link test row."""
    injected = http.post(
        f"{ADMIN}/agents/ag6/faults",
        json={"kind": "link-down", "link_id": "ipulink0", "reason": "cable pulled"},
    )
    try:
        assert injected.status_code == 200, injected.text
        (fault,) = injected.json()["active_faults"]
        assert (fault["kind"], fault["link_id"], fault["reason"]) == (
            "link-down",
            "ipulink0",
            "cable pulled",
        )
        rows = http.post(f"{ADMIN}/clusters/spare/test").json()["results"]
        ipu_link = next(r for r in rows if r["test"] == "IPU-Link")
        assert ipu_link["passed"] is False
        assert any(line.startswith("ag6: ") for line in ipu_link["details"])
    finally:
        cleared = http.delete(f"{ADMIN}/agents/ag6/faults")
    assert cleared.json() == {"agent_id": "ag6", "active_faults": []}


def test_one_fault_is_cleared_by_kind_and_target(http: httpx.Client) -> None:
    """DELETE /faults?kind=ipu&device_id=1 ends that fault and leaves the others."""
    for device in (1, 2):
        reply = http.post(f"{ADMIN}/agents/ag5/faults", json={"kind": "ipu", "device_id": device})
        assert reply.status_code == 200, reply.text
    left = http.delete(f"{ADMIN}/agents/ag5/faults", params={"kind": "ipu", "device_id": 1})
    assert [f["device_id"] for f in left.json()["active_faults"]] == [2]
    assert http.delete(f"{ADMIN}/agents/ag5/faults").json()["active_faults"] == []


def test_agents_show_faults_and_last_seen_after_a_heartbeat(
    http: httpx.Client, pod: LivePod
) -> None:
    """After a heartbeat round the agent list shows when each agent answered and its faults."""
    injected = http.post(f"{ADMIN}/agents/ag5/faults", json={"kind": "agent-slow", "delay_ms": 10})
    assert injected.status_code == 200, injected.text
    try:
        pod.run(pod.controller.leader.monitor.tick())
        agents = {a["id"]: a for a in http.get(f"{ADMIN}/agents").json()["agents"]}
        assert [f["kind"] for f in agents["ag5"]["faults"]] == ["agent-slow"]
        assert agents["ag5"]["faults"][0]["delay_ms"] == 10
        assert agents["ag6"]["faults"] == []
        assert all(a["last_seen"] is not None for a in agents.values())
        page = http.get("/metrics").text
        assert 'vpod_agents{state="reachable"} 6.0' in page
    finally:
        http.delete(f"{ADMIN}/agents/ag5/faults")


def test_last_seen_follows_the_heartbeats_not_the_registration(
    http: httpx.Client, pod: LivePod
) -> None:
    """Every agent's last heartbeat, as listed (and as the pod map shows it), moves on with
    the heartbeats: it is at most ``unreachable_after_s`` old while the agent answers."""

    def last_seen() -> dict[str, datetime]:
        listed = http.get(f"{ADMIN}/agents").json()["agents"]
        return {a["id"]: datetime.fromisoformat(a["last_seen"]) for a in listed}

    pod.run(pod.controller.leader.monitor.tick())
    before = last_seen()
    time.sleep(pod.controller.settings.unreachable_after_s)
    pod.run(pod.controller.leader.monitor.tick())
    after = last_seen()
    assert after.keys() == before.keys()
    assert all(after[a] > before[a] for a in before), (before, after)
    assert max(after.values()) - min(after.values()) < timedelta(
        seconds=pod.controller.settings.unreachable_after_s
    )


def test_a_fault_without_its_target_is_400(http: httpx.Client) -> None:
    reply = http.post(f"{ADMIN}/agents/ag5/faults", json={"kind": "ipu"})
    assert error_of(reply) == (400, "INVALID_ARGUMENT")
    assert "device_id" in reply.json()["error"]["message"]


def test_allocations_are_created_listed_and_removed(http: httpx.Client, spare_cluster: str) -> None:
    """An allocation by size is placed on whole machines; removing it with force drops its
    partitions first."""
    created = http.post(
        f"{ADMIN}/allocations", json={"id": "alloc-s", "cluster_id": "spare", "size": 4}
    )
    assert created.status_code == 201, created.text
    assert created.json()["size"] == 4
    assert len(created.json()["agent_ids"]) == 1
    listed = http.get(f"{ADMIN}/allocations", params={"cluster": "spare"}).json()["allocations"]
    assert [a["id"] for a in listed] == ["alloc-s"]
    part = http.post(
        "/api/v1/partitions", json={"id": "sp1", "size": 4, "allocation_id": "alloc-s"}
    )
    assert part.status_code == 201, part.text
    assert error_of(http.delete(f"{ADMIN}/allocations/alloc-s")) == (409, "FAILED_PRECONDITION")
    assert http.delete(f"{ADMIN}/allocations/alloc-s", params={"force": "true"}).status_code == 204
    assert error_of(http.get("/api/v1/partitions/sp1")) == (404, "NOT_FOUND")


def test_allocation_needs_a_size_or_agents(http: httpx.Client) -> None:
    reply = http.post(f"{ADMIN}/allocations", json={"id": "nothing", "cluster_id": "pod"})
    assert error_of(reply) == (400, "INVALID_ARGUMENT")


def test_an_allocation_that_does_not_fit_is_resource_exhausted(http: httpx.Client) -> None:
    reply = http.post(f"{ADMIN}/allocations", json={"id": "more", "cluster_id": "pod", "size": 4})
    assert error_of(reply) == (409, "RESOURCE_EXHAUSTED")


def test_users_get_their_key_once(http: httpx.Client) -> None:
    """POST /users returns the access key; GET /users never shows it; DELETE removes."""
    created = http.post(f"{ADMIN}/users", json={"id": "ann", "allocation_ids": ["alloc-a"]})
    assert created.status_code == 201, created.text
    body = created.json()
    assert body["user"] == {"id": "ann", "allocation_ids": ["alloc-a"], "admin": False}
    assert len(body["access_key"]) >= 32
    listed = http.get(f"{ADMIN}/users")
    assert {"id": "ann", "allocation_ids": ["alloc-a"], "admin": False} in listed.json()["users"]
    assert body["access_key"] not in listed.text
    allocations = {a["id"]: a for a in http.get(f"{ADMIN}/allocations").json()["allocations"]}
    assert allocations["alloc-a"]["user_ids"] == ["ann"]
    assert error_of(http.post(f"{ADMIN}/users", json={"id": "ann"})) == (409, "ALREADY_EXISTS")
    assert http.delete(f"{ADMIN}/users/ann").status_code == 204
    assert error_of(http.delete(f"{ADMIN}/users/ann")) == (404, "NOT_FOUND")


def test_user_with_an_unknown_allocation_is_404(http: httpx.Client) -> None:
    reply = http.post(f"{ADMIN}/users", json={"id": "bob", "allocation_ids": ["nowhere"]})
    assert error_of(reply) == (404, "NOT_FOUND")


def test_admin_partition_list_has_status_and_locations(http: httpx.Client) -> None:
    """GET /admin/partitions lists partitions of every allocation with their status."""
    assert (
        http.post(
            "/api/v1/partitions", json={"id": "ad1", "size": 1, "allocation_id": "alloc-b"}
        ).status_code
        == 201
    )
    try:
        listed = http.get(f"{ADMIN}/partitions", params={"cluster": "pod"}).json()["partitions"]
        entry = next(p for p in listed if p["partition"]["id"] == "ad1")
        assert entry["status"]["ready_state"] == "ACTIVE"
        (ipu,) = entry["partition"]["ipus"]
        assert (ipu["agent_id"], ipu["device_id"]) == ("ag3", 3)
        other = http.get(f"{ADMIN}/partitions", params={"allocation": "alloc-a"}).json()
        assert "ad1" not in [p["partition"]["id"] for p in other["partitions"]]
    finally:
        http.delete("/api/v1/partitions/ad1")


def test_admin_ipu_attributes(http: httpx.Client) -> None:
    body = http.get(f"{ADMIN}/ipu-attributes", params={"agent": ["ag1", "ag6"]}).json()
    assert [a["agent_id"] for a in body["agents"]] == ["ag1", "ag6"]
    assert all(len(a["ipus"]) == 4 for a in body["agents"])


def test_unknown_cluster_is_404(http: httpx.Client) -> None:
    assert error_of(http.post(f"{ADMIN}/clusters/ghost/test")) == (404, "NOT_FOUND")
    assert error_of(http.delete(f"{ADMIN}/clusters/ghost")) == (404, "NOT_FOUND")
