"""Applications on a live pod: finding the partition, attaching, dying, telemetry.

Every tool runs as a user runs it (a console script, a clean environment, a
home of its own) against a real `vpod up`; the IPUs are the emulated
machines' IPUoF endpoints; the controller is asked through `vpod.client`.
"""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest

from vpod.client import Fault, FaultKind
from vpod.domain.partition_states import ReadyState
from vpod.ipuof import query_status
from vpod.ipuof.config import IpuofDevice

from .conftest import Apps, eventually, utilisation_series


def devices_json(apps: Apps, env: dict[str, str]) -> dict[str, object]:
    done = apps.run("ipu-info", "-l", "--json", env=env)
    assert done.returncode == 0, done.stderr
    data: dict[str, object] = json.loads(done.stdout)
    return data


def target_ipus(apps: Apps, pid: str) -> list[IpuofDevice]:
    config = apps.user.ipuof_config(pid)
    return sorted(
        (
            IpuofDevice(
                ip=d.ip, server_port=d.server_port, rdma_port=d.rdma_port,
                device_id=d.device_id, routing_id=d.routing_id,
            )
            for gcd in config.gcds
            for d in gcd.devices
        ),
        key=lambda d: d.routing_id,
    )  # fmt: skip


# ------------------------------------------------------------------ finding the partition


def test_the_environment_finds_the_partition_and_its_2n_minus_1_devices(apps: Apps) -> None:
    """IPUOF_VIPU_API_*: 8 IPUs list as 8 singles, 4 pairs, 2 quads and one device of 8."""
    pid = apps.fresh_partition("apps-env", 8)
    data = devices_json(apps, apps.env(pid))
    devices = data["devices"]
    assert isinstance(devices, list)
    assert data["partition"] == pid
    assert len(devices) == 15
    assert [d["id"] for d in devices] == list(range(15))
    assert [d["routing_id"] for d in devices[:8]] == list(range(8))
    assert [d["members"] for d in devices[8:12]] == [[0, 1], [2, 3], [4, 5], [6, 7]]
    assert [d["members"] for d in devices[12:14]] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert devices[14]["members"] == list(range(8))
    apps.remove(pid)


def test_a_static_file_and_the_conf_directories_find_it_too(apps: Apps, tmp_path: Path) -> None:
    """IPUOF_CONFIG_PATH, else ~/.ipuof.conf.d/*.conf, else /etc/ipuof.conf.d/*.conf; the
    controller's variables win over a file."""
    pid = apps.fresh_partition("apps-static", 4)
    text = json.dumps(apps.user.ipuof_config(pid).files()[0])
    by_path = tmp_path / "anywhere.json"
    by_path.write_text(text)
    found = devices_json(apps, apps.env(IPUOF_CONFIG_PATH=str(by_path)))
    assert (found["source"], len(found["devices"])) == (str(by_path), 7)  # type: ignore[arg-type]

    home = tmp_path / "home"
    (home / ".ipuof.conf.d").mkdir(parents=True)
    (home / ".ipuof.conf.d" / f"{pid}_gcd0.conf").write_text(text)
    found = devices_json(apps, {**apps.env(), "HOME": str(home)})
    assert found["partition"] == pid
    assert str(found["source"]).startswith(str(home))

    both = apps.env(pid, IPUOF_CONFIG_PATH=str(by_path))
    assert str(devices_json(apps, both)["source"]).startswith("controller 127.0.0.1:")

    system_dir = Path("/etc/ipuof.conf.d")
    if os.geteuid() != 0:
        pytest.skip("writing /etc/ipuof.conf.d needs root")
    system_dir.mkdir(exist_ok=True)
    placed = system_dir / f"{pid}_gcd0.conf"
    placed.write_text(text)
    try:
        found = devices_json(apps, apps.env())  # the test home has no ~/.ipuof.conf.d
        assert found["partition"] == pid
        assert str(found["source"]).startswith(str(system_dir))
    finally:
        placed.unlink()
    apps.remove(pid)


@pytest.mark.parametrize(
    ("extra", "words"),
    [
        ({"IPUOF_VIPU_API_PARTITION_ID": "no-such-partition"}, "no-such-partition does not exist"),
        ({"IPUOF_VIPU_API_PARTITION_ID": ""}, "IPUOF_VIPU_API_PARTITION_ID is not"),
    ],
)
def test_a_wrong_or_missing_id_is_one_line_and_exit_2(
    apps: Apps, extra: dict[str, str], words: str
) -> None:
    for tool in ("ipu-info", "vpod-workload"):
        done = apps.run(tool, env=apps.env("placeholder", **extra), timeout=60)
        assert done.returncode == 2, done.stderr
        assert words in done.stderr
        assert done.stderr.count("\n") == 1, done.stderr
        assert "Traceback" not in done.stderr


