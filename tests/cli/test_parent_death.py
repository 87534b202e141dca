"""A child started with ``dying_with_this_process`` ends when its supervisor is SIGKILLed,
even a program that knows nothing of vpod (here ``sleep``): what ``vpod slurm up`` relies
on for munged, slurmctld and slurmd."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl is Linux's")

SUPERVISOR = """
import subprocess, sys
from vpod.launch.parent_death import dying_with_this_process
child = subprocess.Popen(
    ["sleep", "300"], start_new_session=True, preexec_fn=dying_with_this_process()
)
print(child.pid, flush=True)
sys.stdin.read()  # until killed
"""


def _alive(pid: int) -> bool:
    try:
        state = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_the_child_ends_when_its_supervisor_is_killed() -> None:
    supervisor = subprocess.Popen(
        [sys.executable, "-c", SUPERVISOR],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert supervisor.stdout is not None
    child = int(supervisor.stdout.readline())
    try:
        assert _alive(child)
        supervisor.send_signal(signal.SIGKILL)
        supervisor.wait()
        deadline = time.monotonic() + 30
        while _alive(child) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(child)
    finally:
        if _alive(child):
            os.kill(child, signal.SIGKILL)
