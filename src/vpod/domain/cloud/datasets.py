"""Dataset storage as the cloud speaks of it: the operator's S3-compatible endpoints and a
project's registered buckets (never with their keys: see ``vpod/cloud/sealing.py``)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

AWS_PROFILE = "vpod-datasets"
"""The profile the servers' ``~/.aws`` files hold (``default`` holds the same values)."""


@dataclass(frozen=True)
class StorageEndpoint:
    """An S3-compatible service the operator offers (``[storage_endpoints.NAME]``)."""

    name: str
    url: str
    """What the servers dial, e.g. ``https://s3.example.net``."""
    region: str = "us-east-1"
    path_style: bool = False
    """Address buckets as ``URL/bucket`` rather than ``bucket.HOST`` (most non-AWS services)."""


@dataclass(frozen=True)
class RegisteredBucket:
    """What every view of a project's registered bucket holds: where the bucket is, and its
    access key only masked (``AKIA…WXYZ``)."""

    id: str
    project_id: str
    name: str
    endpoint: str
    bucket: str
    access_key_masked: str


@dataclass(frozen=True)
class DatasetStorage(RegisteredBucket):
    """A project's bucket on an endpoint, as its owner sees it."""

    created_at: datetime
    clusters: tuple[str, ...] = ()
    """Names of the project's clusters it is attached to."""


@dataclass(frozen=True)
class SealedStorage(RegisteredBucket):
    """A project's bucket as kept: its keys sealed (``vpod/cloud/sealing.py``), never shown."""

    access_key_sealed: str
    secret_key_sealed: str
    created_at: datetime


@dataclass(frozen=True)
class StorageAttachment:
    """A cluster holding a storage (at most one), mounted at ``mount_path`` if given."""

    cluster_id: str
    storage_id: str
    mount_path: str | None


def mask(access_key: str) -> str:
    """``AKIAIOSFODNN7EXAMPLE`` -> ``AKIA…MPLE``: at most a quarter shown at each end."""
    shown = min(4, len(access_key) // 4)
    return f"{access_key[:shown]}…{access_key[-shown:]}" if shown else "…"
