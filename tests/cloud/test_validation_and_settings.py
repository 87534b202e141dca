"""Names, metadata and interfaces tenants send; cloud settings from cloud.toml."""

from __future__ import annotations

import ipaddress
from pathlib import Path

import pytest

from vpod.cloud.model import errors
from vpod.cloud.settings import CloudSettings, load_settings, parse_settings, render_settings
from vpod.cloud.validation import (
    check_interfaces,
    check_metadata,
    check_name,
    check_server_count,
    check_volume_size,
    network_cidr,
)


@pytest.mark.parametrize("name", ["abc", "train-1", "A.b_c-9", "x" * 63])
def test_valid_names(name: str) -> None:
    """3 to 63 characters, letters, digits, '.', '_', '-', starting alphanumeric."""
    assert check_name("cluster", name) == name


@pytest.mark.parametrize("name", ["ab", "x" * 64, "-abc", "has space", "ünï", ""])
def test_invalid_names_say_the_rule(name: str) -> None:
    """The refusal names the kind and the rule."""
    with pytest.raises(errors.InvalidArgument, match=r"cluster name .* is not valid: use 3 to 63"):
        check_name("cluster", name)


def test_metadata_keys_values_and_count_are_bounded() -> None:
    """Keys are short identifiers, values strings of at most 1 KiB, at most 50 items."""
    assert check_metadata({"team": "ml", "cost:center": "42"}) == {
        "team": "ml",
        "cost:center": "42",
    }
    with pytest.raises(errors.InvalidArgument, match="metadata key"):
        check_metadata({"bad key": "x"})
    with pytest.raises(errors.InvalidArgument, match="at most 1024"):
        check_metadata({"k": "v" * 2000})
    with pytest.raises(errors.InvalidArgument, match="keep at most 50"):
        check_metadata({f"k{i}": "v" for i in range(51)})


def test_a_cluster_needs_a_known_network_interface() -> None:
    """At least one interface, of a known type (the spec's rule)."""
    assert check_interfaces([{"type": "external"}]) == [{"type": "external"}]
    with pytest.raises(errors.InvalidArgument, match="at least one network interface"):
        check_interfaces([])
    with pytest.raises(errors.InvalidArgument, match="interface type 'wifi'"):
        check_interfaces([{"type": "wifi"}])


def test_sizes_and_counts_have_ranges() -> None:
    """Volume sizes 1..16384 GiB, GPU clusters 1..32 servers."""
    assert check_volume_size(1) == 1
    with pytest.raises(errors.InvalidArgument, match="out of range"):
        check_volume_size(0)
    with pytest.raises(errors.InvalidArgument, match="1 to 32 servers"):
        check_server_count(33)


@pytest.mark.parametrize("cluster_id", ["cl-abc", "cl-0001", "cl-zzzzzzzzzzzz", "c"])
def test_a_cluster_network_asks_for_a_stable_link_local_slash_26(cluster_id: str) -> None:
    """The same id always asks for the same /26, inside 169.254.64.0/18: tenant networks use
    addresses that never leave the host."""
    asked = ipaddress.IPv4Network(network_cidr(cluster_id))
    assert network_cidr(cluster_id) == str(asked)
    assert asked.prefixlen == 26
    assert asked.subnet_of(ipaddress.IPv4Network("169.254.64.0/18"))


def test_settings_default_without_a_file(tmp_path: Path) -> None:
    """No cloud.toml: every V-IPU cluster, local drivers."""
    assert load_settings(tmp_path) == CloudSettings(data_dir=tmp_path)


def test_settings_from_the_file_vpod_up_writes(tmp_path: Path) -> None:
    """render_settings round-trips through load_settings."""
    (tmp_path / "cloud.toml").write_text(render_settings(("cloud",)) + "task_poll_s = 2\n")
    loaded = load_settings(tmp_path)
    assert loaded.vipu_clusters == ("cloud",)
    assert loaded.task_poll_s == 2.0
    assert loaded.cloud_dir == tmp_path / "cloud"


def test_the_sandbox_settings_reach_the_compute_driver(tmp_path: Path) -> None:
    """The uid range, the unsafe mode and bubblewrap's path, from cloud.toml."""
    (tmp_path / "cloud.toml").write_text(
        "sandbox_uid_first = 300000\nsandbox_uid_count = 10\nunsafe_shared_host = true\n"
        'bwrap_path = "/opt/bwrap"\n'
    )
    options = load_settings(tmp_path).compute_options()
    assert (options["uids"].first, options["uids"].count) == (300_000, 10)
    assert 300_009 in options["uids"]
    assert 300_010 not in options["uids"]
    assert options["unsafe_shared_host"] is True
    assert options["bwrap"] == "/opt/bwrap"
    assert CloudSettings().compute_options()["unsafe_shared_host"] is False  # safe by default


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"colour": 1}, "unknown key 'colour'"),
        ({"compute_driver": "vmware"}, "is not available here: use local, openstack"),
        ({"vipu_clusters": "cloud"}, "vipu_clusters is a list"),
        ({"task_poll_s": "fast"}, "task_poll_s must be a float"),
        ({"metering_sink": "kafka"}, "metering_sink is one of none, jsonl"),
        ({"sandbox_uid_first": 0}, "sandbox_uid_first is a uid >= 1000"),
        ({"sandbox_uid_first": True}, "sandbox_uid_first must be a int"),
        ({"sandbox_uid_count": 0}, "sandbox_uid_count is at least 1"),
        ({"unsafe_shared_host": "yes"}, "unsafe_shared_host must be a bool"),
    ],
)
def test_bad_settings_are_refused_with_the_key(raw: dict[str, object], message: str) -> None:
    """Each mistake names the key and what would be accepted."""
    with pytest.raises(errors.InvalidArgument, match=message):
        parse_settings(raw, data_dir=Path("d"), source="cloud.toml")
