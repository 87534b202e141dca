"""Nothing outlives ``vpod slurm up``: SIGKILL it, and every process it started (``vpod up``
with its controller and agents, munged, slurmctld, slurmd, the bridge) ends, their ports are
free, and a second start on the same directory and ports succeeds."""

from __future__ import annotations

import re
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.ports import free_port
from vpod.integrations.slurm.local_cluster import missing_requirements

from .harness import wait_until

pytestmark = [pytest.mark.system, pytest.mark.e2e, pytest.mark.slow]
BIN = Path(sys.executable).parent
READY_S = 240.0
GONE_S = 60.0
STARTED = ("vpod", "vipu-server", "vipu-agent", "munged", "slurmctld", "slurmd", "bridge")


def _stat(pid: int) -> tuple[str, int] | None:
    """(state, parent pid) of ``pid``, or None when it is gone."""
    try:
        fields = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return fields[0], int(fields[1])


def descendants(root: int) -> dict[int, str]:
    """Every live process below ``root`` (by parent pid), with its command line."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (stat := _stat(int(entry.name))) and stat[0] != "Z":
            parents[int(entry.name)] = stat[1]
    found: dict[int, str] = {}
    frontier = [root]
    while frontier:
        parent = frontier.pop()
        for pid, ppid in parents.items():
            if ppid == parent and pid not in found:
                raw = (Path("/proc") / str(pid) / "cmdline").read_bytes()
                found[pid] = raw.replace(b"\0", b" ").decode(errors="replace")
                frontier.append(pid)
    return found


def alive(pid: int) -> bool:
    stat = _stat(pid)
    return stat is not None and stat[0] != "Z"


def port_free(port: int) -> bool:
    """Whether a server could listen on ``port`` now (as servers do, past TIME_WAIT)."""
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def start(data_dir: Path, *ports: str) -> tuple[subprocess.Popen[str], list[str]]:
    proc = subprocess.Popen(
        [str(BIN / "vpod"), "slurm", "up", "--data-dir", str(data_dir), *ports, "--open"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    lines: list[str] = []
    threading.Thread(target=lambda: lines.extend(proc.stdout or ()), daemon=True).start()
    wait_until(
        lambda: any("vpod slurm is up" in x for x in lines) or proc.poll() is not None,
        READY_S,
        "vpod slurm up",
    )
    assert any("vpod slurm is up" in x for x in lines), "".join(lines)
    return proc, lines


def slurm_ports(data_dir: Path) -> dict[str, int]:
    conf = (data_dir / "slurm" / "etc" / "slurm.conf").read_text()
    found = {
        name: re.search(rf"^{key}=(\d+)", conf, re.MULTILINE)
        for name, key in (("slurmctld", "SlurmctldPort"), ("slurmd", "SlurmdPort"))
    }
    return {name: int(match[1]) for name, match in found.items() if match}


def test_every_process_of_a_killed_vpod_slurm_up_ends_and_it_starts_again(
    tmp_path: Path,
) -> None:
    reason = missing_requirements()
    if reason:
        pytest.skip(f"cannot run Slurm here: {reason}")
    pod_ports = {"--port": free_port(), "--admin-port": free_port(), "--http-port": free_port()}
    options = [str(x) for pair in pod_ports.items() for x in pair]
    proc, _ = start(tmp_path, *options)
    started = descendants(proc.pid)
    for name in STARTED:
        assert any(name in command for command in started.values()), (name, started)
    ports = {**pod_ports, **slurm_ports(tmp_path)}
    assert len(ports) == 5

    proc.send_signal(signal.SIGKILL)
    proc.wait()
    wait_until(lambda: not any(alive(pid) for pid in started), GONE_S, "every child's end")
    left = {pid: command for pid, command in started.items() if alive(pid)}
    assert left == {}
    assert [name for name, port in ports.items() if not port_free(port)] == []

    again, lines = start(tmp_path, *options)
    again.send_signal(signal.SIGINT)
    assert again.wait(timeout=120) == 0, "".join(lines)
