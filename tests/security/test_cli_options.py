"""Parsing of the security options: list events' times, vipu-server's and vipu-agent's TLS."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import click
import pytest

from vpod.agent.registration import RegistrationTls
from vpod.cli.config import parse_hcl
from vpod.cli.vipu_admin_events import Moment, events_request
from vpod.controller.settings import Settings
from vpod.controller.tls import TlsFiles
from vpod.controller.tls_material import write_tls_material
from vpod.launch.server_security import SecurityOptions, admin_config_text, server_tls

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "moment"),
    [
        ("90s", NOW - timedelta(seconds=90)),
        ("30m", NOW - timedelta(minutes=30)),
        ("1.5h", NOW - timedelta(minutes=90)),
        ("7D", NOW - timedelta(days=7)),
        ("2w", NOW - timedelta(weeks=2)),
        ("2026-02-01", datetime(2026, 2, 1, tzinfo=UTC)),
        ("2026-02-01T10:00:00Z", datetime(2026, 2, 1, 10, tzinfo=UTC)),
        ("2026-02-01T10:00:00+02:00", datetime(2026, 2, 1, 8, tzinfo=UTC)),
    ],
)
def test_times_are_moments_or_ages(text: str, moment: datetime) -> None:
    """An age counts back from now; a time without an offset is UTC."""
    assert Moment(now=lambda: NOW).convert(text, None, None) == moment


def test_a_time_that_is_neither_says_what_is_accepted() -> None:
    with pytest.raises(click.BadParameter, match=r"neither a time .* nor an age"):
        Moment(now=lambda: NOW).convert("yesterday", None, None)


def test_the_request_carries_only_the_filters_given() -> None:
    request = events_request(
        since=NOW, until=None, actor="alice", action="", target="", outcome="", limit=5
    )
    assert request.HasField("since")
    assert not request.HasField("until")
    assert request.since.ToDatetime(UTC) == NOW
    assert (request.actor, request.action, request.limit) == ("alice", "", 5)


def test_agent_tls_reads_the_files_and_checks_their_combination(tmp_path: Path) -> None:
    files = TlsFiles(tmp_path / "tls")
    write_tls_material(files, hosts=[])
    assert RegistrationTls.from_files(None) is None
    only_ca = RegistrationTls.from_files(files.ca_cert)
    assert only_ca is not None
    assert only_ca.cert is None
    mutual = RegistrationTls.from_files(files.ca_cert, files.client_cert, files.client_key)
    assert mutual is not None
    assert mutual.key == files.client_key.read_bytes()
    with pytest.raises(ValueError, match="together"):
        RegistrationTls.from_files(files.ca_cert, files.client_cert, None)
    with pytest.raises(ValueError, match="--tls-cert needs --tls-ca"):
        RegistrationTls.from_files(None, files.client_cert, files.client_key)
    with pytest.raises(ValueError, match="cannot read --tls-ca file"):
        RegistrationTls.from_files(tmp_path / "missing.crt")


def test_server_tls_comes_from_the_data_dir_unless_files_are_named(tmp_path: Path) -> None:
    assert server_tls(SecurityOptions(), tmp_path) is None
    plain_tls = server_tls(SecurityOptions(tls=True), tmp_path)
    assert plain_tls is not None
    assert plain_tls.cert == tmp_path / "tls" / "server.crt"
    assert plain_tls.ca is None, "no client certificates to check: no CA needed"
    mutual = server_tls(SecurityOptions(tls_client_auth=True), tmp_path)
    assert mutual is not None
    assert mutual.require_client_auth
    assert mutual.ca == tmp_path / "tls" / "ca.crt"
    named = server_tls(SecurityOptions(tls_cert=Path("/c"), tls_key=Path("/k")), tmp_path)
    assert named is not None
    assert (named.cert, named.key) == (Path("/c"), Path("/k"))


def test_the_admin_config_names_reachable_endpoints_and_the_client_pair(tmp_path: Path) -> None:
    """A server listening on 0.0.0.0 is reached on 127.0.0.1; mutual TLS adds cert and key."""
    write_tls_material(TlsFiles.in_data_dir(tmp_path), hosts=[])
    settings = Settings(data_dir=tmp_path, host="0.0.0.0", admin_host="ctl", admin_port=9091)
    text = admin_config_text(settings, SecurityOptions(tls_client_auth=True), "admin", "k3y")
    values = parse_hcl(text)
    assert values["api-host"] == "127.0.0.1"
    assert (values["admin-api-host"], values["admin-api-port"]) == ("ctl", "9091")
    assert (values["api-user-id"], values["api-access-key"]) == ("admin", "k3y")
    assert values["tls-cert"] == str((tmp_path / "tls" / "client.crt").resolve())
    plain = parse_hcl(admin_config_text(settings, SecurityOptions(), "admin", "k3y"))
    assert "tls-ca" not in plain
