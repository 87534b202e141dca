"""The fabric views over HTTP: whoami, the pod map, fragmentation and the change stream."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from vpod.controller.caller import SYSTEM

from .live import CALL_TIMEOUT_S, LivePod


def test_whoami_in_open_mode_is_anonymous_admin(http: httpx.Client) -> None:
    """Without --secure everyone may do everything, and whoami says so."""
    answer = http.get("/api/v1/whoami")
    assert answer.status_code == 200
    assert answer.json() == {
        "user_id": "anonymous",
        "admin": True,
        "allocation_ids": None,
        "secure": False,
    }


def test_whoami_names_a_secure_user_and_its_allocations(secure_pod: LivePod) -> None:
    created = secure_pod.run(
        secure_pod.controller.inventory.create_user(SYSTEM, "who", ["alloc-b"])
    )
    with secure_pod.client(
        **{"X-Vipu-User-Id": "who", "X-Vipu-Access-Key": created.access_key}
    ) as h:
        assert h.get("/api/v1/whoami").json() == {
            "user_id": "who",
            "admin": False,
            "allocation_ids": ["alloc-b"],
            "secure": True,
        }
        refused = h.get("/api/v1/admin/pod-map")
        assert refused.status_code == 403
        assert h.get("/api/v1/admin/stream").status_code == 403
    with secure_pod.client() as anonymous:
        assert anonymous.get("/api/v1/whoami").status_code == 401


def _cells(cluster: dict[str, Any]) -> list[dict[str, Any]]:
    return [ipu for d in cluster["domains"] for m in d["machines"] for ipu in m["ipus"]]


def test_pod_map_draws_domains_machines_ipus_and_partitions(http: httpx.Client) -> None:
    created = http.post("/api/v1/partitions", json={"id": "map-p", "size": 4})
    assert created.status_code == 201, created.text
    try:
        answer = http.get("/api/v1/admin/pod-map")
        assert answer.status_code == 200
        (cluster,) = answer.json()["clusters"]
        assert cluster["id"] == "pod"
        assert [len(d["machines"]) for d in cluster["domains"]] == [4]
        machines = cluster["domains"][0]["machines"]
        assert [m["agent_id"] for m in machines] == ["ag1", "ag2", "ag3", "ag4"]
        assert [m["allocation_id"] for m in machines] == [
            "alloc-a",
            "alloc-a",
            "alloc-b",
            "alloc-b",
        ]
        cells = _cells(cluster)
        assert [c["slot"] for c in cells] == list(range(16))
        assert [c["device_id"] for c in cells[:4]] == [3, 2, 1, 0]
        held = {c["slot"] for c in cells if c["partition_id"] == "map-p"}
        (summary,) = [p for p in cluster["partitions"] if p["id"] == "map-p"]
        assert held == set(summary["slots"])
        assert len(held) == 4
        assert summary["ready_state"] == "ACTIVE"
        assert {a["id"]: a["machines"] for a in cluster["allocations"]} == {
            "alloc-a": [0, 1],
            "alloc-b": [2, 3],
        }
        assert all(m["reachable"] for m in machines)
    finally:
        http.delete("/api/v1/partitions/map-p")


def test_pod_map_of_an_unknown_cluster_is_404(http: httpx.Client) -> None:
    answer = http.get("/api/v1/admin/pod-map", params={"cluster": "nope"})
    assert answer.status_code == 404
    assert "nope" in answer.json()["error"]["message"]


def test_fragmentation_shows_what_each_size_would_get(http: httpx.Client) -> None:
    empty = http.get("/api/v1/admin/allocations/alloc-b/fragmentation").json()
    assert empty["size"] == 8
    assert empty["free_ipus"] == 8
    assert empty["largest_free_block"] == 8
    assert [(s["size"], s["fits"]) for s in empty["sizes"]] == [
        (1, True),
        (2, True),
        (4, True),
        (8, True),
    ]
    assert (
        http.post(
            "/api/v1/partitions", json={"id": "frag-1", "size": 1, "allocation_id": "alloc-b"}
        ).status_code
        == 201
    )
    try:
        after = http.get("/api/v1/admin/allocations/alloc-b/fragmentation").json()
        assert after["free_ipus"] == 7
        assert after["largest_free_block"] == 4
        outlook = {s["size"]: s for s in after["sizes"]}
        assert outlook[8]["fits"] is False
        assert outlook[8]["reasons"]
        assert len(outlook[4]["slots"]) == 4
        assert after["free_blocks"] == {"1": 1, "2": 1, "4": 1}
    finally:
        http.delete("/api/v1/partitions/frag-1")
    assert http.get("/api/v1/admin/allocations/nope/fragmentation").status_code == 404


class _Follower:
    """Reads the event stream in a thread, keeping (kind, data, arrival time)."""

    def __init__(self, pod: LivePod) -> None:
        self.events: list[tuple[str, dict[str, Any], float]] = []
        self.hello = threading.Event()
        self._stop = threading.Event()
        self._client = pod.client()
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()
        assert self.hello.wait(CALL_TIMEOUT_S)

    def _read(self) -> None:
        try:
            self._follow()
        except (httpx.HTTPError, OSError):
            if not self._stop.is_set():
                raise

    def _follow(self) -> None:
        kind = ""
        with self._client.stream("GET", "/api/v1/admin/stream") as answer:
            assert answer.headers["content-type"].startswith("text/event-stream")
            for line in answer.iter_lines():
                if self._stop.is_set():
                    return
                if line.startswith("event: "):
                    kind = line[7:]
                elif line.startswith("data: "):
                    if kind == "hello":
                        self.hello.set()
                    self.events.append((kind, json.loads(line[6:]), time.monotonic()))

    def wait_for(self, kind: str, timeout: float, **match: Any) -> tuple[dict[str, Any], float]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for k, data, at in list(self.events):
                if k == kind and all(data.get(f) == v for f, v in match.items()):
                    return data, at
            time.sleep(0.02)
        raise AssertionError(f"no {kind} event matching {match} in {timeout} s: {self.events}")

    def close(self) -> None:
        self._stop.set()
        self._client.close()


@pytest.fixture
def follower(pod: LivePod) -> Iterator[_Follower]:
    follower = _Follower(pod)
    yield follower
    follower.close()


def test_stream_pushes_partition_changes_and_audit_events(
    http: httpx.Client, follower: _Follower
) -> None:
    """A partition created through the API is on the stream within a second, whole."""
    assert http.post("/api/v1/partitions", json={"id": "live-p", "size": 2}).status_code == 201
    answered = time.monotonic()
    created, at = follower.wait_for("partition", 5, id="live-p", ready_state="ACTIVE")
    assert at - answered < 1.0
    assert len(created["slots"]) == 2
    assert created["cluster_id"] == "pod"
    follower.wait_for("audit", 5, action="create_partition", target="live-p")
    assert http.delete("/api/v1/partitions/live-p").status_code == 204
    removed, _ = follower.wait_for("partition", 5, id="live-p", change="removed")
    assert removed["slots"] == created["slots"]


def test_swagger_ui_loads_every_asset_from_the_controller(http: httpx.Client) -> None:
    """/docs works without the Internet: no CDN, every script and style served locally."""
    page = http.get("/docs")
    assert page.status_code == 200
    assert "cdn" not in page.text
    assert "https://" not in page.text
    for asset in ("swagger-ui-bundle.js", "swagger-ui.css", "favicon-32x32.png"):
        assert f"/docs/assets/{asset}" in page.text
        served = http.get(f"/docs/assets/{asset}")
        assert served.status_code == 200, asset
        assert len(served.content) > 500


def test_the_rest_client_reads_the_fabric_and_follows_changes(pod: LivePod) -> None:
    """vpod.client's RestClient: whoami, pod map, fragmentation and the change stream."""
    from vpod.client import RestClient, RestSettings

    with RestClient(RestSettings(url=pod.url)) as rest:
        assert rest.whoami().admin is True
        (cluster,) = rest.pod_map()
        assert cluster.id == "pod"
        assert [ipu.slot for ipu in cluster.ipus()] == list(range(16))
        assert cluster.allocation_machines() == {"alloc-a": (0, 1), "alloc-b": (2, 3)}
        assert [(a.id, a.size) for a in cluster.allocations] == [("alloc-a", 8), ("alloc-b", 8)]
        assert rest.fragmentation("alloc-a").largest_free_block == 8
        seen: list[Any] = []
        opened = threading.Event()

        def follow() -> None:
            for change in rest.changes():
                if change.kind == "hello":
                    opened.set()
                    continue
                seen.append(change)
                if change.kind == "partition" and change.data["id"] == "client-p":
                    return

        reader = threading.Thread(target=follow, daemon=True)
        reader.start()
        assert opened.wait(CALL_TIMEOUT_S)
        rest.create_partition("client-p", 1, allocation="alloc-a")
        try:
            reader.join(10)
            assert not reader.is_alive()
            assert seen[-1].data["cluster_id"] == "pod"
            assert len(seen[-1].data["slots"]) == 1
        finally:
            rest.remove_partition("client-p")
