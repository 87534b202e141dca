"""The ``[openstack]`` table of cloud.toml: checked, with a sentence naming the key to fix;
and what the OpenStack drivers put on a server (Nova metadata), without an OpenStack."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from vpod.cloud.drivers import DatasetAccess, ServerSetup, VipuAccess
from vpod.cloud.drivers.openstack_setup import (
    CHUNK,
    HCL,
    from_metadata,
    render_files,
    to_metadata,
    user_data,
)
from vpod.cloud.model import errors
from vpod.cloud.settings import load_settings, parse_settings


def test_the_table_maps_names_and_defaults_to_the_same_name(tmp_path: Path) -> None:
    (tmp_path / "cloud.toml").write_text(
        'compute_driver = "openstack"\nvolume_driver = "cinder"\n'
        '[openstack]\ncloud = "site"\nregion = "R2"\nwait_s = 30\n'
        'default_image = "base"\nallow_cidrs = ["10.5.0.0/16"]\n'
        '[openstack.flavors]\n"g2a-ai-fast-v1pod-16" = "p16"\n'
        '[openstack.volume_types]\nssd = "fast"\n'
    )
    settings = load_settings(tmp_path)
    options = settings.openstack
    assert (settings.compute_driver, settings.volume_driver) == ("openstack", "cinder")
    assert (options.cloud, options.region, options.wait_s) == ("site", "R2", 30.0)
    assert options.nova_flavor("g2a-ai-fast-v1pod-16") == "p16"
    assert options.nova_flavor("bm1-ai-small-v1pod-4") == "bm1-ai-small-v1pod-4"
    assert options.glance_image("ubuntu-22.04-poplar-3.4") == "base"
    assert options.cinder_type("ssd") == "fast"
    assert options.cinder_type("hdd") is None
    assert options.allow_cidrs == ("10.5.0.0/16",)


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"clouds": "x"}, "unknown key openstack.clouds; the keys are"),
        ({"cloud": ""}, "openstack.cloud names a cloud of clouds.yaml"),
        ({"wait_s": 0}, "openstack.wait_s is a positive number of seconds"),
        ({"networks": "yes"}, "openstack.networks must be a bool"),
        ({"flavors": {"a": 1}}, "openstack.flavors is a table of names"),
        ({"allow_cidrs": ["10.0.0.0/33"]}, "'10.0.0.0/33' is not a CIDR"),
    ],
)
def test_a_bad_table_is_refused_naming_the_key(table: dict[str, Any], message: str) -> None:
    with pytest.raises(errors.InvalidArgument, match=message):
        parse_settings({"openstack": table}, data_dir=Path("d"), source="cloud.toml")


def _setup(key: str | None) -> ServerSetup:
    return ServerSetup(
        "train",
        (("train-poplar-1", "10.1.2.11"),),
        vipu=VipuAccess(host="10.0.0.1", port=8090, user_id="u-train", access_key=key),
        datasets=DatasetAccess(
            endpoint_url="https://s3.test",
            region="r",
            bucket="b",
            path_style=True,
            access_key_id="AKID",
            secret_access_key="SECRET" * 40,
        ),
    )


def test_settings_travel_as_nova_metadata_of_short_values_and_come_back_whole() -> None:
    files, has_key = render_files(_setup("k3y"), "train-poplar-1", "ubuntu")
    assert has_key
    assert "api-access-key" in files[HCL]["content"]
    assert "k3y" in files[HCL]["content"]
    env = files["/etc/environment"]["content"]
    assert "IPUOF_VIPU_API_HOST" in env
    assert "10.0.0.1" in env
    assert files["/home/ubuntu/.aws/credentials"]["mode"] == "0600"
    items = to_metadata(files)
    assert all(len(k) <= 255 and len(v) <= CHUNK for k, v in items.items())
    assert int(items["vpod-setup-count"]) > 1  # the long secret needed several values
    assert from_metadata(items) == files


def test_a_server_keeps_its_key_only_for_the_same_user() -> None:
    first, _ = render_files(_setup("k3y"), "s", "ubuntu")
    kept, has_key = render_files(_setup(None), "s", "ubuntu", first[HCL]["content"])
    assert has_key
    assert "k3y" in kept[HCL]["content"]
    other = ServerSetup("t", (), vipu=VipuAccess("h", 1, "u-other", None))
    moved, has_key = render_files(other, "s", "ubuntu", first[HCL]["content"])
    assert not has_key
    assert "k3y" not in moved[HCL]["content"]


def test_user_data_holds_keys_and_the_settings_script_but_no_secret() -> None:
    text = user_data("train-poplar-1", "ubuntu", ("ssh-ed25519 AAAA tenant@laptop",))
    assert text.startswith("#cloud-config\n")
    assert "ssh-ed25519 AAAA tenant@laptop" in text
    assert "/usr/local/sbin/vpod-settings" in text
    assert "access-key" not in text
    assert "SECRET" not in text


def test_broken_metadata_reads_as_nothing() -> None:
    assert from_metadata({"vpod-setup-count": "2", "vpod-setup-000": "abc"}) == {}
    assert from_metadata({}) == {}
