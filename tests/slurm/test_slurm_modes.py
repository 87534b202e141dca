"""The static and reconfigurable modes end to end: real slurmctld, slurmd, bridge and pod.

One secure pod16 and one-node Slurm per mode (module fixtures): the static
partitions ``1:2,4:2`` as the GRES ``vipu:<size>``, and one shared
reconfigurable partition of 16 IPUs. Jobs attach with ``vpod-workload`` or
the tests' payload through the variables the TaskProlog exports, with their
own partition key; afterwards the keys are revoked, static partitions reset,
and the lasting partitions still there, once each.
"""

from __future__ import annotations

import json
import re
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import tests.e2e.conftest as e2e
from vpod.client import UserClient
from vpod.client.errors import Unauthenticated

from .harness import IPU_JOB, TEST_SETTINGS, SlurmPod, slurm_pod, wait_until

pytestmark = [pytest.mark.system, pytest.mark.e2e, pytest.mark.slow]
FINISHED = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT"}
STATIC = {"slurm_static1_0", "slurm_static1_1", "slurm_static4_0", "slurm_static4_1"}


def _pod(tmp_path_factory: pytest.TempPathFactory, **mode: object) -> Iterator[SlurmPod]:
    # A secure start makes keys with scrypt: on a loaded machine it takes longer than usual.
    ready_timeout = e2e.READY_TIMEOUT_S
    e2e.READY_TIMEOUT_S = max(ready_timeout, 300)
    try:
        yield from slurm_pod(
            tmp_path_factory, {**TEST_SETTINGS, **mode}, shape="pod16", ipus=16, secure=True
        )
    finally:
        e2e.READY_TIMEOUT_S = ready_timeout


@pytest.fixture(scope="module")
def static(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlurmPod]:
    yield from _pod(tmp_path_factory, mode="static", static_partitions="1:2,4:2")


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlurmPod]:
    yield from _pod(tmp_path_factory, mode="reconfigurable", shared_size=16)


def _tool(slurm: SlurmPod, name: str) -> str:
    return str(slurm.cluster.bin_dir / name)


def _finished(slurm: SlurmPod, job_id: str) -> str:
    return slurm.wait_state(job_id, FINISHED, 120)


def _payload(slurm: SlurmPod, seconds: float) -> str:
    return f"{slurm.cluster.bin_dir / 'python'} {IPU_JOB} {seconds}"


def _listing(slurm: SlurmPod) -> dict[str, dict[str, Any]]:
    """Partition id -> its spec (``vipu list partitions --json``; defaults left out)."""
    out = slurm.pod.run("vipu", *slurm._as_admin(), "list", "partitions", "--json").stdout
    return {p["id"]: p.get("spec", {}) for p in json.loads(out)["partitions"]}


def _events(slurm: SlurmPod, action: str, target: str) -> list[dict[str, object]]:
    done = slurm.pod.run(
        "vipu-admin",
        *slurm._as_admin(),
        "list",
        "events",
        "--action",
        action,
        "--target",
        target,
        "--json",
    )
    assert done.returncode == 0, done.stderr
    events: list[dict[str, object]] = json.loads(done.stdout).get("events", [])
    return events


def _refused(client: UserClient) -> bool:
    try:
        client.list_partitions()
    except Unauthenticated:
        return True
    return False


def _key_of(out: str) -> tuple[str, str]:
    found = re.search(r"user=(\S+) key=(\S+)", out)
    assert found, out
    return found[1], found[2]


def _job_files(slurm: SlurmPod, job_id: str) -> list[Path]:
    directory = Path(slurm.cluster.settings.credentials_dir)
    return sorted(directory.glob(f"slurm_{job_id}.*"))


# -- static


def test_static_partitions_are_made_once_and_reused_by_a_restarted_bridge(
    static: SlurmPod,
) -> None:
    listing = _listing(static)
    assert set(listing) >= STATIC
    sizes = {pid: len(listing[pid]["ipus"]) for pid in STATIC}
    assert sizes == {
        "slurm_static1_0": 1,
        "slurm_static1_1": 1,
        "slurm_static4_0": 4,
        "slurm_static4_1": 4,
    }
    static.cluster.kill("bridge", signal.SIGTERM)  # as a service restart
    static.cluster.start_bridge()
    again = _listing(static)
    assert [p for p in again if p.startswith("slurm_")] == [
        p for p in listing if p.startswith("slurm_")
    ]
    assert {pid: again[pid]["ipus"] for pid in STATIC} == {
        pid: listing[pid]["ipus"] for pid in STATIC
    }


