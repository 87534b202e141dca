"""What a process imports at start-up is what it costs every time it starts (docs/testing.md,
"Keeping the suite fast"): the command lines load no server framework, and a controller
that does not serve the cloud does not build the cloud's routes."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

SERVER_FRAMEWORKS = ("fastapi", "sqlalchemy", "alembic", "pydantic", "uvicorn")


def imported_by(module: str) -> set[str]:
    """The top-level packages and ``vpod`` modules a fresh interpreter holds after ``module``."""
    code = (
        f"import json, sys, {module}\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    return set(json.loads(done.stdout))


@pytest.mark.parametrize(
    "module", ["vpod.cli.vipu_main", "vpod.cli.vipu_admin_main", "vpod.cli.vpod_main"]
)
def test_the_command_lines_load_no_server_framework(module: str) -> None:
    loaded = {name.split(".")[0] for name in imported_by(module)}
    assert loaded.isdisjoint(SERVER_FRAMEWORKS), sorted(loaded & set(SERVER_FRAMEWORKS))


def test_the_user_command_line_loads_no_admin_api() -> None:
    # The admin API's messages and records were a quarter of a `vipu` command's start;
    # only `vipu list allocations` needs them, and loads them itself.
    loaded = imported_by("vpod.cli.vipu_main")
    admin = {"vpod.wire.admin_pb2", "vpod.client.admin_records", "vpod.client.admin"}
    assert loaded.isdisjoint(admin), sorted(loaded & admin)


def _under(loaded: set[str], *packages: str) -> set[str]:
    return {m for m in loaded if any(m == p or m.startswith(p + ".") for p in packages)}


_AT_READY = """
import json, os, signal, sys
from pathlib import Path
from vpod.launch.server_main import main

out, stdout = Path(sys.argv[1]), sys.stdout


class Watch:
    \"\"\"stdout, noting the modules held when the ready line is printed, then stopping.\"\"\"

    def write(self, text):
        if "vipu-server ready" in text:
            out.write_text(json.dumps(sorted(sys.modules)))
            os.kill(os.getpid(), signal.SIGINT)
        return stdout.write(text)

    def __getattr__(self, name):
        return getattr(stdout, name)


sys.stdout = Watch()
try:
    main(sys.argv[2:])
except SystemExit as exc:
    if exc.code:
        raise
if not out.exists():
    out.write_text(json.dumps(sorted(sys.modules)))  # it exits without serving
