"""What tenants and operators may send for dataset storage: endpoints, buckets, keys, mount
paths. Pure: every refusal is an InvalidArgument with the rule in it."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import urlsplit

from .model import errors
from .model.datasets import StorageEndpoint

_BUCKET = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")
BUCKET_RULE = (
    "use 3 to 63 lowercase letters, digits, '.' or '-', starting and ending with a letter or digit"
)
_KEY = re.compile(r"[\x21-\x7e]+")
"""Printable ASCII without spaces: keys go into files and the environment as they are."""
ACCESS_KEY_MAX = 128
SECRET_KEY_MAX = 256
_REGION = re.compile(r"[a-z0-9][a-z0-9-]{0,62}")
_ENDPOINT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,62}")
_PATH_PART = re.compile(r"[A-Za-z0-9._-]{1,64}")
MOUNT_DEPTH_MAX = 8
SYSTEM_TOP = frozenset(
    {"bin", "boot", "dev", "etc", "lib", "lib32", "lib64", "proc", "run", "sbin", "sys", "tmp"}
    | {"usr", "var"}
)
"""Top directories of a server a mount may not hide (``tmp`` is emptied by reboots)."""


def check_bucket(bucket: str) -> str:
    if not isinstance(bucket, str) or _BUCKET.fullmatch(bucket) is None or ".." in bucket:
        shown = repr(bucket[:70]) if isinstance(bucket, str) else type(bucket).__name__
        raise errors.InvalidArgument(f"bucket {shown} is not valid: {BUCKET_RULE}")
    return bucket


def check_key(what: str, key: str, longest: int) -> str:
    """A key as given, if it is 1..``longest`` printable characters without spaces (the value
    itself is never repeated in the refusal)."""
    if not isinstance(key, str) or not key:
        raise errors.InvalidArgument(f"{what} is empty: give the key your storage issued")
    if len(key) > longest or _KEY.fullmatch(key) is None:
        raise errors.InvalidArgument(
            f"{what} is not valid: use 1 to {longest} printable ASCII characters, no spaces"
        )
    return key


def check_mount_path(path: str) -> str:
    """An absolute path on the servers, normalised (``/mnt/datasets``)."""
    rule = (
        f"give an absolute path of at most {MOUNT_DEPTH_MAX} parts of letters, digits, '.', '_'"
        f" or '-', outside {', '.join('/' + t for t in sorted(SYSTEM_TOP))},"
        " e.g. /mnt/datasets"
    )
    if not isinstance(path, str) or not path.startswith("/"):
        raise errors.InvalidArgument(f"mount path {str(path)[:70]!r} is not valid: {rule}")
    parts = PurePosixPath(path).parts[1:]
    if (
        not parts
        or len(parts) > MOUNT_DEPTH_MAX
        or any(p in (".", "..") or _PATH_PART.fullmatch(p) is None for p in parts)
        or parts[0] in SYSTEM_TOP
        or "//" in path
    ):
        raise errors.InvalidArgument(f"mount path {path[:70]!r} is not valid: {rule}")
    return "/" + "/".join(parts)


def parse_endpoints(raw: Any, *, source: str) -> tuple[StorageEndpoint, ...]:
    """``[storage_endpoints.NAME]`` tables of ``cloud.toml``: ``url``, ``region``,
    ``path_style``."""
    if not isinstance(raw, Mapping):
        raise errors.InvalidArgument(
            f"{source}: storage_endpoints is a table of endpoints:"
            ' [storage_endpoints.NAME] url = "https://..."'
        )
    endpoints = []
    for name, spec in raw.items():
        where = f"{source}: storage_endpoints.{name}"
        if _ENDPOINT_NAME.fullmatch(name) is None:
            raise errors.InvalidArgument(f"{where}: use letters, digits, '.', '_' or '-'")
        if not isinstance(spec, Mapping):
            raise errors.InvalidArgument(f'{where} is a table: url = "https://..."')
        unknown = sorted(set(spec) - {"url", "region", "path_style"})
        if unknown:
            raise errors.InvalidArgument(
                f"{where}: unknown key {unknown[0]!r}; the keys are path_style, region, url"
            )
        url = spec.get("url")
        if not isinstance(url, str):
            raise errors.InvalidArgument(f"{where}.url must be an http:// or https:// URL")
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise errors.InvalidArgument(f"{where}.url must be an http:// or https:// URL")
        if parts.username or parts.password or parts.query or parts.fragment:
            raise errors.InvalidArgument(
                f"{where}.url holds no credentials, query or fragment: tenants bring their keys"
            )
        region = spec.get("region", "us-east-1")
        if not isinstance(region, str) or _REGION.fullmatch(region) is None:
            raise errors.InvalidArgument(f"{where}.region is a region name, e.g. us-east-1")
        path_style = spec.get("path_style", False)
        if not isinstance(path_style, bool):
            raise errors.InvalidArgument(f"{where}.path_style is true or false")
        endpoints.append(StorageEndpoint(name, url.rstrip("/"), region, path_style))
    return tuple(endpoints)


def find_endpoint(endpoints: tuple[StorageEndpoint, ...], name: str) -> StorageEndpoint:
    for endpoint in endpoints:
        if endpoint.name == name:
            return endpoint
    known = ", ".join(e.name for e in endpoints)
    offered = f"the endpoints are {known}" if known else "the operator has configured none"
    raise errors.InvalidArgument(
        f"storage endpoint {str(name)[:70]!r} is not offered here: {offered}"
        " (`vpod storage endpoints` lists them)"
    )
