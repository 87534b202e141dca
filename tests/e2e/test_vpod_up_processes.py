"""`vpod up` as an operator relies on it: children that die with it, a failed start that says
why at once, agents restarted after SIGKILL, and a restart that respects the admin's pod."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import shlex
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from .conftest import BIN, Pod, start_pod

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

SMALL = ("--pod", "pod16", "--cloud-pod", "none")
KILLS = 5
"""Backoffs 0.5, 1, 2, 4 and 8 s: the last outage outlasts the 3 s heartbeat deadline."""
DEADLINE_S = 60.0
"""A safety net for what the controller does on its own (detect, restart, repair)."""


def children_of(pid: int) -> list[int]:
    """Pids whose parent is ``pid`` (from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            found.append(int(entry.name))
    return found


def command_of(pid: int) -> str:
    try:
        return (Path("/proc") / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def alive(pid: int) -> bool:
    try:
        state = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def wait_for(what: str, check: Callable[[], object], timeout: float = DEADLINE_S) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.2)
    raise AssertionError(f"{what} did not happen in {timeout:.0f} s (last: {check()!r})")


def admin(pod: Pod, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return pod.run("vipu-admin", "--config", str(pod.data_dir / "admin.vipu-cli.hcl"), *args,
                   check=check)  # fmt: skip


def agent_states(pod: Pod) -> dict[str, str]:
    listed = json.loads(admin(pod, "list", "agents", "--json").stdout)
    return {a["id"]: a.get("state", "") for a in listed.get("agents", [])}


def agent_pids(pod: Pod, besides: list[int]) -> list[int]:
    """The pids of `vpod up`'s agent processes, other than ``besides``."""
    kids = children_of(pod.proc.pid)
    return [k for k in kids if "vipu-agent" in command_of(k) and k not in besides]


def partition_state(pod: Pod, pid: str) -> str:
    listed = json.loads(pod.run("vipu", "list", "partitions", "--json").stdout)
    for partition in listed.get("partitions", []):
        if partition["id"] == pid:
            return str(partition.get("ready_state", ""))
    return "missing"


def test_children_die_with_a_killed_vpod_up_and_the_next_start_works(tmp_path: Path) -> None:
    """SIGKILL of `vpod up` alone: its controller and agents end too (parent-death signal),
    so the ports are free and the next start on the same directory succeeds."""
    pod = start_pod(tmp_path, *SMALL)
    kids = children_of(pod.proc.pid)
    assert any("vipu-server" in command_of(k) for k in kids)
    assert any("vipu-agent" in command_of(k) for k in kids)
    pod.proc.send_signal(signal.SIGKILL)
    pod.proc.wait()
    wait_for("the children's end", lambda: not any(alive(k) for k in kids), timeout=15)
    again = start_pod(tmp_path)
    try:
        again.run("vipu", "create", "partition", "after", "--size", "4")
    finally:
        assert again.stop() == 0


def test_a_port_in_use_is_named_at_once(tmp_path: Path) -> None:
    """A listener on the admin port: `vpod up` exits 1 within seconds naming that port."""
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        started = time.monotonic()
        done = subprocess.run(
            [str(BIN / "vpod"), "up", "--data-dir", str(tmp_path), *SMALL,
             "--port", "0", "--http-port", "0", "--admin-port", str(port)],
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        elapsed = time.monotonic() - started
    assert done.returncode == 1
    assert f"port {port} on 127.0.0.1 (admin API) is in use" in done.stderr
    assert "--admin-port" in done.stderr
    assert elapsed < 15, f"took {elapsed:.1f} s"


def test_a_killed_agent_process_is_restarted_and_its_partitions_come_back(
    tmp_path: Path,
) -> None:
    """SIGKILL of the agents' process, again and again: `vpod up` keeps running and restarts
    it with a doubling backoff; meanwhile the controller answers and shows the machines
    unreachable; then the partition is usable again with the same IPUoF configuration."""
    pod = start_pod(tmp_path, *SMALL)
    try:
        pod.run("vipu", "create", "partition", "p1", "--size", "16")
        before = json.loads(pod.run("vipu", "get", "partition", "p1", "--ipuof-configs").stdout)
        killed: list[int] = []
        for _ in range(KILLS):  # each restart is killed again: the backoff doubles
            wait_for("a new agent process", lambda: agent_pids(pod, killed))
            victim = agent_pids(pod, killed)[0]
            os.kill(victim, signal.SIGKILL)
            killed.append(victim)
        wait_for(
            "an unreachable machine",
            lambda: any(s != "AGENT_ONLINE" for s in agent_states(pod).values()),
        )
        assert pod.proc.poll() is None
        assert "p1" in pod.run("vipu", "list", "partitions").stdout  # still serving
        # The last victim may have been seen ONLINE before its silence was noticed, so the
        # states alone do not prove the return: first the new process, then the states.
        wait_for("the restarted agent process", lambda: agent_pids(pod, killed))
        wait_for("the agents' return", lambda: set(agent_states(pod).values()) == {"AGENT_ONLINE"})
        wait_for("p1 active again", lambda: partition_state(pod, "p1") == "PS_ACTIVE")
        after = json.loads(pod.run("vipu", "get", "partition", "p1", "--ipuof-configs").stdout)
        assert after == before
        pod.run("vipu", "remove", "partition", "p1")
        pod.run("vipu", "create", "partition", "p2", "--size", "16")
    finally:
        assert pod.stop() == 0
    output = "".join(pod.output)
    backoffs = [
        float(line.split("restarting it in ")[1].split(" s")[0])
        for line in output.splitlines()
        if "vipu-agent exited with code -9; restarting it in" in line
    ]
    assert backoffs == [0.5 * 2**n for n in range(KILLS)]
    assert output.count("vipu-agent restarted") == KILLS


def test_a_restart_keeps_what_the_admin_made_of_the_pod(tmp_path: Path) -> None:
    """The admin removes `default` and shares the pod out: a restart warns instead of making
    `default` again over their allocations, and the default user keeps its grants."""
    pod = start_pod(tmp_path, *SMALL)
    try:
        admin(pod, "remove", "allocation", "default", "--force")
        admin(pod, "create", "allocation", "team-a", "--cluster", "cluster", "--size", "8")
        admin(pod, "create", "allocation", "team-b", "--cluster", "cluster", "--size", "8")
        admin(pod, "remove", "user", "default")
        made = admin(
            pod,
            "create",
            "user",
            "default",
            "--allocations",
            "team-a",
            "--json",
            "--output",
            str(tmp_path),
        )
        key = json.loads(made.stdout)["access_key"]
    finally:
        assert pod.stop() == 0
    again = start_pod(tmp_path)
    try:
        output = "".join(again.output)
        assert "allocation default was removed by an administrator and is not made again" in (
            output
        )
        listed = json.loads(admin(again, "list", "allocations", "--json").stdout)
        names = sorted(a["allocation"]["id"] for a in listed["allocations"])
        assert names == ["team-a", "team-b"]
        users = json.loads(admin(again, "list", "users", "--json").stdout)["users"]
        default = next(u for u in users if u["id"] == "default")
        assert default["allocation_ids"] == ["team-a"]
        created = again.run(
            "vipu", "--api-user-id", "default", "--api-access-key", key,
            "create", "partition", "mine", "--size", "8",
        )  # fmt: skip
        assert "success" in created.stdout
    finally:
        assert again.stop() == 0


def test_ready_lines_name_absolute_paths_that_work_from_anywhere(tmp_path: Path) -> None:
    """`vpod up --data-dir relative` run in one directory: the ready lines' export commands
    work from another one, pasted as they are into a shell, with a space in the path."""
    (tmp_path / "here").mkdir()
    pod = start_pod(Path("rel data"), "--pod", "pod16", cwd=tmp_path / "here")
    try:
        config = (tmp_path / "here" / "rel data" / "vipu-cli.hcl").resolve()
        assert f"VIPU_CLI_CONFIG={shlex.quote(str(config))} " in pod.ready_line
        cloud_line = next(line for line in pod.output if line.startswith("vpod cloud:"))
        toml = shlex.quote(str(config.parent / "vpod-cli.toml"))
        assert f"VPOD_CONFIG={toml} " in cloud_line
        admin_config = shlex.quote(str(config.parent / "admin.vipu-cli.hcl"))
        assert f"--config {admin_config} " in pod.ready_line
        ran = {}
        for line in (pod.ready_line, cloud_line):  # the suggested commands, verbatim, from /
            suggested = line.strip().split("Next: ", 1)[1].split(" (admin:")[0]
            done = subprocess.run(
                ["bash", "-c", suggested],
                cwd="/", env={**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}"},
                capture_output=True, text=True, timeout=60, check=False,
            )  # fmt: skip
            assert done.returncode == 0, f"{suggested}: {done.stderr}"
            ran[suggested.rsplit("&& ", 1)[1]] = done.stdout
        assert "success" in ran["vipu create partition p1 --size 4"]
        vpod8 = next(
            x for x in ran["vpod flavors"].splitlines() if x.startswith("g2a-ai-fast-v1pod-8 ")
        )
        assert int(vpod8.split("|")[-1]) >= 1  # the tenants' pod gives capacity by default
    finally:
        assert pod.stop() == 0


def test_a_start_at_a_terminal_shows_its_progress(tmp_path: Path) -> None:
    """On a terminal `vpod up` says what it is doing while it starts (the controller, the
    machines as they register), then prints the ready line; run by a script (the other
    tests: output to a pipe) it prints the ready lines alone."""
    primary, secondary = pty.openpty()
    proc = subprocess.Popen(
        [str(BIN / "vpod"), "up", "--data-dir", str(tmp_path), "--open", *SMALL,
         "--port", "0", "--admin-port", "0", "--http-port", "0"],
        stdin=subprocess.DEVNULL, stdout=secondary, stderr=secondary, start_new_session=True,
    )  # fmt: skip
    os.close(secondary)
    seen = b""
    try:
        deadline = time.monotonic() + DEADLINE_S
        while b"vpod is up:" not in seen and time.monotonic() < deadline:
            if select.select([primary], [], [], 1.0)[0]:
                try:
                    seen += os.read(primary, 65536)
                except OSError:  # the terminal closed: vpod up ended
                    break
        text = seen.decode(errors="replace")
        assert "vpod is up:" in text, text
        before_ready = text.split("vpod is up:", 1)[0]
        for step in ("starting the controller", "starting 4 emulated IPU-Machines", "setting up"):
            assert f"vpod up: {step}" in before_ready, text
        assert re.search(r"vpod up: [0-4] of 4 machines registered", before_ready), text
    finally:
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 0
        os.close(primary)


def test_a_refused_administrator_key_says_how_to_get_back_in(tmp_path: Path) -> None:
    """The key vpod up keeps for the administrator no longer works (replaced through
    `vipu-admin update user admin --new-key`): the start fails at once with one line that
    names the file and the way back, and that way back works."""
    init = [str(BIN / "vipu-server"), "--init", "--secure", "--data-dir", str(tmp_path)]
    assert subprocess.run(init, capture_output=True, timeout=60, check=False).returncode == 0
    admin_config = tmp_path / "admin.vipu-cli.hcl"
    stale = re.sub(
        r'api-access-key="[^"]*"', 'api-access-key="replaced-long-ago"', admin_config.read_text()
    )
    admin_config.write_text(stale)
    up = [str(BIN / "vpod"), "up", "--data-dir", str(tmp_path), *SMALL,
          "--port", "0", "--admin-port", "0", "--http-port", "0"]  # fmt: skip
    refused = subprocess.run(up, capture_output=True, text=True, timeout=120, check=False)
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert "vpod is up" not in refused.stdout
    line = refused.stderr.strip()
    assert len(line.splitlines()) == 1, line
    assert f"refuses the administrator's key in {admin_config}" in line
    way_back = line.split("issue a new one with ", 1)[1].split(", then", 1)[0]
    assert way_back == f"vipu-server --init --secure --new-admin-key --data-dir {tmp_path}"
    done = subprocess.run(
        [str(BIN / way_back.split()[0]), *way_back.split()[1:]],
        capture_output=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    pod = start_pod(tmp_path, *SMALL)
    assert pod.stop() == 0
