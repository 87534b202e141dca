"""Reservation plans on a live secure controller over 4 emulated Bow-2000s (16 IPUs): what
the catalog shows each project, refusals with the numbers, reserved capacity nobody else
takes, the owner's clusters drawing from it, invoices and utilisation, cancellation."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import pytest

from vpod.cli.cloud_client import write_config
from vpod.client import CloudClient

from .conftest import error, ok, run_task
from .live import LiveCloud, start_cloud, stop_cloud

V4 = "g2a-ai-fast-v1pod-4"
V8 = "g2a-ai-fast-v1pod-8"
VPOD = str(Path(sys.executable).with_name("vpod"))


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveCloud]:
    data_dir: Path = tmp_path_factory.mktemp("reservations")
    cloud = start_cloud(data_dir, machines=4)
    try:
        yield cloud
    finally:
        stop_cloud(cloud)


def capacity(live: LiveCloud, token: str, flavor: str) -> int:
    with live.client(token) as http:
        return int(next(f["capacity"] for f in ok(http.get("/flavors")) if f["name"] == flavor))


def test_reserved_capacity_is_the_owners_alone_and_billed_by_the_month(live: LiveCloud) -> None:
    owner, other = live.project("owner"), live.project("other")
    assert capacity(live, owner, V4) == capacity(live, other, V4) == 4

    with live.client(owner) as http:
        reservation = ok(
            http.post("/reservations", json={"flavor": V4, "units": 3, "term": "1y"}), 201
        )
    assert reservation["status"] == "active"
    assert reservation["pool_units"] == 3
    assert Decimal(reservation["price_per_unit_month"]) == (
        Decimal("2.40") * 730 * Decimal("0.70")
    ).quantize(Decimal("0.01"))
    assert capacity(live, owner, V4) == 4  # 3 reserved + 1 on-demand
    assert capacity(live, other, V4) == 1
    assert capacity(live, other, V8) == 0

    with live.client(other) as http:
        refused = error(
            http.post("/reservations", json={"flavor": V4, "units": 2, "term": "3y"}),
            409,
            "RESOURCE_EXHAUSTED",
        )
        assert "needs 2 IPU-Machines" in refused
        assert "so 1 can be reserved" in refused
        error(
            http.post("/reservations", json={"flavor": V4, "units": 1, "term": "2y"}),
            400,
            "INVALID_ARGUMENT",
        )
        error(
            http.post(
                "/reservations", json={"flavor": "bm1-ai-small-v1pod-4", "units": 1, "term": "1y"}
            ),
            400,
            "INVALID_ARGUMENT",
        )
        first = run_task(live, http, "POST", "/clusters", json={"name": "od-1", "flavor": V4})
        assert first["state"] == "FINISHED", first
        blocked = error(
            http.post("/clusters", json={"name": "od-2", "flavor": V4}), 409, "RESOURCE_EXHAUSTED"
        )
        assert "reserved" in blocked
        error(http.get(f"/reservations/{reservation['id']}"), 404, "NOT_FOUND")

    with live.client(owner) as http:
        made = run_task(live, http, "POST", "/clusters", json={"name": "rs-1", "flavor": V4})
        assert made["state"] == "FINISHED", made
        limits = ok(http.post("/check_limits", json={"flavor": V4}))
        assert limits["reserved_free"] == 2
        assert limits["usage"]["reserved_units"] == 3
        start = live.clock.now()
        live.clock.advance(60 * 60)
        invoice = ok(http.get("/invoice", params={"start": start.isoformat()}))
        kinds = {line["resource_type"]: line["billing"] for line in invoice["lines"]}
        assert kinds == {"reservation": "reserved", "volume": "on_demand"}, invoice
        # the cluster ran on the reservation: no minute of it is on an on-demand line
        reserved = next(line for line in invoice["lines"] if line["billing"] == "reserved")
        assert reserved["quantity"] == 3
        assert reserved["minutes"] == 60
        listed = ok(http.get("/reservations", params={"start": start.isoformat()}))
        use = listed[0]["utilisation"]
        assert use["reserved_unit_minutes"] == 180
        assert use["used_unit_minutes"] == 60

        cancelled = ok(http.delete(f"/reservations/{reservation['id']}"))
        assert cancelled["status"] == "cancelled"
        error(http.delete(f"/reservations/{reservation['id']}"), 409, "FAILED_PRECONDITION")
    assert capacity(live, other, V4) == 2  # the reservation's free units are everyone's again

    with live.client(other) as http:
        invoice = ok(http.get("/invoice", params={"start": start.isoformat()}))
        kinds = {line["resource_type"]: line["billing"] for line in invoice["lines"]}
        assert kinds == {"cluster": "on_demand", "volume": "on_demand"}, invoice


def test_the_cli_and_the_python_client(live: LiveCloud, tmp_path: Path) -> None:
    """`vpod reservation create|list|show|cancel` as real processes; CloudClient alike."""
    config = tmp_path / "vpod-cli.toml"
    write_config(config, live.url, live.project("clients"), "clients")
    env = {k: v for k, v in os.environ.items() if not k.startswith("VPOD_")}
    env["VPOD_CONFIG"] = str(config)

    def vpod(*args: str, code: int = 0) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [VPOD, "reservation", *args], env=env, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == code, done.stderr
        return done

    made = json.loads(vpod("create", "--flavor", V4, "--units", "1", "--json").stdout)
    assert made["units"] == 1
    assert made["term"] == "1y"
    listed = vpod("list").stdout
    assert made["id"] in listed
    assert "active" in listed
    assert "Utilisation" in vpod("show", made["id"]).stdout
    bad = vpod("create", "--flavor", V4, "--units", "0", code=2)
    assert "0" in bad.stderr
    missing = vpod("show", "rsv-nope", code=1)
    assert missing.stderr.startswith("error:")
    assert "does not exist" in missing.stderr
    with CloudClient.from_config(config, env={}) as client:
        assert [r.id for r in client.list_reservations()] == [made["id"]]
        cancelled = client.cancel_reservation(made["id"])
    assert cancelled.status == "cancelled"
    assert cancelled.cancelled_at is not None
    assert "cancelled" in vpod("show", made["id"]).stdout
