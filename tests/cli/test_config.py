"""Settings of the CLIs: the vipu-cli.hcl format, where the file is found, precedence."""

from __future__ import annotations

from pathlib import Path

import pytest

from vpod.cli.config import (
    ConfigError,
    Endpoint,
    admin_endpoint,
    env_var,
    find_config_file,
    load_settings,
    parse_hcl,
    render_hcl,
    resolve_endpoint,
    user_endpoint,
)


def test_parse_reads_quoted_and_bare_values_and_skips_comments() -> None:
    """Strings in quotes, numbers bare, '#' and '//' comments, blank lines ignored."""
    text = """
    # written by vipu-admin
    api-host = "ctl.example"   # the controller
    api-port=8090 // user port
    api_user_id="alice"
    API-ACCESS-KEY="k\\"ey"
    """
    assert parse_hcl(text) == {
        "api-host": "ctl.example",
        "api-port": "8090",
        "api-user-id": "alice",
        "api-access-key": 'k"ey',
    }


def test_parse_keeps_comment_characters_inside_strings() -> None:
    """A '#' or '//' inside a quoted value belongs to the value."""
    assert parse_hcl('api-access-key="a#b//c"') == {"api-access-key": "a#b//c"}


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("api-host", "expected key"),
        ('api-host="unclosed', "not closed"),
        ('api-host="a" extra', "unexpected 'extra'"),
        ("api-host=", "has no value"),
    ],
)
def test_parse_errors_name_the_file_and_line(text: str, fragment: str) -> None:
    """A broken line is reported with source:line and what is wrong."""
    with pytest.raises(ConfigError, match=fragment) as caught:
        parse_hcl("# fine\n" + text, source="my.hcl")
    assert str(caught.value).startswith("my.hcl:2:")


def test_render_then_parse_round_trips() -> None:
    """What render_hcl writes, parse_hcl reads back (quotes, backslashes, numbers)."""
    values: dict[str, str | int] = {"api-host": "h", "api-port": 8090, "api-access-key": 'a"b\\c'}
    assert parse_hcl(render_hcl(values)) == {k: str(v) for k, v in values.items()}
    assert "api-port=8090\n" in render_hcl(values)


def test_env_var_names() -> None:
    """Each key has a VIPU_CLI_ variable."""
    assert env_var("api-host") == "VIPU_CLI_API_HOST"
    assert env_var("admin-api-port") == "VIPU_CLI_ADMIN_API_PORT"


def write(path: Path, **values: str | int) -> Path:
    path.write_text(render_hcl({k.replace("_", "-"): v for k, v in values.items()}))
    return path


def test_option_beats_environment_beats_file(tmp_path: Path) -> None:
    """Precedence is option, then VIPU_CLI_*, then the config file, then the default."""
    config = write(tmp_path / "c.hcl", api_host="from-file", api_port=1111, api_user_id="file-u")
    env = {"VIPU_CLI_API_HOST": "from-env", "VIPU_CLI_API_PORT": "2222"}
    both = user_endpoint(load_settings({"api-host": "from-flag"}, env=env, config_path=str(config)))
    assert (both.host, both.port, both.user_id) == ("from-flag", 2222, "file-u")
    only_file = user_endpoint(load_settings({}, env={}, config_path=str(config)))
    assert (only_file.host, only_file.port) == ("from-file", 1111)
    nothing = user_endpoint(load_settings({}, env={}))
    assert (nothing.host, nothing.port, nothing.timeout_s) == ("localhost", 8090, 60.0)


def test_config_file_from_environment_and_working_directory(tmp_path: Path) -> None:
    """VIPU_CLI_CONFIG names the file; else ./vipu-cli.hcl is read when present."""
    named = write(tmp_path / "named.hcl", api_host="named")
    assert find_config_file(None, {"VIPU_CLI_CONFIG": str(named)}) == named
    write(Path("vipu-cli.hcl"), api_host="local")
    assert user_endpoint(load_settings({}, env={})).host == "local"


def test_missing_explicit_config_file_is_an_error(tmp_path: Path) -> None:
    """--config or VIPU_CLI_CONFIG naming no file says so instead of using defaults."""
    with pytest.raises(ConfigError, match="does not exist: check --config"):
        load_settings({}, env={}, config_path=str(tmp_path / "nope.hcl"))
    with pytest.raises(ConfigError, match="from VIPU_CLI_CONFIG"):
        load_settings({}, env={"VIPU_CLI_CONFIG": str(tmp_path / "nope.hcl")})


def test_admin_endpoint_has_its_own_port_and_falls_back_to_the_user_host(tmp_path: Path) -> None:
    """admin-api-host falls back to api-host; the admin port defaults to 8091, never api-port."""
    config = write(tmp_path / "c.hcl", api_host="ctl", api_port=9000)
    settings = load_settings({}, env={}, config_path=str(config))
    assert admin_endpoint(settings) == Endpoint(host="ctl", port=8091)
    config = write(tmp_path / "c.hcl", api_host="ctl", admin_api_host="adm", admin_api_port=7000)
    settings = load_settings({}, env={}, config_path=str(config))
    assert (admin_endpoint(settings).host, admin_endpoint(settings).port) == ("adm", 7000)


def test_admin_flags_beat_admin_keys_of_the_file(tmp_path: Path) -> None:
    """vipu-admin passes its -H/--api-port as admin keys, so they win over the file."""
    config = write(tmp_path / "c.hcl", admin_api_host="adm", admin_api_port=7000)
    endpoint = resolve_endpoint(
        {"admin-api-host": "flag-host", "admin-api-port": 7777},
        admin=True,
        env={},
        config_path=str(config),
    )
    assert (endpoint.host, endpoint.port) == ("flag-host", 7777)


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"VIPU_CLI_API_PORT": "http"}, "VIPU_CLI_API_PORT must be a port number, not 'http'"),
        ({"VIPU_CLI_API_PORT": "70000"}, "must be between 1 and 65535"),
        ({"VIPU_CLI_TIMEOUT": "soon"}, "VIPU_CLI_TIMEOUT must be a positive number"),
    ],
)
def test_bad_values_name_their_source(env: dict[str, str], message: str) -> None:
    """A bad port or timeout names where it came from."""
    with pytest.raises(ConfigError, match=message):
        user_endpoint(load_settings({}, env=env))


def test_bad_value_in_file_names_the_file(tmp_path: Path) -> None:
    """A bad port from the file points at the key in that file."""
    config = write(tmp_path / "c.hcl", api_port="x")
    with pytest.raises(ConfigError, match=f"api-port in {config} must be a port number"):
        user_endpoint(load_settings({}, env={}, config_path=str(config)))


def test_target_brackets_ipv6_and_tls_follows_the_ca() -> None:
    """host:port for gRPC, with [] around IPv6; TLS is on when tls-ca is set."""
    assert Endpoint(host="::1", port=8090).target == "[::1]:8090"
    assert Endpoint(host="ctl", port=1).target == "ctl:1"
    assert not Endpoint(host="ctl", port=1).secure
    assert Endpoint(host="ctl", port=1, tls_ca="ca.pem").secure


def test_a_config_file_that_is_a_directory_says_so(tmp_path: Path) -> None:
    """A directory named as the config file is not 'missing': the error says what to give."""
    with pytest.raises(ConfigError, match=r"is a directory: give the file in it \(.*vipu-cli.hcl"):
        load_settings({}, env={}, config_path=str(tmp_path))
    with pytest.raises(ConfigError, match="is a directory"):
        load_settings({}, env={"VIPU_CLI_CONFIG": str(tmp_path)})