def test_a_static_job_runs_on_its_partition_then_it_is_reset_and_its_key_revoked(
    static: SlurmPod,
) -> None:
    vipu = _tool(static, "vipu")
    script = " && ".join(
        [
            _payload(static, 0),
            f"{vipu} get partition $IPUOF_VIPU_API_PARTITION_ID",
            f"{_tool(static, 'vpod-workload')} --seconds 0.2 --json",
            "env | grep ^IPUOF_VIPU_API_ | sort",
            "echo user=$VIPU_CLI_API_USER_ID key=$VIPU_CLI_API_ACCESS_KEY",
        ]
    )
    job = static.sbatch("--gres=vipu:4:1", wrap=script)
    assert _finished(static, job) == "COMPLETED", static.output(job)
    out = static.output(job)
    partition = re.search(r"attached 4 (slurm_static4_\d)", out)
    assert partition, out
    held = partition[1]
    assert f"IPUOF_VIPU_API_PARTITION_ID={held}" in out.splitlines()
    assert f"IPUOF_VIPU_API_PORT={static.pod.user_port}" in out.splitlines()
    assert "IPUOF_VIPU_API_GCD_ID=0" in out.splitlines()
    assert '"ipus": 4' in out or '"members": [0, 1, 2, 3]' in out, out
    user, key = _key_of(out)
    assert user == f"slurm_{job}.job"
    # Freed after the job: its key refused, its files gone, the partition reset by the
    # integration and still there (it is made once).
    wait_until(lambda: not _job_files(static, job), 30, "the job's files to go")
    with UserClient.from_config(
        env={},
        api_host="127.0.0.1",
        api_port=static.pod.user_port,
        api_user_id=user,
        api_access_key=key,
    ) as client:
        wait_until(lambda: _refused(client), 30, "the job's key to be revoked")
    wait_until(
        lambda: any(e["actor"] == "slurm" for e in _events(static, "reset_partition", held)),
        30,
        f"the integration to reset {held}",
    )
    assert held in _listing(static)


def test_two_concurrent_static_jobs_get_different_partitions_and_a_third_waits(
    static: SlurmPod,
) -> None:
    jobs = [static.sbatch("--gres=vipu:4:1", wrap=_payload(static, 6)) for _ in range(3)]
    wait_until(
        lambda: sum("attached 4" in static.output(j) for j in jobs) >= 2, 90, "two jobs to attach"
    )
    running = [j for j in jobs if "attached 4" in static.output(j)]
    held = {re.search(r"attached 4 (\S+)", static.output(j))[1] for j in running}  # type: ignore[index]
    assert held == {"slurm_static4_0", "slurm_static4_1"}
    (waiting,) = set(jobs) - set(running)
    assert static.state(waiting) == "PENDING"  # Slurm counts vipu:4: two exist
    for job in jobs:
        assert _finished(static, job) == "COMPLETED", static.output(job)
    assert re.search(r"attached 4 slurm_static4_[01]", static.output(waiting))


def test_a_static_job_cannot_see_or_touch_another_jobs_partition(static: SlurmPod) -> None:
    holder = static.sbatch("--gres=vipu:4:1", wrap=_payload(static, 60))
    wait_until(lambda: "attached 4" in static.output(holder), 90, "the first job to attach")
    other = re.search(r"attached 4 (\S+)", static.output(holder))[1]  # type: ignore[index]
    vipu = _tool(static, "vipu")
    probe = "; ".join(
        [
            f"{vipu} get partition {other}; echo get-rc=$?",
            f"{vipu} list partitions --json",
            f"{vipu} reset partition {other}; echo reset-rc=$?",
            f"IPUOF_VIPU_API_PARTITION_ID={other} {_payload(static, 0)}; echo attach-rc=$?",
        ]
    )
    try:
        done = static.cluster.run("srun", "--gres=vipu:1:1", "bash", "-c", probe, check=False)
        assert done.returncode == 0, done.stderr
        out = done.stdout + done.stderr
        assert "get-rc=1" in out, out
        assert f"partition {other} does not exist" in out, out
        assert "reset-rc=1" in out, out
        assert "attach-rc=3" in out, out
        found, _ = json.JSONDecoder().raw_decode(done.stdout[done.stdout.index("{\n") :])
        assert [p["id"] for p in found["partitions"]] in (
            [["slurm_static1_0"], ["slurm_static1_1"]]
        )
    finally:
        static.slurm("scancel", holder)
    assert _finished(static, holder) in {"CANCELLED", "COMPLETED"}


