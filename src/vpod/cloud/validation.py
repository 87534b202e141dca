"""Rules for what tenants name and send: cluster and volume names, metadata, interfaces. Pure."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from vpod.domain.cloud.names import NAME_RULE as NAME_RULE
from vpod.domain.cloud.names import is_valid_name
from vpod.wire.rest.cloud_clusters import BOOT_VOLUME_DEFAULT_GIB as BOOT_VOLUME_DEFAULT_GIB

from .model import errors

METADATA_MAX_ITEMS = 50
METADATA_KEY = re.compile(r"[A-Za-z0-9_.:-]{1,255}")
METADATA_VALUE_MAX = 1024

INTERFACE_TYPES = ("external", "subnet", "any_subnet")

VOLUME_TYPES = ("standard", "ssd")
VOLUME_MIN_GIB = 1
VOLUME_MAX_GIB = 16_384
SERVER_COUNT_MAX = 32


def check_name(kind: str, name: str) -> str:
    """``name`` if it is a valid cluster or volume name; InvalidArgument saying the rule."""
    if not isinstance(name, str) or not is_valid_name(name):
        shown = repr(name[:70]) if isinstance(name, str) else type(name).__name__
        raise errors.InvalidArgument(f"{kind} name {shown} is not valid: {NAME_RULE}")
    return name


def check_metadata(metadata: Mapping[str, str]) -> dict[str, str]:
    if len(metadata) > METADATA_MAX_ITEMS:
        raise errors.InvalidArgument(
            f"metadata has {len(metadata)} items: keep at most {METADATA_MAX_ITEMS}"
        )
    for key, value in metadata.items():
        if METADATA_KEY.fullmatch(key) is None:
            raise errors.InvalidArgument(
                f"metadata key {key[:40]!r} is not valid: use 1 to 255 letters, digits,"
                " '_', '.', ':' or '-'"
            )
        if not isinstance(value, str) or len(value) > METADATA_VALUE_MAX:
            raise errors.InvalidArgument(
                f"metadata value of {key!r} must be a string of at most {METADATA_VALUE_MAX}"
                " characters"
            )
    return dict(metadata)


def check_interfaces(interfaces: Sequence[Mapping[str, str]]) -> list[dict[str, str]]:
    """At least one interface; each of a known type (the spec: one network interface or more)."""
    if not interfaces:
        raise errors.InvalidArgument(
            'a cluster needs at least one network interface: give [{"type": "external"}]'
        )
    checked = []
    for interface in interfaces:
        kind = interface.get("type", "")
        if kind not in INTERFACE_TYPES:
            raise errors.InvalidArgument(
                f"interface type {kind!r} is not known: use {', '.join(INTERFACE_TYPES)}"
            )
        checked.append(dict(interface))
    return checked


def check_distinct_volume_names(names: list[str]) -> None:
    """The volumes one request creates (data and boot volumes) need a name each: a clash is
    the caller's mistake, named here, not a store conflict to retry."""
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise errors.InvalidArgument(
                f"two volumes of this request are named {name} (a cluster's boot volumes are"
                " named SERVER-boot): give each new volume its own name"
            )
        seen.add(name)


def check_volume_size(size_gib: int) -> int:
    if not VOLUME_MIN_GIB <= size_gib <= VOLUME_MAX_GIB:
        raise errors.InvalidArgument(
            f"volume size {size_gib} GiB is out of range: use {VOLUME_MIN_GIB} to"
            f" {VOLUME_MAX_GIB} GiB"
        )
    return size_gib


def check_volume_type(volume_type: str) -> str:
    if volume_type not in VOLUME_TYPES:
        raise errors.InvalidArgument(
            f"volume type {volume_type!r} is not known: use {', '.join(VOLUME_TYPES)}"
        )
    return volume_type


def check_server_count(count: int) -> int:
    if not 1 <= count <= SERVER_COUNT_MAX:
        raise errors.InvalidArgument(
            f"a GPU cluster has 1 to {SERVER_COUNT_MAX} servers, not {count}"
        )
    return count


def network_cidr(cluster_id: str) -> str:
    """The subnet the cluster's network asks for, derived from its id: a link-local /26 of
    169.254.64.0/18 (addresses that never leave the host). The compute driver may hand out
    another one where that is taken (:meth:`ComputeDriver.create_network`)."""
    digest = sum((i + 1) * ord(c) for i, c in enumerate(cluster_id))
    block = digest % 256
    return f"169.254.{64 + block // 4}.{(block % 4) * 64}/26"
