"""vpod installed or checked out under /tmp still works inside servers.

A server's own /tmp is bound over the host's in its sandbox, so an
installation there would vanish: the sandbox shows it under
/opt/vpod-install instead, with PATH, PYTHONPATH and the commands' ``#!``
lines pointing there. This test makes a real checkout (the sources and
pyproject) and virtual environment under /tmp with uv, and runs that
installation's `vipu` inside a real sandbox. Needs root, bubblewrap and uv.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from vpod.cloud.drivers.sandbox import UID_FIRST, sandbox_problem

REPO = Path(__file__).resolve().parents[2]
UV = Path(sys.executable).with_name("uv")
pytestmark = [
    pytest.mark.system,
    pytest.mark.skipif(sandbox_problem() is not None, reason=f"no sandbox: {sandbox_problem()}"),
    pytest.mark.skipif(not UV.exists(), reason="uv is not in this environment (scripts/bootstrap)"),
]
PROBE = """
import subprocess, sys
from pathlib import Path
from vpod.cloud.drivers.sandbox import Sandbox, relocated_python_dirs
root = Path(sys.argv[1])
for sub in ("home", "tmp", "etc"):
    (root / sub).mkdir(parents=True, exist_ok=True)
    (root / sub).chmod(0o777)
print("relocated", len(relocated_python_dirs()))
box = Sandbox(root, "reloc", int(sys.argv[2]))
path = str(Path(sys.executable).parent) + ":/usr/bin:/bin"
env = box.environment({"PATH": path, "HOME": "/home"})
script = "command -v vipu; vipu --help | head -1; python3 -c 'import vpod; print(vpod.__file__)'"
with box.command(["sh", "-c", script]) as (cmd, fds):
    done = subprocess.run(cmd, env=env, pass_fds=fds, capture_output=True, text=True, timeout=60)
print(done.stdout, done.stderr, "exit", done.returncode)
"""


@pytest.fixture(scope="module")
def checkout() -> Iterator[Path]:
    """A checkout and virtual environment under /tmp (sources copied, dependencies from
    uv's cache)."""
    top = Path(tempfile.mkdtemp(prefix="vpod-under-tmp-", dir="/tmp"))
    try:
        shutil.copytree(REPO / "src", top / "src", ignore=shutil.ignore_patterns("__pycache__"))
        for name in ("pyproject.toml", "README.md", "requirements.lock"):
            shutil.copy(REPO / name, top / name)
        venv = top / ".venv"
        run = {
            "check": True,
            "capture_output": True,
            "timeout": 600,
            "env": {**os.environ, "UV_PYTHON_DOWNLOADS": "never"},
        }
        subprocess.run(
            [str(UV), "venv", "-q", "--python", sys.base_prefix + "/bin/python3", str(venv)], **run
        )  # type: ignore[call-overload]
        py = str(venv / "bin" / "python")
        subprocess.run(
            [str(UV), "pip", "sync", "-q", "--python", py, str(top / "requirements.lock")], **run
        )  # type: ignore[call-overload]
        subprocess.run(
            [str(UV), "pip", "install", "-q", "--python", py, "--no-deps", "-e", str(top)], **run
        )  # type: ignore[call-overload]
        yield top
    finally:
        shutil.rmtree(top, ignore_errors=True)


def test_vipu_of_an_installation_under_tmp_runs_inside_a_server(checkout: Path) -> None:
    server_root = Path(tempfile.mkdtemp(prefix="vpod-server-"))
    try:
        done = subprocess.run(
            [
                str(checkout / ".venv" / "bin" / "python"),
                "-c",
                PROBE,
                str(server_root),
                str(UID_FIRST + 9000),
            ],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    finally:
        shutil.rmtree(server_root, ignore_errors=True)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "relocated 2" in out, out  # the venv and the checkout's sources
    assert "/opt/vpod-install/bin/vipu" in out, out
    assert "Usage: vipu" in out, out
    assert "/opt/vpod-install/" in out.split("Usage: vipu", 1)[1], out  # vpod imported there
    assert "exit 0" in out, out
