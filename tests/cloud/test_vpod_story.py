"""The spec's story through the REST API, on a real controller with real emulated agents.

One 16-IPU pod is shared by three tenants: ``acme`` creates a virtual vPOD-8
with a data volume, attaches a second volume, opens the server's shell and
creates and removes partitions with the real ``vipu`` CLI (which sees only
its own allocation), suspends (billing stops, its IPUs go to ``initech``),
fails to resume while the pod is full (the cluster stays SUSPENDED), resumes
once there is room (its partitions are back with the same ids, its key
unchanged), and deletes the cluster. The cloud's clock is moved by hand so
that the invoice can be checked to the minute.

The steps depend on each other, so they form one test, step by step.
"""

from __future__ import annotations

from decimal import Decimal

from vpod.controller.caller import SYSTEM

from .conftest import error, in_shell, ok, partition_ids, run_task
from .live import LiveCloud, isolated_networks

VPOD8 = "g2a-ai-fast-v1pod-8"


def _hcl(live: LiveCloud, cluster: dict[str, object]) -> str:
    from vpod.cloud.drivers import Layout

    server = cluster["servers"][0]  # type: ignore[index]
    root = Layout(live.data_dir / "cloud").server_root(server["id"])
    return (root / "etc" / "vipu" / "vipu-cli.hcl").read_text()