"""


def held_by_vipu_server(tmp_path: Path, *args: str) -> set[str]:
    """The modules a real ``vipu-server ARGS`` holds when ready (or when it exits, for
    ``--init``), in a fresh interpreter on a fresh data directory."""
    out = tmp_path / f"modules-{len(list(tmp_path.glob('modules-*')))}.json"
    subprocess.run(
        [sys.executable, "-c", _AT_READY, str(out), "--data-dir", str(tmp_path / "data"), *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return set(json.loads(out.read_text()))


def test_vipu_server_loads_what_it_serves_and_no_more(tmp_path: Path) -> None:
    """``--init`` loads no serving stack (FastAPI, uvicorn, the transports, the web console:
    imported by ``_run``), nor Alembic for a new SQLite store. A ``--no-cloud`` controller,
    ready, holds the web console and none of the cloud layer (its settings and their checks
    are imported when the cloud is served or ``--ssh-direct-*`` is given), of Alembic and
    SQLAlchemy's PostgreSQL dialect (``Store.migrate`` imports them only for a store behind
    head: tests/store/test_schema_version.py), of httpx (the console's login imports it) or
    of cryptography (``--tls-init`` imports it to make certificates)."""
    initialised = held_by_vipu_server(tmp_path, "--init")
    # An empty SQLite store: made from the schema at head (fresh_sqlite.sql), not by Alembic.
    assert "vpod.store.fresh_sqlite" in initialised
    assert _under(initialised, "alembic", "vpod.store.migrate") == set()
    serving_stack = ("fastapi", "uvicorn", "vpod.controller.server", "vpod.web", "vpod.cloud")
    assert _under(initialised, *serving_stack) == set()

    ports = ("--port", "0", "--admin-port", "0", "--http-port", "0", "--log-level", "warning")
    ready = held_by_vipu_server(tmp_path, *ports, "--no-cloud")
    assert {"vpod.controller.server", "vpod.web", "uvicorn"} <= ready
    unwanted = ("vpod.cloud", "alembic", "sqlalchemy.dialects.postgresql", "httpx", "cryptography")
    assert _under(ready, *unwanted) == set()


def test_vpod_up_loads_the_cloud_client_only_to_set_up_the_cloud() -> None:
    """``vpod up`` imports the cloud's settings and HTTP client when it sets the cloud up
    (after its children started), never for ``vpod up --open``."""
    loaded = imported_by("vpod.launch.up")
    assert "vpod.launch.cloud_up" in loaded
    assert _under(loaded, "vpod.cloud", "vpod.client.cloud_calls", "httpx", "pydantic") == set()


def test_vpod_help_lists_the_cloud_commands_without_loading_the_cloud_client() -> None:
    """``vpod --help`` imports every command to list its short help; the cloud commands import
    the cloud client (httpx, pydantic, the cloud's shapes) and rich when they run, not then."""
    code = (
        "import json, sys\n"
        "from vpod.cli.vpod_main import cli\n"
        "try:\n"
        "    cli(['--help'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(json.dumps(sorted(sys.modules)), file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert "cluster" in done.stdout
    assert "flavors" in done.stdout
    loaded = set(json.loads(done.stderr))
    assert "vpod.cli.cloud_cluster" in loaded  # listed: its short help comes from the command
    unwanted = ("vpod.client.cloud_calls", "vpod.wire.rest", "httpx", "pydantic")
    assert _under(loaded, *unwanted) == set()


def test_httpx_comes_without_its_command_line_client() -> None:
    """``import httpx`` imports httpx's own command line client (click, rich, pygments) when
    they are installed; vpod's processes import httpx without it (``vpod/import_hooks.py``), and
    ``httpx.main`` still loads and runs the real one when called."""
    loaded = imported_by("vpod.client.cloud_calls")
    assert "httpx" in loaded
    assert _under(loaded, "rich", "pygments") == set(), sorted(_under(loaded, "rich", "pygments"))
    code = (
        "import sys, vpod, httpx\n"
        "sys.argv = ['httpx', '--help']\n"
        "httpx.main()\n"
    )  # fmt: skip
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "Usage: httpx" in done.stdout


_VPOD_CALL = """
import atexit, json, sys
atexit.register(lambda: print(json.dumps(sorted(sys.modules)), file=sys.stderr))
from vpod.cli.vpod_main import main
sys.argv = ["vpod", "flavors", "--url", "http://127.0.0.1:9/api/cloud/v1", "--token", "t"]
main()
"""


def test_a_vpod_command_leaves_trio_out_and_trio_stays_importable() -> None:
    """httpcore imports trio whenever it is installed (selenium installs it beside vpod); a
    ``vpod`` command never runs httpx under trio, so its entry point imports httpcore without
    it, and trio can still be imported in that process afterwards."""
    pytest.importorskip("trio", reason="trio is not installed: nothing to leave out")
    done = subprocess.run(
        [sys.executable, "-c", _VPOD_CALL], capture_output=True, text=True, timeout=120
    )
    assert done.returncode != 0  # nothing listens on port 9: the call itself fails
    loaded = set(json.loads(done.stderr.strip().splitlines()[-1]))
    assert {"httpx", "httpcore", "vpod.client.cloud_calls"} <= loaded  # the call was tried
    assert _under(loaded, "trio") == set(), sorted(_under(loaded, "trio"))
    code = (
        "import sys\n"
        "from vpod.import_hooks import httpcore_without_trio\n"
        "httpcore_without_trio()\n"
        "import httpx, httpcore\n"
        "assert 'trio' not in sys.modules\n"
        "import trio\n"
        "print(trio.__name__, httpx.Client().get.__name__)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["trio", "get"]


_GPU_AGENT = """
import atexit, json, sys
atexit.register(lambda: print(json.dumps(sorted(sys.modules)), file=sys.stderr))
from vpod.launch.gpu_agent_main import main
sys.argv = ["vpod-gpu-agent", "--controller", "http://127.0.0.1:9", "--backend", "emulated",
            "--token-file", sys.argv[1], "--device-dir", sys.argv[2], "--interval", "0.2"]
sys.exit(main())
"""


def test_the_gpu_agent_leaves_trio_out(tmp_path: Path) -> None:
    """``vpod-gpu-agent`` runs httpx under asyncio only: its entry point leaves trio out too
    (httpx imports httpcore when the agent makes its first client, after the entry point)."""
    pytest.importorskip("trio", reason="trio is not installed: nothing to leave out")
    token = tmp_path / "token"
    token.write_text("t\n")
    agent = subprocess.Popen(
        [sys.executable, "-c", _GPU_AGENT, str(token), str(tmp_path / "devices")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert agent.stdout is not None
        assert "ready" in agent.stdout.readline()
        time.sleep(1.0)  # its first registration tried (nothing listens on port 9)
    finally:
        agent.terminate()
        _, err = agent.communicate(timeout=60)
    loaded = set(json.loads(err.strip().splitlines()[-1]))
    assert {"httpx", "httpcore"} <= loaded
    assert _under(loaded, "trio") == set(), sorted(_under(loaded, "trio"))
