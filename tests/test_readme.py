"""The README is true to the letter: every ```bash block runs as written, from the repository
root, with the default data directory.

The blocks run in a mirror of the repository root (a temporary directory of links to every
entry of the root but ``vpod-data``, and to the same ``.venv``), so the default data
directory is a fresh ``vpod-data`` and a developer's own is never touched. Each block is what
a user types into a new shell: a clean environment (no ``.venv/bin`` on ``PATH``, no
``VIPU_CLI_*``/``VPOD_*``), the block's own ``source``/``export`` lines carried to its later
lines. ``scripts/test`` is skipped (it is the command running this). Commands that serve
until stopped start in the background and are waited for, as a user waits for their ready
line: ``scripts/up`` serves every later block and stops at the end; a ``vipu-server`` or
``vipu-agent`` inside a block stops at the end of that block.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import socket
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
SKIPPED = ("scripts/test",)
DEFAULT_PORTS = (8090, 8091, 8080)
READY_TIMEOUT_S = 180.0
"""Generous: `scripts/up` may first run the bootstrap, and the machine is shared."""
LINE_TIMEOUT_S = 600.0

pytestmark = [pytest.mark.system, pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(2400)]


def bash_blocks(text: str) -> list[list[str]]:
    """The command lines of every ```bash block, in order (continuations joined)."""
    blocks = []
    for body in re.findall(r"^```bash\n(.*?)^```", text, flags=re.S | re.M):
        lines: list[str] = []
        pending = ""
        for raw in body.splitlines():
            if raw.rstrip().endswith("\\"):
                pending += raw.rstrip()[:-1] + " "
                continue
            line = (pending + raw).strip()
            pending = ""
            if line and not line.startswith("#"):
                lines.append(line)
        blocks.append(lines)
    return blocks


def command_words(line: str) -> list[str]:
    """The words of a line before its comment."""
    return shlex.split(line, comments=True)


def ready_marker(line: str) -> str | None:
    """The ready line a long-running command prints, or None for a command that ends."""
    words = command_words(line)
    if not words:
        return None
    program = words[0]
    if program == "scripts/up":
        return "vpod is up:"
    if program.endswith("vipu-server") and not {"--init", "--tls-init"} & set(words):
        return "vipu-server ready:"
    if program.endswith("vipu-agent"):
        return "vipu-agent ready:"
    return None


def carried(line: str) -> bool:
    """A line whose effect a shell keeps for the next ones."""
    return line.startswith(("source ", "export ", ". ")) or bool(
        re.match(r"^[A-Za-z_][A-Za-z0-9_]*=\$\(", line)
    )


@dataclass
class Background:
    """A long-running command of the README, started as the user would in its own shell."""

    line: str
    proc: subprocess.Popen[str]
    output: list[str] = field(default_factory=list)

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGINT)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()


def _ends(text: str, keep: int = 2000) -> str:
    """The first and the last ``keep`` characters: a failing command's first error is often
    followed by pages of shutdown noise."""
    if len(text) <= 2 * keep:
        return text
    return f"{text[:keep]}\n[... {len(text) - 2 * keep} characters ...]\n{text[-keep:]}"


class Shell:
    """Runs README lines in the mirror with a fresh user's environment."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("VIPU_CLI_", "VPOD_", "VIRTUAL_ENV"))
        }
        bin_dir = str(REPO / ".venv" / "bin")
        self.env["PATH"] = os.pathsep.join(
            p for p in self.env.get("PATH", "").split(os.pathsep) if p != bin_dir
        )

    def script(self, prelude: list[str], lines: list[str]) -> str:
        return "\n".join(["set -euo pipefail", *prelude, *lines]) + "\n"

    def run(self, prelude: list[str], lines: list[str]) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            ["bash", "-c", self.script(prelude, lines)],
            cwd=self.root,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=LINE_TIMEOUT_S,
            check=False,
        )
        assert done.returncode == 0, (
            f"README lines failed ({done.returncode}):\n" + "\n".join(lines)
            + f"\n--- stdout\n{_ends(done.stdout)}\n--- stderr\n{_ends(done.stderr)}"
        )  # fmt: skip
        return done

    def start(self, prelude: list[str], line: str, marker: str) -> Background:
        proc = subprocess.Popen(
            ["bash", "-c", self.script(prelude, [line])],
            cwd=self.root,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        started = Background(line, proc)
        ready = threading.Event()

        def pump() -> None:
            assert proc.stdout is not None
            for text in proc.stdout:
                started.output.append(text)
                if text.startswith(marker):
                    ready.set()
            ready.set()

        threading.Thread(target=pump, daemon=True).start()
        if not ready.wait(READY_TIMEOUT_S) or not any(x.startswith(marker) for x in started.output):
            started.stop()
            raise AssertionError(f"{line!r} printed no {marker!r}:\n{''.join(started.output)}")
        return started


def mirror_of_the_repository(target: Path) -> Path:
    """A directory that is the repository root to a user, without its vpod-data."""
    target.mkdir()
    for entry in REPO.iterdir():
        if entry.name not in {"vpod-data", ".git"}:
            (target / entry.name).symlink_to(entry)
    (target / ".git").symlink_to(REPO / ".git")
    return target


def wait_registered(shell: Shell, prelude: list[str], line: str) -> None:
    """An agent line with --register: wait until the controller lists its agents (a user
    typing the next command has given them that long)."""
    words = command_words(line)
    if "--register" not in words:
        return
    count = int(words[words.index("--machines") + 1]) if "--machines" in words else 1
    target = words[words.index("--register") + 1]
    host, port = target.rsplit(":", 1)
    probe = f"vipu-admin -H {host} --api-port {port} list agents --json"
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        listed = subprocess.run(
            ["bash", "-c", shell.script(prelude, [probe])],
            cwd=shell.root, env=shell.env, capture_output=True, text=True, check=False,
        )  # fmt: skip
        if listed.returncode == 0 and listed.stdout.count('"id"') >= count:
            return
        time.sleep(0.5)
    raise AssertionError(f"the agents of {line!r} did not register")


def ports_taken() -> list[int]:
    taken = []
    for port in DEFAULT_PORTS:
        with socket.socket() as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                taken.append(port)
    return taken


@pytest.fixture
def shell(tmp_path: Path) -> Shell:
    taken = ports_taken()
    if taken:
        pytest.skip(f"the README's default ports {taken} are in use on this machine")
    stamp = REPO / ".venv" / ".vpod-lock-stamp"
    # what scripts/bootstrap's lock_state writes once the environment matches
    expected = (
        b"compile-bytecode\n"
        + (REPO / "requirements.lock").read_bytes()
        + (REPO / "pyproject.toml").read_bytes()
    )
    if not stamp.exists() or stamp.read_bytes() != expected:
        # scripts/up would reinstall into the shared .venv from the mirror, pointing its
        # scripts at a directory that is gone after the test.
        pytest.skip(
            ".venv is older than requirements.lock or pyproject.toml: run scripts/bootstrap"
        )
    return Shell(mirror_of_the_repository(tmp_path / "repo"))


def test_every_bash_block_of_the_readme_runs_as_written(shell: Shell) -> None:
    """Block by block, line by line, as a new user copies them."""
    blocks = bash_blocks(README.read_text())
    assert len(blocks) >= 6, "the README lost its command blocks"
    served: list[Background] = []
    try:
        for block in blocks:
            prelude: list[str] = []
            pending: list[str] = []
            local: list[Background] = []
            try:
                for line in block:
                    words = command_words(line)
                    if words and words[0] in SKIPPED:
                        continue
                    marker = ready_marker(line)
                    if marker is None:
                        pending.append(line)
                        continue
                    if pending:
                        shell.run(prelude, pending)
                        prelude += [x for x in pending if carried(x)]
                        pending = []
                    started = shell.start(prelude, line, marker)
                    wait_registered(shell, prelude, line)
                    (served if words[0] == "scripts/up" else local).append(started)
                if pending:
                    shell.run(prelude, pending)
            finally:
                for background in reversed(local):
                    background.stop()
    finally:
        for background in reversed(served):
            background.stop()
    assert served, "no scripts/up in the README"
    assert served[0].proc.returncode == 0, "".join(served[0].output)
    assert (shell.root / "vpod-data" / "vipu-cli.hcl").is_file()
