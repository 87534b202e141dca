"""start_tied: a child (and only the child) dies with the process that started it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from vpod.ipuof.tied_children import start_tied

PARENT = """
import subprocess, sys
from vpod.ipuof.tied_children import start_tied
child = start_tied([sys.executable, "-c", "import time; time.sleep(600)"])
print(child.pid, flush=True)
child.wait()
"""

linux_only = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's"
)


def _alive(pid: int) -> bool:
    """Running (a zombie waiting for its reaper counts as gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return False
    return fields[0] != "Z"


def _gone_within(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not _alive(pid):
            return True
        time.sleep(0.05)
    return not _alive(pid)


@linux_only
def test_a_tied_child_dies_when_its_parent_is_sigkilled() -> None:
    parent = subprocess.Popen([sys.executable, "-c", PARENT], stdout=subprocess.PIPE, text=True)
    assert parent.stdout is not None
    child = int(parent.stdout.readline())
    try:
        assert _alive(child)
        parent.kill()
        parent.wait(timeout=10)
        assert _gone_within(child, 10), "the child outlived its SIGKILLed parent"
    finally:
        if _alive(child):
            os.kill(child, signal.SIGKILL)


def test_a_tied_child_leads_its_own_process_group_and_runs_normally() -> None:
    child = start_tied(
        [sys.executable, "-c", "import os; print(os.getpgid(0), os.getsid(0))"],
        stdout=subprocess.PIPE,
    )
    out, _ = child.communicate(timeout=30)
    assert child.returncode == 0
    assert out.split() == [str(child.pid).encode()] * 2
    assert os.getpgid(0) != child.pid


def test_a_command_that_cannot_start_raises_at_once(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        start_tied([str(tmp_path / "no-such-program")])
