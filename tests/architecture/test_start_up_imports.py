"""What a process imports at start-up is what it costs every time it starts (docs/testing.md,
"Keeping the suite fast"): the command lines load no server framework, and a controller
that does not serve the cloud does not build the cloud's routes."""

from __future__ import annotations

import json
import subprocess
import sys

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


def test_vipu_server_imports_the_cloud_only_to_serve_it() -> None:
    """The cloud extension (and its API's routes) is imported by ``_run`` when the cloud is
    served; ``vipu-server --no-cloud`` (``vpod up --open``) starts without it."""
    loaded = imported_by("vpod.launch.server_main")
    assert "vpod.controller.server" in loaded
    assert not {"vpod.cloud.extension", "vpod.cloud.api"} & loaded


def _under(loaded: set[str], *packages: str) -> set[str]:
    return {m for m in loaded if any(m == p or m.startswith(p + ".") for p in packages)}


def test_vipu_server_loads_no_cloud_alembic_or_http_client_before_it_needs_them() -> None:
    """A ``--no-cloud`` controller starts without the cloud layer (its settings and their
    checks are imported when the cloud is served or ``--ssh-direct-*`` is given), without
    Alembic and SQLAlchemy's PostgreSQL dialect (imported by ``Store.migrate`` only when the
    store is behind head: tests/store/test_schema_version.py), without httpx (the web
    console's login imports it) and without cryptography (``--tls-init`` imports it to make
    certificates: tests/security/test_tls_material.py)."""
    loaded = imported_by("vpod.launch.server_main")
    assert "vpod.web" in loaded  # every controller serves the console
    unwanted = ("vpod.cloud", "alembic", "sqlalchemy.dialects.postgresql", "httpx", "cryptography")
    assert _under(loaded, *unwanted) == set()


def test_vpod_up_loads_the_cloud_client_only_to_set_up_the_cloud() -> None:
    """``vpod up`` imports the cloud's settings and HTTP client when it sets the cloud up
    (after its children started), never for ``vpod up --open``."""
    loaded = imported_by("vpod.launch.up")
    assert "vpod.launch.cloud_up" in loaded
    assert _under(loaded, "vpod.cloud", "vpod.client.cloud_calls", "httpx", "pydantic") == set()
