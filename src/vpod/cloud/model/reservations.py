"""Reservation plans, their statuses and the pools they hold.

One value type each, defined in :mod:`vpod.domain.cloud.reservations` (the store reads its rows
into them too); the cloud's model names them here."""

from __future__ import annotations

from vpod.domain.cloud.reservations import Plan as Plan
from vpod.domain.cloud.reservations import PoolState as PoolState
from vpod.domain.cloud.reservations import Reservation as Reservation
from vpod.domain.cloud.reservations import ReservationStatus as ReservationStatus
