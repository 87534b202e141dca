"""The audit log through the admin gRPC API, REST and `vipu-admin list events`.

Every change records who asked, what, to which target, how it ended, from
where and when; refused credentials are recorded too. Admins read it with
filters; nobody else can (the refusals are in test_authentication.py).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import grpc
import pytest
from google.protobuf.timestamp_pb2 import Timestamp

from vpod.wire import admin_pb2 as apb
from vpod.wire import virmgrpc_pb2 as pb

from .conftest import Tenants
from .procs import CALL_TIMEOUT_S, credentials, run_tool

pytestmark = pytest.mark.e2e

T = CALL_TIMEOUT_S


def events(tenants: Tenants, **filters: Any) -> list[apb.AuditEvent]:
    reply = tenants.admin_stub().ListEvents(
        apb.ListEventsRequest(**filters), metadata=tenants.md("admin"), timeout=T
    )
    return list(reply.events)


def stamp(moment: datetime) -> Timestamp:
    value = Timestamp()
    value.FromDatetime(moment)
    return value


def test_a_change_records_who_what_target_outcome_source_and_time(tenants: Tenants) -> None:
    # Other modules on this worker share the tenants and make more: pick the fixture's own.
    (event,) = events(tenants, actor="alice", action="create_partition", target="part-of-alice")
    assert event.outcome == "reserved"
    assert event.source.startswith("grpc:ipv4:127.0.0.1:")
    assert "alloc-a" in event.detail
    age = datetime.now(UTC) - event.time.ToDatetime(UTC)
    assert timedelta(0) <= age < timedelta(hours=1)


def test_admin_changes_and_init_are_recorded(tenants: Tenants) -> None:
    """Users made by the admin, and the administrator made by --init, with their origins."""
    created = events(tenants, action="create_user")
    by_target = {e.target: e for e in created}
    # The fixture's users (other modules sharing the tenants may add theirs).
    assert {"admin", "alice", "bob", "carol"} <= set(by_target)
    assert by_target["alice"].actor == "admin"
    assert by_target["admin"].actor == "vipu-server"
    assert by_target["admin"].source.startswith("cli:")
    (mode,) = events(tenants, action="secure_mode")
    assert (mode.target, mode.outcome) == ("controller", "on")


def test_refused_credentials_are_recorded_once_per_caller_and_peer(tenants: Tenants) -> None:
    """Two wrong keys over gRPC and two over HTTP from one host: one event for each transport."""
    stub = tenants.user_stub()
    for _ in range(2):
        with pytest.raises(grpc.RpcError):
            stub.ListPartitions(
                pb.ListPartitionsRequest(), metadata=credentials("mallory", "guess"), timeout=T
            )
        with tenants.http("mallory", "guess") as http:
            assert http.get("/api/v1/partitions").status_code == 401
    denied = events(tenants, actor="mallory", action="authenticate")
    assert sorted(e.source.split(":")[0] for e in denied) == ["grpc", "http"]
    assert {(e.target, e.outcome) for e in denied} == {("user endpoint", "denied")}
    assert {e.detail for e in denied} == {"unknown user id or wrong access key"}


def test_filters_combine_and_pages_go_back(tenants: Tenants) -> None:
    everything = events(tenants, limit=1000)
    ids = [e.id for e in everything]
    assert ids == sorted(ids, reverse=True), "newest first"
    assert [e.id for e in events(tenants, limit=2)] == ids[:2]
    assert [e.id for e in events(tenants, limit=2, before_id=ids[1])] == ids[2:4]
    assert {e.target for e in events(tenants, target="part-of-bob")} == {"part-of-bob"}
    assert {e.outcome for e in events(tenants, outcome="ok")} == {"ok"}
    first, last = everything[-1], everything[0]
    window = events(tenants, since=first.time, until=last.time, limit=1000)
    assert first.id in {e.id for e in window}
    assert last.id not in {e.id for e in window}, "until is exclusive"


@pytest.mark.parametrize(
    ("filters", "words"),
    [
        ({"limit": 5000}, "limit must be between 1 and 1000"),
        (
            {
                "since": stamp(datetime(2026, 2, 1, tzinfo=UTC)),
                "until": stamp(datetime(2026, 1, 1, tzinfo=UTC)),
            },
            "must be before until",
        ),
    ],
)
def test_filters_that_make_no_sense_are_invalid(
    tenants: Tenants, filters: dict[str, object], words: str
) -> None:
    with pytest.raises(grpc.RpcError) as caught:
        events(tenants, **filters)
    assert caught.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    assert words in (caught.value.details() or "")


def test_rest_lists_events_with_filters(tenants: Tenants) -> None:
    with tenants.http("admin") as http:
        reply = http.get(
            "/api/v1/admin/events", params={"actor": "bob", "action": "create_partition"}
        )
        too_many = http.get("/api/v1/admin/events", params={"limit": 0})
    assert reply.status_code == 200
    (event,) = reply.json()["events"]
    assert (event["actor"], event["target"]) == ("bob", "part-of-bob")
    assert event["source"].startswith("grpc:")
    assert too_many.status_code == 400


def test_vipu_admin_list_events_prints_the_table_and_json(tenants: Tenants) -> None:
    config = str(tenants.config_file("admin"))
    table = run_tool(
        "vipu-admin", "--config", config, "list", "events", "--actor", "alice", "--since", "1h"
    )
    assert table.returncode == 0, table.stderr
    header, rule, *rows = table.stdout.splitlines()
    assert [c.strip() for c in header.split("|")] == [
        "Time",
        "Actor",
        "Action",
        "Target",
        "Outcome",
        "Source",
        "Detail",
    ]
    assert set(rule) <= {"-", "+"}
    # The tenants' controller is shared by the session: other modules' calls as alice (denied
    # ones too) may be listed as well; the filter must keep alice's and only hers.
    listed_rows = [[c.strip() for c in row.split("|")][1:5] for row in rows]
    assert ["alice", "create_partition", "part-of-alice", "reserved"] in listed_rows
    assert {row[0] for row in listed_rows} == {"alice"}
    as_json = run_tool(
        "vipu-admin", "--config", config, "list", "events", "--action", "create_user", "--json"
    )
    assert as_json.returncode == 0, as_json.stderr
    listed = json.loads(as_json.stdout)["events"]
    assert {e["target"] for e in listed} >= {"admin", "alice", "bob", "carol"}
    assert {e["action"] for e in listed} == {"create_user"}
    assert all(isinstance(e["id"], str) and e["time"].endswith("Z") for e in listed)


def test_vipu_admin_list_events_refuses_plain_users_and_bad_times(tenants: Tenants) -> None:
    user = run_tool("vipu-admin", "--config", str(tenants.config_file("carol")), "list", "events")
    assert user.returncode == 1
    assert "carol is not an administrator" in user.stderr
    bad = run_tool(
        "vipu-admin",
        "--config",
        str(tenants.config_file("admin")),
        "list",
        "events",
        "--since",
        "last tuesday",
    )
    assert bad.returncode == 2
    assert "neither a time" in bad.stderr
