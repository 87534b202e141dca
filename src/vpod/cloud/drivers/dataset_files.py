"""What a server holds of its cluster's dataset storage: ``~/.aws`` files and ``AWS_*``
variables, written through :mod:`.confined` (never following the tenant's links).

``home/.aws/config`` and ``home/.aws/credentials`` (mode 0600) hold the
profile ``vpod-datasets`` and the same values as ``default``, so ``aws``,
boto3 and rclone work with or without ``AWS_PROFILE``. The files start with
a marker line: when the storage is detached, only files carrying it are
removed (a tenant's own ``~/.aws`` files are left alone while nothing is
attached, and replaced while something is).
"""

from __future__ import annotations

from pathlib import Path

from ..model.datasets import AWS_PROFILE
from . import confined
from .base import DatasetAccess

AWS_CONFIG = "home/.aws/config"
AWS_CREDENTIALS = "home/.aws/credentials"
MARK = "# written by the vpod cloud for this cluster's dataset storage"
ENV_NAMES = (
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_DEFAULT_REGION",
    "AWS_REGION",
    "AWS_ENDPOINT_URL",
    "VPOD_DATASET_BUCKET",
    "VPOD_DATASET_MOUNT",
)


def dataset_env(access: DatasetAccess) -> dict[str, str]:
    """The variables a server's shell exports for ``access``."""
    env = {
        "AWS_ACCESS_KEY_ID": access.access_key_id,
        "AWS_SECRET_ACCESS_KEY": access.secret_access_key,
        "AWS_DEFAULT_REGION": access.region,
        "AWS_REGION": access.region,
        "AWS_ENDPOINT_URL": access.endpoint_url,
        "VPOD_DATASET_BUCKET": access.bucket,
    }
    if access.mount_path is not None:
        env["VPOD_DATASET_MOUNT"] = access.mount_path
    return env


def render_config(access: DatasetAccess) -> str:
    style = "path" if access.path_style else "virtual"
    body = (
        f"region = {access.region}\n"
        f"endpoint_url = {access.endpoint_url}\n"
        f"s3 =\n    addressing_style = {style}\n"
    )
    return f"{MARK}\n[default]\n{body}\n[profile {AWS_PROFILE}]\n{body}"


def render_credentials(access: DatasetAccess) -> str:
    body = (
        f"aws_access_key_id = {access.access_key_id}\n"
        f"aws_secret_access_key = {access.secret_access_key}\n"
    )
    return f"{MARK}\n[default]\n{body}\n[{AWS_PROFILE}]\n{body}"


def write_aws_files(root: Path, access: DatasetAccess | None) -> None:
    """Write (or, with None, remove the cloud's own) ``~/.aws`` files in ``root``."""
    if access is not None:
        confined.write(root, AWS_CONFIG, render_config(access), 0o600)
        confined.write(root, AWS_CREDENTIALS, render_credentials(access), 0o600)
        return
    for relative in (AWS_CONFIG, AWS_CREDENTIALS):
        text = confined.read(root, relative)
        if text is not None and text.startswith(MARK):
            confined.unlink(root, relative)
