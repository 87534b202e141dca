"""Nothing a caller sends yields a server error: every query parameter of every route.

One secure controller serving the V-IPU REST API and the cloud API (a live
:func:`tests.cloud.live.start_cloud`). The tests walk the controller's own
OpenAPI document, so a route added later is walked too: every integer query
parameter gets values beyond 64 bits and below zero, every time parameter
gets naive and aware times at the ends of what a ``datetime`` holds and
offsets that push them past those ends, every other parameter odd text.
Each answer must be a 4xx with an error sentence, or a success: never a 5xx
or a dropped connection. Bodies larger than the limit are refused with 413.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.cloud.live import LiveCloud, start_cloud, stop_cloud
from vpod.controller.caller import SYSTEM
from vpod.controller.transports.http_limits import MAX_BODY_BYTES

HUGE_INTS = [str(2**64), str(-(2**64)), str(2**63), "9" * 40, "-1", "0"]
HOSTILE_TIMES = [
    "9999-12-31T23:59:59-23:59",
    "9999-12-31T23:59:59.999999Z",
    "0001-01-01T00:00:00+23:59",
    "0001-01-01T00:00:00",
    "9999-12-31T23:59:59",
    "2026-02-30T00:00:00Z",
    "2026-01-01T00:00:00+24:00",
    str(2**64),
    "-62135596801",
    "nan",
]
ODD = ["", "\x00", "é" * 300, "../../etc", "%", "x" * 5000]


@dataclass
class Target:
    live: LiveCloud
    vipu_admin: dict[str, str]
    cloud_admin: dict[str, str]
    tenant: dict[str, str]

    def headers_for(self, path: str) -> dict[str, str]:
        if path.startswith("/api/cloud/v1/admin"):
            return self.cloud_admin
        if path.startswith("/api/cloud/v1"):
            return self.tenant
        return self.vipu_admin


@pytest.fixture(scope="module")
def target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    live = start_cloud(Path(tmp_path_factory.mktemp("hostile")))
    try:
        inventory = live.running.controller.inventory
        key = live.run(inventory.create_user(SYSTEM, "root", [], admin=True)).access_key
        yield Target(
            live,
            {"Authorization": f"Bearer root:{key}"},
            {"Authorization": f"Bearer {live.admin_token}"},
            {"Authorization": f"Bearer {live.project('hostile')}"},
        )
    finally:
        stop_cloud(live)


def _operations(target: Target) -> list[tuple[str, str, list[dict[str, Any]]]]:
    with httpx.Client(base_url=target.live.url, timeout=60) as http:
        document = http.get("/openapi.json").json()
    found = []
    for path, methods in document["paths"].items():
        for method, operation in methods.items():
            params = [p for p in operation.get("parameters", []) if p["in"] == "query"]
            found.append((path, method.upper(), params))
    return found


def _kind(param: dict[str, Any]) -> str:
    schema = param.get("schema", {})
    options = schema.get("anyOf", [schema])
    for option in options:
        if option.get("format") == "date-time":
            return "time"
        if option.get("type") == "integer":
            return "int"
    return "other"


def _check(reply: httpx.Response, what: str) -> None:
    assert reply.status_code < 500, f"{what}: {reply.status_code} {reply.text[:300]}"
    if reply.status_code >= 400:
        message = reply.json()["error"]["message"]
        assert message.strip(), what


def test_every_query_parameter_of_every_route_refuses_hostile_values_with_a_4xx(
    target: Target,
) -> None:
    """Integers beyond 64 bits, times past year 9999 or before year 1 once their offset is
    applied, naive times, odd text: 4xx with a sentence or success, on every route."""
    operations = _operations(target)
    walked: dict[str, int] = {"int": 0, "time": 0, "other": 0}
    with httpx.Client(base_url=target.live.url, timeout=60) as http:
        for path, method, params in operations:
            if method not in ("GET", "DELETE") or path.endswith("/agents/discover"):
                continue  # mutating routes with bodies are the schemathesis runs' part
            concrete = path.replace("{", "").replace("}", "")  # names that match nothing
            for param in params:
                kind = _kind(param)
                values = {"int": HUGE_INTS, "time": HOSTILE_TIMES, "other": ODD}[kind]
                walked[kind] += 1
                for value in values:
                    what = f"{method} {path}?{param['name']}={value[:40]!r}"
                    try:
                        reply = http.request(
                            method,
                            concrete,
                            params={param["name"]: value},
                            headers=target.headers_for(path),
                        )
                    except httpx.HTTPError as exc:
                        pytest.fail(f"{what}: the connection failed: {exc!r}")
                    _check(reply, what)
    assert walked["int"] >= 4, walked
    assert walked["time"] >= 6, walked


@pytest.mark.parametrize(
    "path",
    ["/api/cloud/v1/invoice", "/api/cloud/v1/admin/projects/hostile/invoice"],
)
@pytest.mark.parametrize(
    ("start", "end"),
    [
        ("9999-12-31T23:59:59-23:59", None),
        (None, "0001-01-01T00:00:30+23:59"),
        ("0001-01-01T00:00:00Z", "9999-12-31T23:59:59.999999Z"),
        ("9999-12-31T23:59:59.999999Z", None),
        ("2026-01-01T00:00:00", "2026-02-01T00:00:00Z"),
        ("2026-03-01T00:00:00+14:00", "2026-03-01T00:00:00-12:00"),
    ],
)
def test_invoice_periods_at_the_ends_of_time_are_answered(
    target: Target, path: str, start: str | None, end: str | None
) -> None:
    """Invoice periods at year 1 and year 9999, with offsets at their limits: an invoice
    (nothing to charge) or a 400 saying which bound is wrong."""
    params = {k: v for k, v in (("start", start), ("end", end)) if v is not None}
    with httpx.Client(base_url=target.live.url, timeout=60) as http:
        reply = http.get(path, params=params, headers=target.headers_for(path))
    _check(reply, f"{path} {params}")
    if reply.status_code == 200:
        assert reply.json()["total"] == "0.00"


@pytest.mark.parametrize(
    ("since", "until"),
    [
        ("9999-12-31T23:59:59-23:59", None),
        (None, "0001-01-01T00:00:00+23:59"),
        ("0001-01-01T00:00:00", "9999-12-31T23:59:59.999999"),
        ("2026-01-01T00:00:00", "2026-02-01T00:00:00Z"),
    ],
)
def test_audit_log_filters_at_the_ends_of_time_are_answered(
    target: Target, since: str | None, until: str | None
) -> None:
    """Audit-log filters mixing naive and aware times at the ends of the range: a listing or
    400, and before_id beyond 64 bits is 400."""
    params = {k: v for k, v in (("since", since), ("until", until)) if v is not None}
    with httpx.Client(base_url=target.live.url, headers=target.vipu_admin, timeout=60) as http:
        _check(http.get("/api/v1/admin/events", params=params), str(params))
        reply = http.get("/api/v1/admin/events", params={"before_id": str(2**64)})
        assert reply.status_code == 400, reply.text


@pytest.mark.parametrize("chunked", [False, True])
def test_bodies_larger_than_the_limit_are_refused_with_413(target: Target, chunked: bool) -> None:
    """A body over the limit, declared or streamed in chunks, is 413 with a sentence; the
    server answers the next request as usual."""
    big = b"{" + b" " * (MAX_BODY_BYTES + 10) + b"}"
    content: Any = (
        big if not chunked else iter([big[i : i + 65536] for i in range(0, len(big), 65536)])
    )
    with httpx.Client(base_url=target.live.url, timeout=60) as http:
        reply = http.post(
            "/api/cloud/v1/clusters",
            content=content,
            headers={**target.tenant, "Content-Type": "application/json"},
        )
        assert reply.status_code == 413, reply.text
        assert "larger than" in reply.json()["error"]["message"]
        assert http.get("/healthz").status_code == 200


@pytest.mark.parametrize(
    ("seconds", "nanos", "accepted"),
    [
        (-62135596800, 0, True),  # 0001-01-01T00:00:00Z
        (-62135596801, 0, False),
        (253402300799, 999_999_999, True),  # 9999-12-31T23:59:59.999999999Z
        (253402300800, 0, False),  # a float of datetime.max rounds to this: counted exactly
        (0, 1_000_000_000, False),
        (0, -1, False),
        (2**63 - 1, 0, False),
    ],
)
def test_grpc_timestamps_at_the_edges_of_the_range(
    seconds: int, nanos: int, accepted: bool
) -> None:
    """A Timestamp is read as a time exactly when it lies in years 1 to 9999; outside,
    TimeOutOfRange with a sentence (INVALID_ARGUMENT on the wire)."""
    from google.protobuf.timestamp_pb2 import Timestamp

    from vpod.controller.moments import from_timestamp
    from vpod.domain.moments import TimeOutOfRange

    stamp = Timestamp(seconds=seconds, nanos=nanos)
    if accepted:
        assert from_timestamp(stamp, "since").year in (1, 9999)
    else:
        with pytest.raises(TimeOutOfRange, match="since"):
            from_timestamp(stamp, "since")
