"""Where the clients' settings come from, and how answers map onto the exception tree.

No server: these read files and environments, and classify statuses.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from vpod.client import (
    AdminClient,
    CloudClient,
    ConfigError,
    Conflict,
    DeadlineExceeded,
    FailedPrecondition,
    InvalidArgument,
    NoCapacity,
    NotConfigured,
    RateLimited,
    RestClient,
    RetryableError,
    ServerError,
    Unavailable,
    UserClient,
)
from vpod.client.cloud_config import resolve_cloud, write_config
from vpod.client.config import render_hcl
from vpod.client.errors import error_of_code, error_of_http


def hcl(path: Path, **values: str | int) -> Path:
    path.write_text(render_hcl({k.replace("_", "-"): v for k, v in values.items()}))
    return path


def test_arguments_beat_environment_beat_the_file(tmp_path: Path) -> None:
    config = hcl(tmp_path / "vipu-cli.hcl", api_host="file-host", api_port=9001, api_user_id="f")
    env = {"VIPU_CLI_API_PORT": "9002", "VIPU_CLI_API_ACCESS_KEY": "env-key"}
    from_file = UserClient.from_config(str(config), env={})
    assert (from_file.endpoint.host, from_file.endpoint.port) == ("file-host", 9001)
    from_env = UserClient.from_config(str(config), env=env)
    assert (from_env.endpoint.port, from_env.endpoint.access_key) == (9002, "env-key")
    assert from_env.endpoint.user_id == "f"
    from_argument = UserClient.from_config(str(config), env=env, api_port=9003)
    assert from_argument.endpoint.port == 9003


def test_the_config_file_is_found_like_vipu_finds_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    hcl(tmp_path / "vipu-cli.hcl", api_host="local-host")
    assert UserClient.from_config(env={}).endpoint.host == "local-host"
    other = hcl(tmp_path / "other.hcl", api_host="env-file-host")
    env = {"VIPU_CLI_CONFIG": str(other)}
    assert UserClient.from_config(env=env).endpoint.host == "env-file-host"


def test_the_admin_endpoint_has_its_own_port(tmp_path: Path) -> None:
    config = hcl(tmp_path / "c.hcl", api_host="ctl", api_port=7000)
    admin = AdminClient.from_config(str(config), env={})
    assert (admin.endpoint.host, admin.endpoint.port) == ("ctl", 8091)
    moved = AdminClient.from_config(str(config), env={"VIPU_CLI_ADMIN_API_PORT": "7001"})
    assert moved.endpoint.port == 7001
    # The user client needs no admin endpoint: ListAllocations is served on the user port.
    assert not hasattr(UserClient.from_config(str(config), env={}), "admin_endpoint")


def test_bad_settings_are_invalid_arguments(tmp_path: Path) -> None:
    config = hcl(tmp_path / "c.hcl", api_port="eighty")
    with pytest.raises(InvalidArgument, match="must be a port number"):
        UserClient.from_config(str(config), env={})
    with pytest.raises(InvalidArgument, match="does not exist"):
        UserClient.from_config(str(tmp_path / "missing.hcl"), env={})


def test_rest_settings_come_from_the_same_file(tmp_path: Path) -> None:
    config = hcl(tmp_path / "c.hcl", api_host="ctl", api_user_id="u", api_access_key="k")
    rest = RestClient.from_config(str(config), env={})
    assert rest.settings.url == "http://ctl:8080"
    assert (rest.settings.user_id, rest.settings.access_key) == ("u", "k")
    tls = hcl(tmp_path / "tls.hcl", api_host="ctl", tls_ca=str(tmp_path / "ca.pem"))
    assert RestClient.from_config(str(tls), env={}).settings.url == "https://ctl:8080"
    given = RestClient.from_config(str(config), env={}, url="http://elsewhere:1")
    assert given.settings.url == "http://elsewhere:1"


def test_cloud_settings_each_from_the_first_place_that_gives_it(tmp_path: Path) -> None:
    toml = tmp_path / "vpod-cli.toml"
    write_config(toml, "http://file:8080/", "file-token", "p")
    assert resolve_cloud(env={"VPOD_CONFIG": str(toml)}).url == "http://file:8080"
    mixed = resolve_cloud(env={"VPOD_CONFIG": str(toml), "VPOD_TOKEN": "env-token"})
    assert (mixed.url, mixed.token) == ("http://file:8080", "env-token")
    argued = resolve_cloud("http://arg", "arg-token", env={"VPOD_URL": "http://env"})
    assert (argued.url, argued.token) == ("http://arg", "arg-token")
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    write_config(data_dir / "vpod-cli.toml", "http://dir", "dir-token", "p")
    assert resolve_cloud(env={"VPOD_DATA_DIR": str(data_dir)}).token == "dir-token"
    with pytest.raises(NotConfigured, match="give --url and --token"):
        resolve_cloud(env={"VPOD_DATA_DIR": str(tmp_path / "empty")})
    client = CloudClient.from_config(toml, env={})
    assert client.settings.source == str(toml)


def test_statuses_map_onto_the_tree() -> None:
    assert isinstance(error_of_http(503, "", "busy", "u"), Unavailable)
    assert isinstance(error_of_http(503, "", "busy", "u"), RetryableError)
    assert isinstance(error_of_http(429, "", "slow down", "u"), RateLimited)
    assert isinstance(error_of_http(504, "", "late", "u"), DeadlineExceeded)
    assert type(error_of_http(409, "", "clash", "u")) is Conflict
    assert isinstance(error_of_http(409, "RESOURCE_EXHAUSTED", "full", "u"), NoCapacity)
    assert isinstance(error_of_http(409, "FAILED_PRECONDITION", "busy", "u"), FailedPrecondition)
    assert isinstance(error_of_http(500, "INTERNAL", "bug", "u"), ServerError)
    assert not isinstance(error_of_http(500, "INTERNAL", "bug", "u"), RetryableError)
    error = error_of_code("UNKNOWN", "what")
    assert (type(error), error.code, str(error)) == (ServerError, "UNKNOWN", "what")


def test_unusable_tls_files_of_an_http_client_are_config_errors(tmp_path: Path) -> None:
    config = hcl(tmp_path / "tls.hcl", api_host="127.0.0.1", tls_ca=str(tmp_path / "no-ca.pem"))
    with pytest.raises(ConfigError, match="cannot use the TLS files"):
        RestClient.from_config(str(config), env={}).version()
