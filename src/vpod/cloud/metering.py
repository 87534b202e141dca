"""Metering entries for every state change of a billed resource, and where copies go.

The entries in the store are the record invoices are computed from
(:mod:`.billing`); a *sink* receives a copy of each entry once it is
committed, for an external billing system (``jsonl``: one JSON object per
line in ``DATA_DIR/cloud/metering.jsonl``; ``none``: no copy).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from dataclasses import asdict
from datetime import datetime
from decimal import Decimal
from enum import StrEnum
from pathlib import Path
from typing import Protocol

from .flavors import VOLUME_PRICE_PER_GIB_HOUR, find_flavor, volume_item
from .model.metering import MeterEntry
from .model.records import Cluster, Volume
from .states import ClusterStatus, VolumeStatus, billable, volume_billable


def cluster_entry(
    cluster: Cluster,
    status: ClusterStatus,
    at: datetime,
    *,
    server_count: int | None = None,
    holds_servers: bool = True,
) -> MeterEntry:
    """The entry for ``cluster`` entering ``status`` at ``at``."""
    flavor = find_flavor(cluster.flavor)
    count = cluster.server_count if server_count is None else server_count
    return _entry(
        "cluster",
        cluster,
        status,
        at,
        item=flavor.name,
        quantity=flavor.meter_quantity(count),
        price=flavor.price_per_hour,
        billable=billable(flavor, status, holds_servers=holds_servers),
    )


def volume_entry(volume: Volume, status: VolumeStatus, at: datetime) -> MeterEntry:
    return _entry(
        "volume",
        volume,
        status,
        at,
        item=volume_item(volume.volume_type),
        quantity=volume.size_gib,
        price=VOLUME_PRICE_PER_GIB_HOUR[volume.volume_type],
        billable=volume_billable(status),
    )


def _entry(
    resource_type: str,
    resource: Cluster | Volume,
    status: StrEnum,
    at: datetime,
    *,
    item: str,
    quantity: int,
    price: Decimal,
    billable: bool,
) -> MeterEntry:
    """``resource`` entering ``status`` at ``at``, sold as ``item`` (``quantity`` units at
    ``price`` an hour each)."""
    return MeterEntry(
        time=at,
        project_id=resource.project_id,
        resource_type=resource_type,
        resource_id=resource.id,
        resource_name=resource.name,
        item=item,
        quantity=quantity,
        unit_price_per_hour=price,
        billable=billable,
        state=status.value,
    )


class MeteringSink(Protocol):
    def publish(self, entries: Sequence[MeterEntry]) -> None: ...


class NoSink:
    def publish(self, _entries: Sequence[MeterEntry]) -> None:
        return None


class JsonlSink:
    """Appends each entry as one JSON line (prices as decimal strings, times in ISO 8601)."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._lock = threading.Lock()

    def publish(self, entries: Sequence[MeterEntry]) -> None:
        if not entries:
            return
        lines = "".join(json.dumps(_published(e)) + "\n" for e in entries)
        with self._lock:
            self._path.parent.mkdir(parents=True, exist_ok=True)
            with self._path.open("a") as handle:
                handle.write(lines)


def _published(entry: MeterEntry) -> dict[str, object]:
    """An entry as the sink's readers get it: every field but the store's id, in order; the
    price a decimal string, the time ISO 8601."""
    fields = asdict(entry)
    del fields["id"]
    return {
        **fields,
        "time": entry.time.isoformat(),
        "unit_price_per_hour": str(entry.unit_price_per_hour),
    }
