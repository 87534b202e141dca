"""The user endpoints over real HTTP: partitions, their status and IPUoF configs, allocations."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from .live import LivePod

API = "/api/v1"


@pytest.fixture
def partition(http: httpx.Client) -> Iterator[str]:
    """An ACTIVE partition ``p4`` of 4 IPUs with 2 GCDs in alloc-a, removed afterwards."""
    reply = http.post(
        f"{API}/partitions",
        json={"id": "p4", "size": 4, "allocation_id": "alloc-a", "num_gcds": 2},
    )
    assert reply.status_code == 201, reply.text
    yield "p4"
    http.delete(f"{API}/partitions/p4", params={"force": "true"})


def error_of(reply: httpx.Response) -> tuple[int, str, str]:
    body = reply.json()["error"]
    return reply.status_code, body["code"], body["message"]


def test_version_names_the_vipu_release(http: httpx.Client) -> None:
    """GET /version gives the V-IPU API version and the IPUoF server version."""
    assert http.get(f"{API}/version").json() == {
        "version": "1.18.0",
        "ipuof_server_version": "2.6.0",
    }


def test_create_returns_the_active_partition_with_its_ipus(http: httpx.Client) -> None:
    """POST /partitions answers 201, a Location, and the partition placed on real agents."""
    reply = http.post(f"{API}/partitions", json={"id": "c8", "size": 8, "allocation_id": "alloc-b"})
    try:
        assert reply.status_code == 201, reply.text
        assert reply.headers["location"] == f"{API}/partitions/c8"
        body = reply.json()
        assert (body["id"], body["allocation_id"], body["cluster_id"]) == ("c8", "alloc-b", "pod")
        assert (body["ready_state"], body["operation_state"]) == ("ACTIVE", "IDLE")
        assert body["ipulink_routing_type"] == "swnc"
        assert body["sync_type"] == "c2-compatible"
        assert body["gw_routing_type"] is None
        assert [ipu["routing_id"] for ipu in body["ipus"]] == list(range(8))
        assert {ipu["agent_id"] for ipu in body["ipus"]} == {"ag3", "ag4"}
        # routing id 0 is IPU #3 of its machine (vipu-system.md §1)
        assert [ipu["device_id"] for ipu in body["ipus"][:4]] == [3, 2, 1, 0]
    finally:
        http.delete(f"{API}/partitions/c8")


def test_enums_take_cli_spellings_and_wire_names(http: httpx.Client) -> None:
    """`dnc`/`c2-compatible` and `IRT_DNC`/`ST_GS2_DEFAULT` create the same partition."""
    for pid, routing, sync in (("e1", "dnc", "c2-compatible"), ("e2", "IRT_DNC", "ST_GS2_DEFAULT")):
        reply = http.post(
            f"{API}/partitions",
            json={
                "id": pid,
                "size": 2,
                "allocation_id": "alloc-a",
                "ipulink_routing_type": routing,
                "sync_type": sync,
            },
        )
        assert reply.status_code == 201, reply.text
        assert (reply.json()["ipulink_routing_type"], reply.json()["sync_type"]) == (
            "dnc",
            "c2-compatible",
        )
    for pid in ("e1", "e2"):
        assert http.delete(f"{API}/partitions/{pid}").status_code == 204


def test_get_list_and_status(http: httpx.Client, partition: str) -> None:
    """A partition is listed, readable alone, filtered by allocation, and has a status."""
    assert http.get(f"{API}/partitions/{partition}").json()["num_gcds"] == 2
    listed = http.get(f"{API}/partitions").json()["partitions"]
    assert partition in [p["id"] for p in listed]
    other = http.get(f"{API}/partitions", params={"allocation": "alloc-b"}).json()
    assert partition not in [p["id"] for p in other["partitions"]]
    status = http.get(f"{API}/partitions/{partition}/status").json()
    assert status == {
        "partition_id": partition,
        "ready_state": "ACTIVE",
        "operation_state": "IDLE",
        "errors": [],
        "max_auto_reset_retries": 3,
        "auto_reset_retry_count": 0,
        "last_auto_reset_time": None,
    }


def test_ipuof_config_of_one_gcd_is_the_static_file(http: httpx.Client, partition: str) -> None:
    """?gcd=1 gives exactly `<partition>_gcd1.conf`: its devices and attributes (§5)."""
    reply = http.get(f"{API}/partitions/{partition}/ipuof-config", params={"gcd": 1})
    assert reply.status_code == 200, reply.text
    assert reply.headers["content-disposition"] == 'inline; filename="p4_gcd1.conf"'
    body = reply.json()
    assert set(body) == {"devices", "attributes"}
    assert [d["routing_id"] for d in body["devices"]] == [2, 3]
    assert set(body["devices"][0]) == {
        "ip",
        "server_port",
        "rdma_port",
        "device_id",
        "ipulink_segment_id",
        "routing_id",
        "ipu_arch_id",
        "ipu_id",
        "chip_id",
        "gwsw_version",
    }
    assert body["attributes"]["GCD Id"] == "1"
    assert body["attributes"]["Sync Type"] == "c2-compatible"


def test_ipuof_config_of_every_gcd_names_the_files(http: httpx.Client, partition: str) -> None:
    """Without ?gcd the body maps each file name to its content."""
    body = http.get(f"{API}/partitions/{partition}/ipuof-config").json()
    assert body["partition_id"] == partition
    assert sorted(body["files"]) == ["p4_gcd0.conf", "p4_gcd1.conf"]
    single = http.get(f"{API}/partitions/{partition}/ipuof-config", params={"gcd": 0}).json()
    assert body["files"]["p4_gcd0.conf"] == single


def test_ipuof_config_for_a_gcd_the_partition_lacks_is_400(
    http: httpx.Client, partition: str
) -> None:
    """?gcd=2 on a 2-GCD partition is an invalid argument naming the valid range."""
    status, code, message = error_of(
        http.get(f"{API}/partitions/{partition}/ipuof-config", params={"gcd": 2})
    )
    assert (status, code) == (400, "INVALID_ARGUMENT")
    assert "0..1" in message


def test_reset_keeps_the_partition_active(http: httpx.Client, partition: str) -> None:
    """POST /reset answers 204 and the partition is ACTIVE/IDLE again."""
    assert http.post(f"{API}/partitions/{partition}/reset").status_code == 204
    status = http.get(f"{API}/partitions/{partition}/status").json()
    assert (status["ready_state"], status["operation_state"]) == ("ACTIVE", "IDLE")


def test_repeating_an_identical_create_is_harmless(http: httpx.Client, partition: str) -> None:
    """The same request again returns the same partition; a different one is 409."""
    again = http.post(
        f"{API}/partitions",
        json={"id": "p4", "size": 4, "allocation_id": "alloc-a", "num_gcds": 2},
    )
    assert again.status_code == 201
    assert again.json()["ipus"] == http.get(f"{API}/partitions/p4").json()["ipus"]
    status, code, message = error_of(
        http.post(f"{API}/partitions", json={"id": "p4", "size": 8, "allocation_id": "alloc-a"})
    )
    assert (status, code) == (409, "ALREADY_EXISTS")
    assert "remove it first or choose another id" in message


def test_delete_frees_the_ipus(http: httpx.Client) -> None:
    """After DELETE the partition is gone (404) and its IPUs can be used again."""
    assert (
        http.post(
            f"{API}/partitions", json={"id": "d8", "size": 8, "allocation_id": "alloc-b"}
        ).status_code
        == 201
    )
    assert http.delete(f"{API}/partitions/d8").status_code == 204
    assert error_of(http.get(f"{API}/partitions/d8"))[:2] == (404, "NOT_FOUND")
    assert (
        http.post(
            f"{API}/partitions", json={"id": "d8b", "size": 8, "allocation_id": "alloc-b"}
        ).status_code
        == 201
    )
    assert http.delete(f"{API}/partitions/d8b", params={"force": "true"}).status_code == 204


def test_a_partition_that_does_not_fit_is_409_resource_exhausted(http: httpx.Client) -> None:
    """16 IPUs in an allocation of 8: 409 with code RESOURCE_EXHAUSTED and the reasons."""
    status, code, message = error_of(
        http.post(f"{API}/partitions", json={"id": "big", "size": 16, "allocation_id": "alloc-a"})
    )
    assert (status, code) == (409, "RESOURCE_EXHAUSTED")
    assert message.startswith("partition big of 16 IPUs does not fit")


@pytest.mark.parametrize(
    ("body", "where", "says"),
    [
        ({"id": "x", "size": 3}, None, "partition size 3 is not supported"),
        ({"id": "has space", "size": 4}, "body.id", "is not valid"),
        ({"id": "x", "size": 0}, "body.size", "greater than or equal to 1"),
        (
            {"id": "x", "size": 4, "sync_type": "gs2-independent-rails"},
            "body.sync_type",
            "not supported",
        ),
        (
            {"id": "x", "size": 4, "ipulink_routing_type": "zigzag"},
            "body.ipulink_routing_type",
            "use dnc, swnc, btnc or ringswnc",
        ),
        ({"id": "x", "size": 4, "colour": "red"}, "body.colour", "Extra inputs"),
        ({"size": 4}, "body.id", "Field required"),
        (
            {
                "id": "x",
                "size": 4,
                "ipus": [{"ipulink_domain_topology_id": 0, "topology_id": 0, "routing_id": 0}],
            },
            None,
            "explicit IPUs need",
        ),
    ],
)
def test_invalid_create_requests_are_400_with_the_reason(
    http: httpx.Client, body: dict[str, object], where: str | None, says: str
) -> None:
    """Bad requests are 400 INVALID_ARGUMENT; field problems name the field."""
    reply = http.post(f"{API}/partitions", json={"allocation_id": "alloc-a", **body})
    status, code, message = error_of(reply)
    assert (status, code) == (400, "INVALID_ARGUMENT")
    assert says in message
    if where is not None:
        assert where in [d["location"] for d in reply.json()["error"]["details"]]


def test_malformed_json_is_400(http: httpx.Client) -> None:
    """A body that is not JSON is an invalid argument, not a server error."""
    reply = http.post(
        f"{API}/partitions", content=b'{"id": ', headers={"content-type": "application/json"}
    )
    status, code, message = error_of(reply)
    assert (status, code) == (400, "INVALID_ARGUMENT")
    assert "not valid JSON" in message


def test_unknown_partition_unknown_path_and_wrong_method(http: httpx.Client) -> None:
    """404 for an unknown id and an unknown path; 405 for a method a path lacks."""
    assert error_of(http.get(f"{API}/partitions/nope/status"))[:2] == (404, "NOT_FOUND")
    assert error_of(http.post(f"{API}/partitions/nope/reset"))[:2] == (404, "NOT_FOUND")
    assert error_of(http.delete(f"{API}/partitions/nope"))[:2] == (404, "NOT_FOUND")
    status, code, message = error_of(http.get(f"{API}/partitionz"))
    assert (status, code) == (404, "NOT_FOUND")
    assert "/docs" in message
    assert error_of(http.put(f"{API}/partitions"))[:2] == (405, "METHOD_NOT_ALLOWED")


def test_unknown_allocation_filter_is_404(http: httpx.Client) -> None:
    assert error_of(http.get(f"{API}/partitions", params={"allocation": "zz"}))[:2] == (
        404,
        "NOT_FOUND",
    )


def test_allocations_list_shows_agents_and_partition_counts(
    http: httpx.Client, partition: str
) -> None:
    """GET /allocations lists each allocation's agents, size and partitions."""
    allocations = {a["id"]: a for a in http.get(f"{API}/allocations").json()["allocations"]}
    assert allocations["alloc-a"]["agent_ids"] == ["ag1", "ag2"]
    assert allocations["alloc-a"]["size"] == 8
    assert allocations["alloc-a"]["num_partitions"] == 1
    only = http.get(f"{API}/allocations", params={"cluster": "elsewhere"}).json()
    assert only == {"allocations": []}


def test_ipu_attributes_of_chosen_agents(http: httpx.Client, pod: LivePod) -> None:
    """GET /ipu-attributes?agent=ag2 gives ag2's four IPUs and their attributes."""
    body = http.get(f"{API}/ipu-attributes", params={"agent": "ag2"}).json()
    assert [a["agent_id"] for a in body["agents"]] == ["ag2"]
    ipus = body["agents"][0]["ipus"]
    assert [i["device_id"] for i in ipus] == [0, 1, 2, 3]
    assert ipus[0]["attributes"]["board type"] == "Bow-2000"
    everyone = http.get(f"{API}/ipu-attributes").json()
    assert [a["agent_id"] for a in everyone["agents"]] == [h.agent_id for h in pod.fleet.hosts]
    assert error_of(http.get(f"{API}/ipu-attributes", params={"agent": "ghost"}))[:2] == (
        404,
        "NOT_FOUND",
    )
