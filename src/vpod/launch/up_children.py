"""The child processes of ``vpod up``: started, watched, restarted, and never left behind.

Each child runs in its own process group (so a Ctrl-C in the terminal
reaches only ``vpod up``, which stops them in order) and arms a parent-death
signal (:mod:`.parent_death`), so it ends with ``vpod up`` even when that is
killed with SIGKILL. Stopping a child signals its whole group.

:class:`Supervised` restarts a child that dies (the agents) with a backoff
that doubles from :data:`FIRST_BACKOFF_S` to :data:`MAX_BACKOFF_S` and starts
over once a child has stayed up for :data:`STABLE_AFTER_S`.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO

from vpod.cli.errors import fail

from .parent_death import PARENT_PID_ENV

FIRST_BACKOFF_S = 0.5
MAX_BACKOFF_S = 30.0
STABLE_AFTER_S = 30.0
STOP_TIMEOUT_S = 10.0


class Child:
    """One child process whose stdout is scanned for its ready line, then logged."""

    def __init__(
        self, name: str, argv: list[str], log_path: Path, env: dict[str, str] | None = None
    ) -> None:
        self.name = name
        self.log_path = log_path
        self.log = log_path.open("a")
        env = {**os.environ, **(env or {}), PARENT_PID_ENV: str(os.getpid())}
        self.proc = subprocess.Popen(
            argv,
            stdout=subprocess.PIPE,
            stderr=self.log,
            text=True,
            start_new_session=True,
            env=env,
        )
        self.started_at = time.monotonic()
        self.ready_line: str | None = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._pump, args=(self.proc.stdout,), daemon=True)
        self._thread.start()

    def _pump(self, stream: IO[str] | None) -> None:
        assert stream is not None
        for line in stream:
            if self.ready_line is None and " ready:" in line:
                self.ready_line = line.strip()
                self._ready.set()
            self.log.write(line)
            self.log.flush()
        self._ready.set()

    def wait_ready(self, timeout: float) -> str:
        """The ready line; a one-line failure naming the cause when there is none."""
        if not self._ready.wait(timeout) or self.ready_line is None:
            code = self.proc.poll()
            if code is None:
                fail(f"{self.name} not ready in {timeout:.0f} s: see {self.log_path}")
            fail(f"{self.name} exited with code {code}: {self.last_error()} (see {self.log_path})")
        return self.ready_line

    def last_error(self) -> str:
        """The last line the child wrote to its log that reads like an error."""
        try:
            lines = self.log_path.read_text(errors="replace").splitlines()
        except OSError:
            return "no log"
        for line in reversed(lines[-50:]):
            if line.startswith(("error:", "Error:")) or " ERROR " in line:
                return line.strip()
        return lines[-1].strip() if lines else "no output"

    def stop(self) -> None:
        """SIGTERM to the child's process group, SIGKILL if it does not end in time."""
        if self.proc.poll() is None:
            _signal_group(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                _signal_group(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        else:  # the leader is gone; anything it left in its group goes too
            _signal_group(self.proc.pid, signal.SIGKILL)
        self._thread.join(timeout=2)  # the pump writes its last lines to the log
        self.log.close()


def _signal_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


class Supervised:
    """A child that is started again, with backoff, whenever it dies."""

    def __init__(
        self,
        name: str,
        start: Callable[[], Child],
        say: Callable[[str], None],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.name = name
        self._start = start
        self._say = say
        self._clock = clock
        self.child = start()
        self.restarts = 0
        self._backoff = FIRST_BACKOFF_S
        self._restart_at: float | None = None

    def check(self) -> None:
        """Called periodically: notice a death, restart when its backoff has passed."""
        now = self._clock()
        if self._restart_at is None:
            code = self.child.proc.poll()
            if code is None:
                if now - self.child.started_at >= STABLE_AFTER_S:
                    self._backoff = FIRST_BACKOFF_S
                return
            self.child.stop()
            self._restart_at = now + self._backoff
            self._say(
                f"{self.name} exited with code {code}; restarting it in {self._backoff:g} s"
                f" (see {self.child.log_path})"
            )
            self._backoff = min(self._backoff * 2, MAX_BACKOFF_S)
            return
        if now >= self._restart_at:
            self._restart_at = None
            self.restarts += 1
            self.child = self._start()
            self._say(f"{self.name} restarted (pid {self.child.proc.pid})")

    def stop(self) -> None:
        self.child.stop()
