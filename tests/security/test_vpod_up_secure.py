"""`vpod up --secure`: an authenticated embedded pod, and a data directory that stays secure."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from tests.e2e.conftest import start_pod
from vpod.cli.config import parse_hcl

from .procs import run_tool

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def test_vpod_up_secure_end_to_end(tmp_path: Path) -> None:
    """The first run makes the administrator; restarts reuse its key; an open start is refused."""
    pod = start_pod(tmp_path, "--secure", "--pod", "pod16")
    try:
        admin_config = tmp_path / "admin.vipu-cli.hcl"
        assert str(admin_config) in pod.ready_line
        assert stat.S_IMODE(admin_config.stat().st_mode) == 0o600
        admin = parse_hcl(admin_config.read_text())
        assert admin["admin-api-port"] == str(pod.admin_port)
        user = parse_hcl(pod.config.read_text())
        assert user["api-user-id"] == "default"

        created = pod.run("vipu", "create", "partition", "p1", "--size", "4")
        assert "success" in created.stdout
        users = pod.run("vipu-admin", "--config", str(admin_config), "list", "users")
        assert [r.split("|")[0].strip() for r in users.stdout.splitlines()[2:]] == [
            "admin",
            "default",
        ]
        not_admin = pod.run("vipu-admin", "list", "users", check=False)
        assert not_admin.returncode == 1
        assert "default is not an administrator" in not_admin.stderr
        anonymous = run_tool(
            "vipu", "-H", "127.0.0.1", "--api-port", str(pod.user_port), "list", "partitions"
        )
        assert anonymous.returncode == 1
        assert "--secure" in anonymous.stderr
    finally:
        assert pod.stop() == 0

    refused = run_tool("vpod", "up", "--data-dir", str(tmp_path), "--port", "0")
    assert refused.returncode == 2
    assert "was set up with --secure: run vpod up --secure" in refused.stderr

    again = start_pod(tmp_path, "--secure")
    try:
        assert (
            parse_hcl((tmp_path / "admin.vipu-cli.hcl").read_text())["api-access-key"]
            == (admin["api-access-key"])
        )
        listed = again.run("vipu", "list", "partitions")
        assert "p1" in listed.stdout
    finally:
        again.stop()
