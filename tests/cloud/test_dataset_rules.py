"""Dataset storage's pure rules and sealing: endpoints read from cloud.toml, masks, mount
paths, and keys sealed under a key file that can be rotated."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from cryptography.fernet import Fernet

from vpod.cloud.dataset_rules import check_bucket, check_mount_path
from vpod.cloud.model import errors
from vpod.cloud.model.datasets import StorageEndpoint, mask
from vpod.cloud.sealing import Sealer
from vpod.cloud.settings import load_settings


def test_endpoints_come_from_cloud_toml(tmp_path: Path) -> None:
    (tmp_path / "cloud.toml").write_text(
        '[storage_endpoints.lab]\nurl = "http://127.0.0.1:9000/"\npath_style = true\n'
        '[storage_endpoints.aws]\nurl = "https://s3.eu-west-1.amazonaws.com"\n'
        'region = "eu-west-1"\n'
    )
    settings = load_settings(tmp_path)
    assert settings.storage_endpoints == (
        StorageEndpoint("lab", "http://127.0.0.1:9000", "us-east-1", True),
        StorageEndpoint("aws", "https://s3.eu-west-1.amazonaws.com", "eu-west-1", False),
    )


@pytest.mark.parametrize(
    ("table", "said"),
    [
        ('[storage_endpoints.x]\nurl = "ftp://h"\n', "http:// or https://"),
        ('[storage_endpoints.x]\nurl = "https://k:s@h"\n', "holds no credentials"),
        ('[storage_endpoints.x]\nurl = "https://h"\nregion = "EU WEST"\n', "region"),
        ('[storage_endpoints.x]\nurl = "https://h"\npath_style = "yes"\n', "true or false"),
        ('[storage_endpoints.x]\nurl = "https://h"\nbucket = "b"\n', "unknown key 'bucket'"),
        ('storage_endpoints = "https://h"\n', "a table of endpoints"),
    ],
)
def test_bad_endpoints_stop_the_start_with_a_sentence(
    tmp_path: Path, table: str, said: str
) -> None:
    (tmp_path / "cloud.toml").write_text(table)
    with pytest.raises(errors.InvalidArgument, match=said):
        load_settings(tmp_path)


def test_masks_show_at_most_a_quarter_at_each_end() -> None:
    assert mask("AKIAIOSFODNN7EXAMPLE") == "AKIA…MPLE"
    assert mask("ABCDEFGH") == "AB…GH"
    assert mask("abc") == "…"


@pytest.mark.parametrize("path", ["/etc", "/usr/data", "relative", "/", "/a/../etc", "/tmp/x"])
def test_mount_paths_outside_the_system_directories_only(path: str) -> None:
    with pytest.raises(errors.InvalidArgument):
        check_mount_path(path)


def test_good_mount_paths_and_buckets_pass() -> None:
    assert check_mount_path("/mnt/datasets") == "/mnt/datasets"
    assert check_mount_path("/data/v1.2/train_set") == "/data/v1.2/train_set"
    assert check_bucket("my.data-1") == "my.data-1"
    for bad in ("", "ab", "Upper", "a..b", "-ab", "x" * 64):
        with pytest.raises(errors.InvalidArgument):
            check_bucket(bad)


def test_the_key_file_is_private_and_rotation_reseals(tmp_path: Path) -> None:
    path = tmp_path / "dataset-storage.key"
    old = Sealer(path)
    token = old.seal("the secret")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert "the secret" not in token
    assert old.unseal(token) == "the secret"
    assert old.reseal(token) is None  # already under the first key

    new_key = Fernet.generate_key()
    path.write_bytes(new_key + b"\n" + path.read_bytes())
    rotated = Sealer(path)
    assert rotated.unseal(token) == "the secret"  # old tokens still open
    resealed = rotated.reseal(token)
    assert resealed is not None
    assert Fernet(new_key).decrypt(resealed.encode()) == b"the secret"

    path.write_bytes(new_key + b"\n")  # the old key removed after the restart
    assert Sealer(path).unseal(resealed) == "the secret"
    with pytest.raises(errors.FailedPrecondition, match="cannot be unsealed"):
        Sealer(path).unseal(token)
