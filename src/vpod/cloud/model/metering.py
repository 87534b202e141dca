"""A metering entry: one billed resource entering a state.

One value type each, defined in :mod:`vpod.domain.cloud.metering` (the store reads its rows
into them too); the cloud's model names them here."""

from __future__ import annotations

from vpod.domain.cloud.metering import MeterEntry as MeterEntry