def test_a_restarted_bridge_never_gives_a_running_jobs_partition_to_another(
    static: SlurmPod,
) -> None:
    first = static.sbatch("--gres=vipu:4:1", wrap=_payload(static, 20))
    wait_until(lambda: "attached 4" in static.output(first), 90, "the first job to attach")
    held = re.search(r"attached 4 (\S+)", static.output(first))[1]  # type: ignore[index]
    static.cluster.kill("bridge", signal.SIGTERM)  # as a service restart
    static.cluster.start_bridge()  # knows the running job only from its .assigned file
    second = static.sbatch("--gres=vipu:4:1", wrap=_payload(static, 0))
    assert _finished(static, second) == "COMPLETED", static.output(second)
    (other,) = {"slurm_static4_0", "slurm_static4_1"} - {held}
    assert f"attached 4 {other}" in static.output(second)
    assert _finished(static, first) == "COMPLETED", static.output(first)
    # The new bridge frees the first job's partition too: reset by the integration.
    wait_until(lambda: not _job_files(static, first), 30, "the first job's files to go")
    resets = _events(static, "reset_partition", held)
    assert any(e["actor"] == "slurm" for e in resets)


@pytest.mark.parametrize(
    ("gres", "words"),
    [
        ("ipu:4", "this cluster runs static partitions, not --gres=ipu"),
        ("vipu:8:1", "no static partition has 8 IPUs"),
        ("vipu:4:2", "a job gets one static partition"),
        ("vipu:2", "name the size of the static partition"),
    ],
)
def test_a_static_request_that_cannot_be_met_is_refused_at_submission(
    static: SlurmPod, gres: str, words: str
) -> None:
    before = static.slurm("squeue", "--noheader", "--states", "all", "--format", "%A")
    done = static.cluster.run("sbatch", f"--gres={gres}", "--wrap", "true", check=False)
    assert done.returncode == 1
    assert f"vpod: {words}" in done.stderr, done.stderr
    assert "ask for --gres=vipu:<size>:1 with size one of 1, 4" in done.stderr
    assert static.slurm("squeue", "--noheader", "--states", "all", "--format", "%A") == before


def test_static_leaves_nothing_held(static: SlurmPod) -> None:
    wait_until(lambda: not static.queue(), 120, "the queue to drain")
    keys = Path(static.cluster.settings.credentials_dir)
    wait_until(lambda: not keys.exists() or not list(keys.iterdir()), 30, "every job file to go")
    with UserClient.from_config(static.cluster.settings.vipu_config, env={}) as integration:
        assert integration.list_partition_keys() == []
    slurm_partitions = sorted(p for p in _listing(static) if p.startswith("slurm_"))
    assert slurm_partitions == sorted(STATIC)


# -- reconfigurable


def test_the_shared_partition_is_reconfigurable_and_made_once(shared: SlurmPod) -> None:
    listing = _listing(shared)
    assert [p for p in listing if p.startswith("slurm_")] == ["slurm_shared"]
    assert listing["slurm_shared"].get("reconfigurable") is True
    assert len(listing["slurm_shared"]["ipus"]) == 16


