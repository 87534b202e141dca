"""`vpod up` is secure by default: an authenticated embedded pod, and a data directory that
keeps its mode until it is switched on purpose."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from tests.e2e.conftest import start_pod
from vpod.cli.config import parse_hcl

from .procs import run_tool

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def test_vpod_up_is_secure_by_default_end_to_end(tmp_path: Path) -> None:
    """The first run, without any flag, makes the administrator and authenticates every call;
    restarts reuse its key; an --open start is refused with the way to switch."""
    pod = start_pod(tmp_path, "--pod", "pod16", "--cloud-pod", "none")
    try:
        admin_config = tmp_path / "admin.vipu-cli.hcl"
        assert str(admin_config) in pod.ready_line
        assert stat.S_IMODE(admin_config.stat().st_mode) == 0o600
        assert stat.S_IMODE(pod.config.stat().st_mode) == 0o600
        admin = parse_hcl(admin_config.read_text())
        assert admin["admin-api-port"] == str(pod.admin_port)
        user = parse_hcl(pod.config.read_text())
        assert user["api-user-id"] == "default"
        assert user["api-access-key"]

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

    refused = run_tool("vpod", "up", "--data-dir", str(tmp_path), "--port", "0", "--open")
    assert refused.returncode == 2
    assert "was set up with authentication (the default): start it without --open" in (
        refused.stderr
    )
    assert "--open --switch-mode" in refused.stderr

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


def test_a_data_directory_switches_modes_only_when_asked(tmp_path: Path) -> None:
    """--open --switch-mode serves a secure directory open (partitions kept, anonymous calls
    work, no cloud); a later start without --open is refused until --switch-mode turns
    authentication back on with the same keys."""
    first = start_pod(tmp_path, "--pod", "pod16", "--cloud-pod", "none")
    try:
        first.run("vipu", "create", "partition", "kept", "--size", "8")
        key = parse_hcl(first.config.read_text())["api-access-key"]
    finally:
        assert first.stop() == 0
    opened = start_pod(tmp_path, "--open", "--switch-mode")
    try:
        anonymous = run_tool(
            "vipu", "-H", "127.0.0.1", "--api-port", str(opened.user_port), "list", "partitions"
        )
        assert anonymous.returncode == 0, anonymous.stderr
        assert "kept" in anonymous.stdout
        assert any("vpod cloud: off in open mode" in line for line in opened.output)
    finally:
        assert opened.stop() == 0
    refused = run_tool("vpod", "up", "--data-dir", str(tmp_path), "--port", "0")
    assert refused.returncode == 2
    assert "was set up open (--open, no authentication): start it with --open" in refused.stderr
    assert "--switch-mode" in refused.stderr
    secured = start_pod(tmp_path, "--switch-mode")
    try:
        assert parse_hcl(secured.config.read_text())["api-access-key"] == key
        assert "kept" in secured.run("vipu", "list", "partitions").stdout
        anonymous = run_tool(
            "vipu", "-H", "127.0.0.1", "--api-port", str(secured.user_port), "list", "partitions"
        )
        assert anonymous.returncode == 1
    finally:
        assert secured.stop() == 0
