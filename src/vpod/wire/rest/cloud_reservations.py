"""The cloud API's reservation plans and how much of them is used."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

from .fields import StrictBody


class ReservationIn(StrictBody):
    flavor: str = Field(description="A virtual vPOD or GPU bare-metal flavor.")
    units: int = Field(description="vPODs (or GPU servers) to reserve.")
    term: str = Field("1y", description="A term `vpod reservation create --help` lists.")


class UtilisationOut(BaseModel):
    start: datetime
    end: datetime
    used_unit_minutes: int
    reserved_unit_minutes: int
    ratio: float = Field(description="used ÷ reserved unit-minutes (0 when nothing was reserved).")


class ReservationOut(BaseModel):
    id: str
    flavor: str
    pool: str
    units: int
    pool_units: int = Field(description="Hardware units held (IPU-Machines or GPU servers).")
    term: str
    status: str = Field(description="`active`, `expired` or `cancelled`.")
    price_per_unit_month: str
    price_per_month: str
    currency: str
    starts_at: datetime
    ends_at: datetime
    cancelled_at: datetime | None
    billed_until: datetime = Field(description="Charges run until then.")
    utilisation: UtilisationOut