def test_the_vpod_story_through_the_rest_api(live: LiveCloud) -> None:
    """Create, attach, partitions in the shell, suspend, resume (refused, then done), delete."""
    acme, globex, initech = (live.client(live.project(p)) for p in ("acme", "globex", "initech"))
    controller = live.running.controller

    # 1. acme creates a virtual vPOD-8 with a new data volume: the spec's phases, in order.
    body = {"name": "train", "flavor": VPOD8, "volumes": [{"name": "data", "size_gib": 100}]}
    task = run_task(live, acme, "POST", "/clusters", json=body)
    assert task["state"] == "FINISHED", task
    assert (
        [p["phase"] for p in task["phases"]]
        == task["expected_phases"]
        == [
            "NETWORK",
            "VIPU_CONTROLLER",
            "IPU_SERVERS",
            "POPLAR_SERVERS",
            "POST_DEPLOY_SETUP",
            "FINISHED",
        ]
    )
    cluster = ok(acme.get("/clusters/train"))
    assert (cluster["status"], cluster["servers"][0]["status"]) == ("ACTIVE", "ACTIVE")
    assert {v["name"]: v["status"] for v in cluster["volumes"]} == {
        "data": "in-use",
        "train-poplar-1-boot": "in-use",
    }
    allocation_id = cluster["vipu"]["allocation_id"]
    allocation = live.run(controller.inventory.allocation_for(SYSTEM, allocation_id))
    assert allocation.size == 8
    user = live.run(controller.ctx.db(controller.ctx.db.store.get_user, cluster["vipu"]["user_id"]))
    assert user.allocation_ids == (allocation_id,)

    # 2. A second data volume, attached later, shows up on the server under /mnt.
    volume = run_task(live, acme, "POST", "/volumes", json={"name": "scratch", "size_gib": 20})
    assert volume["state"] == "FINISHED"
    attach = run_task(live, acme, "POST", "/volumes/scratch/attach", json={"cluster": "train"})
    assert attach["state"] == "FINISHED", attach
    assert ok(acme.get("/volumes/scratch"))["status"] == "in-use"
    mounted = in_shell(acme, "train", "touch ../mnt/scratch/hello && ls ../mnt")
    assert mounted.stdout.split() == ["data", "scratch"], mounted.stderr

    # 3. The shell has vipu configured for the vPOD's allocation: partitions come and go.
    made = in_shell(
        acme,
        "train",
        "vipu create partition p1 --size 4"
        " && vipu create partition p2 --size 4 && vipu remove partition p2"
        " && vipu list partitions",
    )
    assert made.returncode == 0, made.stderr
    assert partition_ids(made.stdout) == ["p1"]
    env = in_shell(acme, "train", "echo $IPUOF_VIPU_API_HOST:$IPUOF_VIPU_API_PORT")
    # a server with a network of its own dials the controller at its gateway
    host = "169.254." if isolated_networks() else "127.0.0.1"
    assert env.stdout.strip().startswith(host)
    assert env.stdout.strip().endswith(f":{live.user_port}")
    # Every vipu command works with the server's config, which names only the user endpoint.
    allocations = in_shell(acme, "train", "vipu list allocations")
    assert allocations.returncode == 0, allocations.stderr
    assert [row.split("|")[0].strip() for row in allocations.stdout.splitlines()[2:]] == [
        allocation_id
    ]

    # 4. Another tenant's vPOD sees none of it, and cannot touch p1.
    assert (
        run_task(
            live,
            globex,
            "POST",
            "/clusters",
            json={"name": "other", "flavor": "g2a-ai-fast-v1pod-4"},
        )["state"]
        == "FINISHED"
    )
    theirs = in_shell(globex, "other", "vipu list partitions")
    assert theirs.returncode == 0, theirs.stderr
    assert partition_ids(theirs.stdout) == []
    assert in_shell(globex, "other", "vipu remove partition p1").returncode != 0
    error(globex.get("/clusters/train"), 404, "NOT_FOUND")

    # 5. Ten minutes later acme suspends: partitions saved, IPUs released, servers shelved.
    key_before = _hcl(live, cluster)
    live.clock.advance(10 * 60)
    task = run_task(live, acme, "POST", "/clusters/train/suspend")
    assert [p["phase"] for p in task["phases"]] == ["CLUSTER_SUSPEND", "FINISHED"]
    cluster = ok(acme.get("/clusters/train"))
    assert (cluster["status"], cluster["saved_partitions"]) == ("SUSPENDED", ["p1"])
    assert cluster["servers"][0]["status"] == "SHELVED_OFFLOADED"
    assert {v["status"] for v in cluster["volumes"]} == {"in-use"}
    assert (
        live.run(controller.ctx.db(controller.ctx.db.store.find_allocation, allocation_id)) is None
    )
    assert cluster["vipu"]["allocation_id"] is None  # released: not shown as if still held
    assert cluster["vipu"]["user_id"] == f"vpod-{cluster['id']}"  # the user stays, key and all
    assert "resume it first" in error(acme.get("/clusters/train/shell"), 409, "FAILED_PRECONDITION")

    # 6. Its IPUs are free for others: initech fits a vPOD-8 now (4 + 8 of 16 IPUs).
    assert (
        run_task(live, initech, "POST", "/clusters", json={"name": "batch", "flavor": VPOD8})[
            "state"
        ]
        == "FINISHED"
    )

    # 7. Thirty minutes later, resume fails cleanly: no room; the cluster stays SUSPENDED.
    live.clock.advance(30 * 60)
    # Refused at admission (before a task starts): a resume never takes what others hold.
    refused = error(acme.post("/clusters/train/resume"), 409, "RESOURCE_EXHAUSTED")
    assert "cannot resume cluster train: no capacity" in refused
    assert "stays SUSPENDED" in refused
    cluster = ok(acme.get("/clusters/train"))
    assert (cluster["status"], cluster["saved_partitions"]) == ("SUSPENDED", ["p1"])
    assert cluster["servers"][0]["status"] == "SHELVED_OFFLOADED"
    assert cluster["vipu"]["allocation_id"] is None

    # 8. initech leaves; acme resumes: same user and key, p1 back with its id.
    assert run_task(live, initech, "DELETE", "/clusters/batch")["state"] == "FINISHED"
    task = run_task(live, acme, "POST", "/clusters/train/resume")
    assert task["state"] == "FINISHED", task
    cluster = ok(acme.get("/clusters/train"))
    assert (cluster["status"], cluster["saved_partitions"]) == ("ACTIVE", None)
    assert cluster["vipu"]["allocation_id"] == allocation_id
    assert _hcl(live, cluster) == key_before
    listed = in_shell(acme, "train", "vipu list partitions")
    assert listed.returncode == 0, listed.stderr
    assert partition_ids(listed.stdout) == ["p1"]
    assert "ACTIVE" in listed.stdout
    assert in_shell(acme, "train", "cat ../mnt/scratch/hello && echo kept").stdout.strip() == "kept"

    # 9. Five minutes on, acme deletes the cluster; data volumes stay, detached.
    live.clock.advance(5 * 60)
    assert run_task(live, acme, "DELETE", "/clusters/train")["state"] == "FINISHED"
    error(acme.get("/clusters/train"), 404, "NOT_FOUND")
    volumes = {v["name"]: v["status"] for v in ok(acme.get("/volumes"))}
    assert volumes == {"data": "available", "scratch": "available"}
    assert (
        live.run(controller.ctx.db(controller.ctx.db.store.find_allocation, allocation_id)) is None
    )

    # 10. The invoice: compute billed 10 + 5 minutes (not while suspended), volumes 45 minutes.
    invoice = ok(
        acme.get(
            "/invoice", params={"start": "2026-01-01T00:00:00Z", "end": "2026-01-02T00:00:00Z"}
        )
    )
    compute = [line for line in invoice["lines"] if line["resource_type"] == "cluster"]
    assert [(line["item"], line["minutes"]) for line in compute] == [(VPOD8, 15)]
    assert Decimal(compute[0]["amount"]) == Decimal("4.60") * 15 / 60
    by_volume = {
        line["resource_name"]: line["minutes"]
        for line in invoice["lines"]
        if line["resource_type"] == "volume"
    }
    assert by_volume == {"data": 45, "train-poplar-1-boot": 45, "scratch": 45}

    # 11. Day by day, cut 20 minutes into the story: the days add up to the period's invoice.
    period = {"start": "2025-12-31T00:20:00Z", "end": "2026-01-02T00:00:00Z"}
    whole = ok(acme.get("/invoice", params=period))
    daily = ok(acme.get("/invoice/days", params=period))
    assert [(d["start"][:16], d["end"][:16]) for d in daily["days"]] == [
        ("2025-12-31T00:20", "2026-01-01T00:20"),
        ("2026-01-01T00:20", "2026-01-02T00:00"),
    ]
    first, second = (Decimal(d["total"]) for d in daily["days"])
    assert first > 0
    assert second > 0  # the story is cut in two
    assert first + second == Decimal(daily["total"]) == Decimal(whole["total"])
    assert sum(d["minutes"] for d in daily["days"]) == whole["minutes"]
    assert daily["currency"] == whole["currency"]
    long = {"start": "2024-01-01T00:00:00Z", "end": "2026-01-02T00:00:00Z"}
    refused = error(acme.get("/invoice/days", params=long), 400, "INVALID_ARGUMENT")
    assert "366 days" in refused
    for client in (acme, globex, initech):
        client.close()
