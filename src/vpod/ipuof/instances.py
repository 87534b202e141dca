"""The running instances of ``vpod-run``: local processes or ``ssh`` to other hosts.

Each instance's output is prefixed with ``[i]``. Signals are forwarded: a
local instance gets them in its own process group; a remote one gets them
through its ssh's standard input, which the remote wrapper reads
(:mod:`.remote`), and closing that input stops it. The first instance that
fails on its own stops the others, and its exit status is the run's.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import IO

import click

from .tied_children import start_tied

STOP_GRACE_S = 10.0
"""How long stopped instances get to exit after SIGINT/SIGTERM before SIGKILL."""
FORWARDED = {signal.SIGINT: "INT", signal.SIGTERM: "TERM", signal.SIGHUP: "HUP"}


@dataclass
class Instance:
    index: int
    host: str | None
    """None: this machine; else the host ssh reaches."""
    proc: subprocess.Popen[bytes]


class Instances:
    """The running instances: output pumps, signal forwarding, who was stopped by us."""

    def __init__(self, out: IO[str]) -> None:
        self._out = out
        self._write = threading.Lock()
        self.started: list[Instance] = []
        self._pumps: list[threading.Thread] = []
        self.stopped_by_us: set[int] = set()
        self.failures: list[int] = []
        """Indexes of the instances that failed on their own, first failure first."""

    @property
    def procs(self) -> list[subprocess.Popen[bytes]]:
        return [i.proc for i in self.started]

    def start(
        self,
        index: int,
        command: Sequence[str],
        env: Mapping[str, str] | None,
        *,
        host: str | None = None,
    ) -> None:
        """``host``: ``command`` is the ssh to it, and its standard input stays open (the
        remote instance ends when it closes); ``env`` None: the launcher's own."""
        try:
            # Its own process group (our signals reach it only when we forward them), killed
            # by Linux if this launcher dies without stopping it (SIGKILL included); a remote
            # instance ends when its ssh does.
            proc = start_tied(
                command,
                env=None if env is None else dict(env),
                stdin=subprocess.PIPE if host is not None else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
            )
        except OSError as exc:
            raise click.UsageError(f"cannot start {command[0]}: {exc.strerror}") from None
        self.started.append(Instance(index, host, proc))
        pump = threading.Thread(target=self._pump, args=(index, proc), daemon=True)
        pump.start()
        self._pumps.append(pump)

    def _pump(self, index: int, proc: subprocess.Popen[bytes]) -> None:
        assert proc.stdout is not None
        for raw in proc.stdout:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            with self._write:
                self._out.write(f"[{index}] {line}\n")
                self._out.flush()

    def signal_all(self, signum: int, *, ours: bool = True) -> None:
        for i, instance in enumerate(self.started):
            if instance.proc.poll() is None:
                if ours:
                    self.stopped_by_us.add(i)
                self._signal(instance, signum)

    @staticmethod
    def _signal(instance: Instance, signum: int) -> None:
        proc = instance.proc
        if instance.host is None or signum == signal.SIGKILL:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signum)
            return
        name = FORWARDED.get(signal.Signals(signum), "TERM")
        assert proc.stdin is not None
        with contextlib.suppress(OSError, ValueError):  # ssh has gone, or its input closed
            proc.stdin.write(f"{name}\n".encode())
            proc.stdin.flush()

    def wait(self, interrupted: threading.Event) -> None:
        """Until every instance ends; the first failure stops the others."""
        while [p.poll() for p in self.procs].count(None):  # poll every one, not up to the first
            self._note_failures()
            if self.failures and not interrupted.is_set():
                self.signal_all(signal.SIGTERM)
                self.reap()
                break
            time.sleep(0.05)
        self._note_failures()
        for pump in self._pumps:
            pump.join(timeout=5)

    def _note_failures(self) -> None:
        for i, proc in enumerate(self.procs):
            failed = proc.returncode not in (None, 0) and i not in self.stopped_by_us
            if failed and i not in self.failures:
                self.failures.append(i)

    def reap(self) -> None:
        """Wait for stopped instances; SIGKILL those that outlive the grace period (for a
        remote one, its ssh: the remote wrapper then stops the instance)."""
        deadline = time.monotonic() + STOP_GRACE_S
        for instance in self.started:
            proc = instance.proc
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        self.close_inputs()

    def close_inputs(self) -> None:
        """Close every ssh's standard input: a remote instance still running stops."""
        for instance in self.started:
            if instance.proc.stdin is not None:
                with contextlib.suppress(OSError):
                    instance.proc.stdin.close()

    def exit_code(self, interrupted: bool) -> int:
        """The first failing instance's status (a signal N counts 128+N); 130 after Ctrl-C
        when none failed."""
        self._note_failures()
        for i in self.failures:
            code = self.procs[i].returncode
            assert code is not None
            return 128 - code if code < 0 else code
        return 130 if interrupted else 0
