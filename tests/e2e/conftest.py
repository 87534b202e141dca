"""End-to-end fixtures: a real `vpod up` (controller + emulated pod) in a temporary directory."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from vpod.cloud.drivers.sandbox import sandbox_problem

BIN = Path(sys.executable).parent
READY_TIMEOUT_S = 180
"""A ceiling for a loaded CI machine, not a measure: a healthy start takes seconds."""


@dataclass
class Pod:
    """A running `vpod up`: where it listens and how to talk to it."""

    data_dir: Path
    proc: subprocess.Popen[str]
    ready_line: str
    output: list[str] = field(default_factory=list)

    def _port(self, pattern: str) -> int:
        match = re.search(pattern + r"[^ ]*?:(\d+)", self.ready_line)
        assert match, f"no {pattern} in {self.ready_line!r}"
        return int(match[1])

    @property
    def user_port(self) -> int:
        return self._port("user API ")

    @property
    def admin_port(self) -> int:
        return self._port("admin API ")

    @property
    def http_port(self) -> int:
        return self._port("HTTP ")

    @property
    def config(self) -> Path:
        return self.data_dir / "vipu-cli.hcl"

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        env["VIPU_CLI_CONFIG"] = str(self.config)
        return env

    def run(self, tool: str, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        """Run a real CLI (vipu, vipu-admin, vpod) against this pod."""
        done = subprocess.run(
            [str(BIN / tool), *args],
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=120,
        )
        if check and done.returncode != 0:
            raise AssertionError(
                f"{tool} {' '.join(args)} exited {done.returncode}: {done.stderr.strip()}"
            )
        return done

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode


def start_pod(data_dir: Path, *extra: str, cwd: Path | None = None) -> Pod:
    """Start `vpod up` on free ports and wait for its ready line (``data_dir`` may be relative
    to ``cwd``)."""
    proc = subprocess.Popen(
        [
            str(BIN / "vpod"),
            "up",
            "--data-dir",
            str(data_dir),
            "--port",
            "0",
            "--admin-port",
            "0",
            "--http-port",
            "0",
            # sandboxed tenants' servers as root (here, CI); elsewhere, deliberately not
            *(["--unsafe-shared-host"] if sandbox_problem() is not None else []),
            *extra,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
        cwd=cwd,
    )
    lines: list[str] = []
    ready = threading.Event()

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            if line.startswith("vpod is up:"):
                ready.set()
        ready.set()

    threading.Thread(target=pump, daemon=True).start()
    if not ready.wait(READY_TIMEOUT_S) or not any(x.startswith("vpod is up:") for x in lines):
        proc.kill()
        logs = "".join(lines)
        for log in ((cwd or Path()) / data_dir / "logs").glob("*.log"):
            logs += f"\n--- {log.name}\n" + log.read_text()[-3000:]
        raise AssertionError(f"vpod up did not become ready:\n{logs}")
    line = next(x for x in lines if x.startswith("vpod is up:"))
    return Pod(data_dir=data_dir, proc=proc, ready_line=line.strip(), output=lines)


@pytest.fixture(scope="module")
def pod64(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pod]:
    """A `vpod up --open` pod64: the spec's open V-IPU mode, where a client generated from
    the user proto calls on a plain channel with no credentials and vipu-admin needs none."""
    pod = start_pod(tmp_path_factory.mktemp("pod64"), "--open")
    yield pod
    pod.stop()
