"""A metering entry: one billed resource entering a state (see :mod:`vpod.cloud.billing`)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal


@dataclass(frozen=True)
class MeterEntry:
    """``id`` is 0 until stored."""

    time: datetime
    project_id: str
    resource_type: str
    resource_id: str
    resource_name: str
    item: str
    quantity: int
    unit_price_per_hour: Decimal
    billable: bool
    state: str
    id: int = 0
