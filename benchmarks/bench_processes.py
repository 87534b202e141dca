"""What the benchmarks that start vpod's processes share: start one and wait for its ready
line, stop it, and read the CPU time it has used."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from vpod.launch.parent_death import dying_with_this_process

LOOPBACK_AGENT = (
    "--single-address",
    "127.0.0.1",
    "--agent-port",
    "0",
    "--ipuof-server-port",
    "0",
    "--ipuof-rdma-port",
    "0",
    "--no-rdma-listen",
)
"""``vipu-agent`` options for machines on 127.0.0.1, every port chosen by the kernel."""


def tied() -> Callable[[], None]:
    """A ``preexec_fn`` that ends the child (SIGTERM) when this benchmark ends, however it
    ends: a benchmark interrupted or killed left its controller and agents running, holding
    their ports and a core."""
    return dying_with_this_process(signal.SIGTERM)


def start(
    argv: list[str], *, stderr: int | None = subprocess.STDOUT, env: dict[str, str] | None = None
) -> subprocess.Popen[str]:
    """Start a process in a session of its own, its output piped as text (``stderr`` with
    it by default), ended with this benchmark (:func:`tied`)."""
    return subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=stderr,
        text=True,
        start_new_session=True,
        env=env,
        preexec_fn=tied(),
    )


def spawn(
    argv: list[str], ready: str, timeout: float = 60, *, env: dict[str, str] | None = None
) -> tuple[subprocess.Popen[str], str]:
    """Start a process (in ``env``, else this one's) and wait for its ready line; returns both."""
    proc = start(argv, stderr=subprocess.DEVNULL, env=env)
    deadline = time.monotonic() + timeout
    assert proc.stdout is not None
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if ready in line:
            return proc, line
        if not line and proc.poll() is not None:
            break
    proc.kill()
    raise SystemExit(f"{argv[0]} did not start")


def stop(
    proc: subprocess.Popen[str], *, sig: signal.Signals = signal.SIGTERM, timeout: float = 15
) -> None:
    """Ask the process to end with ``sig``; killed after ``timeout`` seconds. Reaped, and its
    piped output closed."""
    proc.send_signal(sig)
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    if proc.stdout is not None:
        proc.stdout.close()


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (NaN where /proc is missing)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