def test_small_jobs_share_the_partition_each_on_its_own_block(shared: SlurmPod) -> None:
    """8 + 4 + 2 + 1 + 1 IPUs run at once, each attached to its own device, none overlapping."""
    workload = _tool(shared, "vpod-workload")
    script = (
        "env | grep -E '^(IPUOF_VIPU_API_PARTITION_ID|VPOD_IPU_DEVICE_ID)=' | sort;"
        f" {workload} --seconds 8 --json"
    )
    jobs = {shared.sbatch(f"--gres=ipu:{n}", wrap=script): n for n in (8, 4, 2, 1, 1)}
    summaries: dict[str, dict[str, object]] = {}

    def all_attached() -> bool:
        for job in jobs:
            out = shared.output(job)
            if job not in summaries and '"members"' in out:
                found, _ = json.JSONDecoder().raw_decode(out[out.index("{") :])
                summaries[job] = found
        return len(summaries) == len(jobs)

    for job in jobs:
        assert _finished(shared, job) == "COMPLETED", shared.output(job)
    assert all_attached()
    held: set[int] = set()
    for job, ipus in jobs.items():
        out = shared.output(job)
        assert "IPUOF_VIPU_API_PARTITION_ID=slurm_shared" in out.splitlines(), out
        device = int(re.search(r"^VPOD_IPU_DEVICE_ID=(\d+)$", out, re.M)[1])  # type: ignore[index]
        members = summaries[job]["members"]
        assert summaries[job]["device"] == device
        assert isinstance(members, list)
        assert len(members) == ipus
        assert not set(members) & held, f"job {job} overlaps: {members} against {held}"
        held |= set(members)
    # They ran together (16 IPUs held at once), and every block is free again after.
    starts = [shared.job(job)["StartTime"] for job in jobs]
    ends = [shared.job(job)["EndTime"] for job in jobs]
    assert max(starts) < min(ends), (starts, ends)
    whole = shared.sbatch("--gres=ipu:16", wrap=_payload(shared, 0))
    assert _finished(shared, whole) == "COMPLETED", shared.output(whole)
    assert "attached 16 slurm_shared" in shared.output(whole)


def test_a_shared_job_key_is_for_the_shared_partition_and_revoked_after(shared: SlurmPod) -> None:
    vipu = _tool(shared, "vipu")
    script = " && ".join(
        [
            f"{vipu} list partitions --json",
            "echo user=$VIPU_CLI_API_USER_ID key=$VIPU_CLI_API_ACCESS_KEY",
            _payload(shared, 0),
        ]
    )
    job = shared.sbatch("--gres=ipu:2", wrap=script)
    assert _finished(shared, job) == "COMPLETED", shared.output(job)
    out = shared.output(job)
    assert "attached 2 slurm_shared" in out
    found, _ = json.JSONDecoder().raw_decode(out[out.index("{\n") :])
    assert [p["id"] for p in found["partitions"]] == ["slurm_shared"]
    user, key = _key_of(out)
    assert user == f"slurm_{job}.job"
    wait_until(lambda: not _job_files(shared, job), 30, "the job's files to go")
    with UserClient.from_config(
        env={},
        api_host="127.0.0.1",
        api_port=shared.pod.user_port,
        api_user_id=user,
        api_access_key=key,
    ) as client:
        wait_until(lambda: _refused(client), 30, "the job's key to be revoked")
    # Never reset: that would end every other job's attachment.
    assert _events(shared, "reset_partition", "slurm_shared") == []


def test_a_shared_job_cannot_attach_another_running_jobs_block(shared: SlurmPod) -> None:
    holder = shared.sbatch(
        "--gres=ipu:4", wrap=f"echo device=$VPOD_IPU_DEVICE_ID; {_payload(shared, 60)}"
    )
    wait_until(lambda: "attached 4" in shared.output(holder), 90, "the first job to attach")
    theirs = re.search(r"^device=(\d+)$", shared.output(holder), re.M)[1]  # type: ignore[index]
    workload = _tool(shared, "vpod-workload")
    probe = f"{workload} --device {theirs} --seconds 0; echo rc=$?; {workload} --seconds 0 --json"
    try:
        done = shared.cluster.run("srun", "--gres=ipu:1", "bash", "-c", probe, check=False)
        out = done.stdout + done.stderr
        assert "rc=1" in out, out
        assert "already attached" in out, out
        mine, _ = json.JSONDecoder().raw_decode(done.stdout[done.stdout.index('{"') :])
        assert mine["device"] != int(theirs)  # its own block attaches beside the other's
    finally:
        shared.slurm("scancel", holder)
    assert _finished(shared, holder) in {"CANCELLED", "COMPLETED"}


@pytest.mark.parametrize(
    ("gres", "words"),
    [
        ("ipu:3", "3 IPUs is not a partition size: ask for --gres=ipu:4"),
        ("ipu:32", "32 IPUs is more than Slurm partition ipu has: ask for --gres=ipu:16"),
        ("vipu:4:1", "this cluster has no static partitions: ask for --gres=ipu:N"),
    ],
)
def test_a_shared_request_that_cannot_be_met_is_refused_at_submission(
    shared: SlurmPod, gres: str, words: str
) -> None:
    done = shared.cluster.run("sbatch", f"--gres={gres}", "--wrap", "true", check=False)
    assert done.returncode == 1
    assert f"vpod: {words}" in done.stderr, done.stderr
