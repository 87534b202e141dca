"""vpod-run: instances over one partition with consistent POPDIST_*, nothing left behind."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

from .conftest import BIN, Apps, eventually

SHOW_ENV = (
    "import json, os; print(json.dumps({k: v for k, v in os.environ.items()"
    " if k.startswith(('POPDIST_', 'IPUOF_', 'POPLAR_'))}), flush=True)"
)


def instance_lines(stdout: str) -> dict[int, list[str]]:
    """The launcher's output by instance: ``[i] text`` lines."""
    lines: dict[int, list[str]] = {}
    for line in stdout.splitlines():
        if line.startswith("["):
            index, _, text = line[1:].partition("] ")
            lines.setdefault(int(index), []).append(text)
    return lines


def run_launcher(apps: Apps, *args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / "vpod-run"), *args],
        env=apps.env(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_four_instances_of_two_replicas_on_16_ipus(apps: Apps) -> None:
    """Every instance sees the same totals, its own offset; offsets cover replicas 0..7 once;
    the workloads hold disjoint IPUs covering the 16; the partition is gone afterwards."""
    before = apps.partition_ids()
    command = f'{sys.executable} -c "{SHOW_ENV}" && {BIN / "vpod-workload"} --steps 3 --json'
    done = run_launcher(
        apps, "--num-replicas", "8", "--ipus-per-replica", "2", "--num-instances", "4",
        "--", "sh", "-c", command,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    lines = instance_lines(done.stdout)
    assert sorted(lines) == [0, 1, 2, 3]
    envs = {i: json.loads(out[0]) for i, out in lines.items()}
    partitions = {e["IPUOF_VIPU_API_PARTITION_ID"] for e in envs.values()}
    assert len(partitions) == 1
    covered: list[int] = []
    for index, env in envs.items():
        assert env["POPDIST_NUM_TOTAL_REPLICAS"] == "8"
        assert env["POPDIST_NUM_IPUS_PER_REPLICA"] == "2"
        assert env["POPDIST_NUM_LOCAL_REPLICAS"] == "2"
        assert env["POPDIST_LOCAL_INSTANCE_INDEX"] == str(index)
        assert env["IPUOF_VIPU_API_PORT"] == str(apps.pod.user_port)
        assert json.loads(env["POPLAR_TARGET_OPTIONS"])["instanceSize"] == "4"
        offset = int(env["POPDIST_REPLICA_INDEX_OFFSET"])
        covered += range(offset, offset + 2)
    assert sorted(covered) == list(range(8))
    held = [json.loads(out[-1]) for out in lines.values()]
    routing = sorted(ipu["routing_id"] for run in held for ipu in run["ipus"])
    assert routing == list(range(16))
    assert all(run["steps"] == 3 for run in held)
    assert f"created partition {partitions.pop()} of 16 IPUs" in done.stderr
    assert apps.partition_ids() == before


def test_ctrl_c_in_the_middle_leaves_nothing_behind(apps: Apps, tmp_path: Path) -> None:
    before = apps.partition_ids()
    marker = "4242.5"  # a duration no other test uses, to find the instances' processes
    launcher = subprocess.Popen(
        [
            str(BIN / "vpod-run"), "--num-replicas", "8", "--ipus-per-replica", "2",
            "--num-instances", "4", "--", str(BIN / "vpod-workload"), "--seconds", marker,
        ],
        env=apps.env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    assert launcher.stdout is not None
    attached = 0
    while attached < 4:
        line = launcher.stdout.readline()
        assert line, "the launcher ended before every instance attached"
        attached += " attached device " in line
    assert len(workloads(marker)) == 4
    launcher.send_signal(signal.SIGINT)
    out, err = launcher.communicate(timeout=60)
    assert launcher.returncode == 130, err
    assert "interrupted after" in out
    assert "removed partition" in err
    assert apps.partition_ids() == before
    eventually(lambda: not workloads(marker), "no instance is left running", 5)


def test_sigkill_of_the_launcher_ends_every_instance(apps: Apps) -> None:
    """The launcher runs no code when SIGKILLed: Linux ends its instances (a parent-death
    signal each asked for before exec), and their IPUs are free again."""
    marker = "4343.5"
    launcher = subprocess.Popen(
        [
            str(BIN / "vpod-run"), "--num-replicas", "4", "--ipus-per-replica", "1",
            "--num-instances", "4", "--", str(BIN / "vpod-workload"), "--seconds", marker,
        ],
        env=apps.env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )  # fmt: skip
    assert launcher.stdout is not None
    attached = 0
    while attached < 4:
        line = launcher.stdout.readline()
        assert line, "the launcher ended before every instance attached"
        attached += " attached device " in line
    started = {pid: start_time(pid) for pid in workloads(marker)}
    assert len(started) == 4
    launcher.kill()
    launcher.wait(timeout=10)
    eventually(lambda: not workloads(marker), "no instance outlives the launcher", 10)
    # An exiting process has already lost its command line but is not yet a zombie, so
    # the instances themselves are watched until each is gone (or only a zombie).
    eventually(
        lambda: not [pid for pid, began in started.items() if running(pid, began)],
        "every instance has ended",
        10,
    )


def process_stat(pid: int) -> list[str] | None:
    """The fields of /proc/PID/stat after the command name, or None once it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()


def start_time(pid: int) -> str | None:
    fields = process_stat(pid)
    return None if fields is None else fields[19]


def running(pid: int, began: str | None) -> bool:
    """Still the same process (not a later one given its pid), alive and not a zombie."""
    fields = process_stat(pid)
    return fields is not None and fields[19] == began and fields[0] != "Z"


def test_the_worst_exit_status_wins_and_a_failure_stops_the_others(apps: Apps) -> None:
    before = apps.partition_ids()
    script = 'if [ "$POPDIST_LOCAL_INSTANCE_INDEX" = 1 ]; then exit 3; fi; exec sleep 60'
    started = time.monotonic()
    done = run_launcher(
        apps, "--num-replicas", "2", "--ipus-per-replica", "1", "--num-instances", "2",
        "--", "sh", "-c", script,
    )  # fmt: skip
    assert done.returncode == 3, done.stderr
    assert time.monotonic() - started < 40, "the sleeping instance was not stopped"
    assert apps.partition_ids() == before


def test_an_existing_partition_is_reused_and_kept(apps: Apps) -> None:
    # Two short instances need not overlap: the first one's detach would auto-reset the
    # partition under the second (vipu-system.md, section 4). This test is about reuse.
    pid = apps.fresh_partition("apps-reuse", 4, disable_auto_reset=True)
    done = run_launcher(
        apps, "--num-replicas", "2", "--ipus-per-replica", "2", "--num-instances", "2",
        "--vipu-partition", pid, "--", str(BIN / "vpod-workload"), "--steps", "2",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert f"using partition {pid}" in done.stderr
    assert pid in apps.partition_ids()
    wrong = run_launcher(
        apps, "--num-replicas", "4", "--ipus-per-replica", "2", "--vipu-partition", pid,
        "--", "true",
    )  # fmt: skip
    assert wrong.returncode == 2
    assert f"partition {pid} has 4 IPUs but 4 replicas of 2 IPUs need 8" in wrong.stderr
    assert wrong.stderr.count("\n") == 1
    apps.remove(pid)


def test_shapes_no_partition_can_run_are_usage_errors(apps: Apps) -> None:
    for args, words in [
        (["--num-replicas", "3", "--ipus-per-replica", "2", "--num-instances", "2"], "divide"),
        (["--num-replicas", "4", "--ipus-per-replica", "3"], "1, 2 or 4"),
        (["--num-replicas", str(2**70), "--ipus-per-replica", "1"], "at most 4096"),
        (["--num-replicas", "2048", "--ipus-per-replica", "4"], "need 8192 IPUs"),
    ]:
        done = run_launcher(apps, *args, "--", "true")
        assert done.returncode == 2
        assert words in done.stderr


def workloads(marker: str) -> list[int]:
    """Pids of running vpod-workload processes started with ``--seconds marker``."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if any(a.endswith(b"vpod-workload") for a in argv[:2]) and marker.encode() in argv:
            found.append(int(proc.name))
    return found


def test_update_partition_re_creates_a_partition_of_another_shape(apps: Apps) -> None:
    """--update-partition yes: the partition takes the run's shape (same id) and stays."""
    pid = apps.fresh_partition("apps-update", 4)
    done = run_launcher(
        apps, "--num-replicas", "4", "--ipus-per-replica", "2", "--update-partition", "yes",
        "--vipu-partition", pid, "--", str(BIN / "vpod-workload"), "--steps", "1",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert f"updated partition {pid} to 8 IPUs, 4 replicas (4 IPUs, not 8" in done.stderr
    updated = apps.user.get_partition(pid)
    assert (updated.size, updated.num_replicas) == (8, 4)
    again = run_launcher(
        apps, "--num-replicas", "4", "--ipus-per-replica", "2", "--update-partition", "yes",
        "--vipu-partition", pid, "--", "true",
    )  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert "updated" not in again.stderr  # the same shape: used as it is
    assert f"using partition {pid}" in again.stderr
    apps.remove(pid)


def test_update_partition_refuses_a_partition_in_use_and_says_who_holds_it(apps: Apps) -> None:
    pid = apps.fresh_partition("apps-update-busy", 4)
    holder = apps.start("vpod-workload", "--seconds", "120", env=apps.env(pid))
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().startswith("attached device")
        done = run_launcher(
            apps, "--num-replicas", "2", "--ipus-per-replica", "1", "--update-partition", "yes",
            "--vipu-partition", pid, "--", "true",
        )  # fmt: skip
        assert done.returncode == 1, done.stderr
        assert f"partition {pid} is in use, so it cannot be updated (4 IPUs, not 2" in done.stderr
        assert f"held by pid {holder.pid}" in done.stderr
        assert apps.user.get_partition(pid).size == 4  # untouched
        assert holder.poll() is None
    finally:
        holder.kill()
        holder.wait(timeout=30)
    apps.remove(pid)
