"""Helpers for driving the real CLIs: tables as scripts parse them, one-line errors, extra agents.

- :func:`parse_table` reads a table the way docs/cli.md tells scripts to.
- :func:`assert_one_line_error` checks the error contract: an exit status,
  exactly one line ``<prog>: error: ...`` on stderr, no traceback.
- :func:`sh` runs a command line as a person types it against a pod.
- :func:`run_cli` runs a CLI with an environment and directory of the test's
  choosing (no ``VIPU_CLI_CONFIG`` unless given), for config precedence.
- ``extra_agents_fixture`` [``extra_agents``]: a ``vipu-agent`` process of
  four machines ``xa1..xa4`` that registers with the module's ``pod64``, for
  building a second cluster; on loopback addresses ``127.S.0.1..4`` with S
  in 216..254, a range ``vpod up`` never picks.
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.faults.live import AGENT_KEY

from .conftest import BIN, Pod
from .fixtures_pods import AdminView, wait_until

EXTRA_PREFIX = "xa"
EXTRA_MACHINES = 4
READY_TIMEOUT_S = 60


def parse_table(text: str) -> tuple[list[str], list[dict[str, str]]]:
    """Column names and rows of a CLI table (it ends at the first blank line)."""
    lines = text.splitlines()
    end = lines.index("") if "" in lines else len(lines)
    header, rule, *rows = lines[:end]
    assert set(rule) <= {"-", "+"}, f"second line is not a rule: {rule!r}"
    names = [c.strip() for c in header.split("|")]
    parsed = [dict(zip(names, (c.strip() for c in row.split("|")), strict=True)) for row in rows]
    return names, parsed


def assert_one_line_error(
    done: subprocess.CompletedProcess[str], code: int, fragment: str, *, after_table: bool = False
) -> str:
    """The failure contract of docs/cli.md: status, one line on stderr, no traceback.

    Nothing may be on stdout, unless ``after_table`` (``test cluster`` and
    ``discover agent`` print their table before failing). Returns the line.
    """
    prog = Path(str(done.args[0])).name
    assert done.returncode == code, (done.returncode, done.stderr)
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(f"{prog}: error: "), lines[0]
    assert fragment in lines[0], lines[0]
    if not after_table:
        assert done.stdout == "", done.stdout
    return lines[0]


def sh(pod: Pod, line: str, *, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run one command line as typed (``vipu list partitions --json``) against ``pod``."""
    tool, *args = shlex.split(line)
    return pod.run(tool, *args, check=check)


def run_cli(
    tool: str, *args: str, env: Mapping[str, str] | None = None, cwd: Path
) -> subprocess.CompletedProcess[str]:
    """Run a CLI with exactly the ``VIPU_CLI_*`` variables given, in ``cwd``."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("VIPU_CLI_")}
    clean.update(env or {})
    return subprocess.run(
        [str(BIN / tool), *args], env=clean, cwd=cwd, capture_output=True, text=True, timeout=120
    )


@dataclass
class ExtraAgents:
    """A running ``vipu-agent`` process and where each of its agents listens."""

    proc: subprocess.Popen[str]
    addresses: dict[str, tuple[str, int]] = field(default_factory=dict)

    @property
    def ids(self) -> list[str]:
        return list(self.addresses)

    def address(self, agent_id: str) -> str:
        host, port = self.addresses[agent_id]
        return f"{host}:{port}"


def _ready_line(proc: subprocess.Popen[str]) -> str:
    found: list[str] = []
    ready = threading.Event()

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.startswith("vipu-agent ready:") and not found:
                found.append(line.strip())
                ready.set()
        ready.set()

    threading.Thread(target=pump, daemon=True).start()
    if not ready.wait(READY_TIMEOUT_S) or not found:
        proc.kill()
        raise AssertionError("the extra vipu-agent did not become ready")
    return found[0]


@pytest.fixture(scope="module", name="extra_agents")
def extra_agents_fixture(pod64: Pod) -> Iterator[ExtraAgents]:
    """Four more machines, registered with the pod's controller but in no cluster."""
    second_octet = 216 + pod64.admin_port % 39
    log = (pod64.data_dir / "logs" / "extra-agents.log").open("w")
    key_file = pod64.data_dir / "extra-agents.key"  # the tests ask these agents directly too
    key_file.write_text(AGENT_KEY + "\n")
    proc = subprocess.Popen(
        [
            str(BIN / "vipu-agent"),
            "--machines",
            str(EXTRA_MACHINES),
            "--id-prefix",
            EXTRA_PREFIX,
            "--address-base",
            f"127.{second_octet}.0.1",
            "--agent-port",
            "0",
            "--key-file",
            str(key_file),
            "--register",
            f"127.0.0.1:{pod64.admin_port}",
        ],
        stdout=subprocess.PIPE,
        stderr=log,
        text=True,
        start_new_session=True,
    )
    try:
        line = _ready_line(proc)
        extra = ExtraAgents(proc)
        for word in line.removeprefix("vipu-agent ready:").split():
            agent_id, _, address = word.partition("=")
            host, _, port = address.rpartition(":")
            extra.addresses[agent_id] = (host, int(port))
        assert len(extra.addresses) == EXTRA_MACHINES, line
        admin = AdminView(pod64)
        wait_until(lambda: set(extra.ids) <= set(admin.agents()), "the extra agents registered")
        yield extra
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