def test_a_partition_that_becomes_active_late_is_waited_for(apps: Apps) -> None:
    """An IPU fault puts the partition in ERROR: an application with a short timeout fails
    naming the partition and its state; one with a longer timeout waits, and attaches once
    the fault is cleared and the controller has reset the partition."""
    pid = apps.fresh_partition("apps-late", 2)
    where = next(i for i in apps.admin.list_partitions() if i.partition.id == pid).locations[0]
    fault = Fault(FaultKind.IPU, device_id=where.device_id, reason="late-active test")
    apps.admin.inject_fault(where.agent_id, fault)
    try:
        eventually(
            lambda: apps.user.partition_status(pid).ready_state is ReadyState.ERROR,
            "the partition goes to ERROR",
            30,
        )
        short = apps.run(
            "vpod-workload", "--steps", "1", env=apps.env(pid, IPUOF_VIPU_API_TIMEOUT="1")
        )
        assert short.returncode == 1, short.stderr
        assert f"partition {pid} on 127.0.0.1:{apps.pod.user_port} is ERROR" in short.stderr
        assert "not ACTIVE, after 1 s" in short.stderr
        waiting = apps.start(
            "vpod-workload",
            "--steps",
            "3",
            "--json",
            env=apps.env(pid, IPUOF_VIPU_API_TIMEOUT="90"),
        )
        time.sleep(2)
        assert waiting.poll() is None, "it gave up instead of waiting"
    finally:
        apps.admin.clear_fault(where.agent_id)
    out, err = waiting.communicate(timeout=90)
    assert waiting.returncode == 0, err
    assert json.loads(out)["steps"] == 3
    apps.remove(pid)


# --------------------------------------------------------------------------------- attaching


def test_two_processes_racing_for_one_device_exactly_one_wins(apps: Apps) -> None:
    pid = apps.fresh_partition("apps-race", 2)
    env = apps.env(pid)
    racers = [
        apps.start("vpod-workload", "--device", "2", "--seconds", "4", "--json", env=env)
        for _ in range(2)
    ]
    outputs = [p.communicate(timeout=90) for p in racers]
    results = [(p.returncode, out, err) for p, (out, err) in zip(racers, outputs, strict=True)]
    winners = [r for r in results if r[0] == 0]
    losers = [r for r in results if r[0] != 0]
    assert (len(winners), len(losers)) == (1, 1), results
    winner_pid = json.loads(winners[0][1])["pid"]
    assert losers[0][0] == 1
    assert f"already attached by pid {winner_pid} on " in losers[0][2]
    assert "vpod-workload --device 2" in losers[0][2]
    apps.remove(pid)


def test_a_killed_workload_frees_its_device_and_the_auto_reset_applies(apps: Apps) -> None:
    """A killed application's IPUoF connection drops: the agent frees the IPU and reports the
    detach, and the controller resets the partition. That a partition created with
    ``disable_auto_reset`` is left alone, and that one application leaving does not reset
    the partition under another, are rules of the controller, tested round by round on the
    harness (``tests/harness/test_repair.py``)."""
    pid = apps.fresh_partition("apps-kill-reset", 1)
    ipu = target_ipus(apps, pid)[0]
    victim = apps.start("vpod-workload", "--seconds", "120", env=apps.env(pid))
    assert victim.stdout is not None
    assert victim.stdout.readline().startswith("attached device 0")
    assert query_status(ipu, pid).holder.pid == victim.pid
    victim.send_signal(signal.SIGKILL)
    victim.wait(timeout=30)
    freed = eventually(lambda: not query_status(ipu, pid).attached, "the IPU is free", 5)
    assert freed < 5
    eventually(
        lambda: apps.user.partition_status(pid).last_auto_reset_time is not None,
        "the controller reset the partition",
        10,
    )
    status = apps.user.partition_status(pid)
    assert status.auto_reset_retry_count == 1
    assert status.ready_state is ReadyState.ACTIVE
    again = apps.run("vpod-workload", "--steps", "1", env=apps.env(pid))
    assert again.returncode == 0, again.stderr
    apps.remove(pid)


# --------------------------------------------------------------------------------- telemetry


def test_a_workload_shows_busy_on_exactly_its_ipus_within_2_s(apps: Apps) -> None:
    """/metrics, the admin API and ipu-monitor agree: the pair the workload holds is busy,
    every other IPU of the pod idle; after it ends, idle again."""
    pid = apps.fresh_partition("apps-busy", 4)
    env = apps.env(pid)
    workload = apps.start("vpod-workload", "--device", "5", "--seconds", "30", env=env)
    assert workload.stdout is not None
    assert workload.stdout.readline().startswith("attached device 5 (2 IPUs)")
    attached_at = time.monotonic()
    infos = next(i for i in apps.admin.list_partitions() if i.partition.id == pid)
    held = {(loc.agent_id, str(loc.device_id)) for loc in infos.locations if loc.routing_id >= 2}
    assert len(held) == 2

    def busy_in_metrics() -> bool:
        series = utilisation_series(apps.metrics())
        return len(series) == 64 and {k for k, v in series.items() if v > 0} == held

    eventually(busy_in_metrics, "/metrics shows exactly the workload's IPUs busy", 5)
    assert time.monotonic() - attached_at <= 2.0
    rows = {(r["agent_id"], str(r["device_id"])): r for r in apps.telemetry(pid)}
    assert {k for k, r in rows.items() if r["busy"]} == held
    assert all(rows[k]["holder"]["pid"] == workload.pid for k in held)
    monitor = apps.run("ipu-monitor", "--json", env=env)
    assert monitor.returncode == 0, monitor.stderr
    states = [(i["id"], i["state"], i["holder"]["pid"]) for i in json.loads(monitor.stdout)["ipus"]]
    mine = workload.pid
    assert states == [(0, "idle", 0), (1, "idle", 0), (2, "busy", mine), (3, "busy", mine)]
    table = apps.run("ipu-monitor", env=env).stdout
    assert "2 busy, 2 not busy" in table

    workload.send_signal(signal.SIGINT)
    workload.wait(timeout=30)
    ended = time.monotonic()
    eventually(
        lambda: not any(v > 0 for v in utilisation_series(apps.metrics()).values()),
        "every IPU idle",
        5,
    )
    assert time.monotonic() - ended <= 2.0
    apps.remove(pid)
