"""The cloud API's invoices: on-demand minutes and reserved months, line by line."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field


class InvoiceLineOut(BaseModel):
    resource_type: str
    resource_id: str
    resource_name: str
    item: str
    quantity: int
    unit_price_per_hour: str
    minutes: int
    amount: str
    billing: str = Field(
        "on_demand", description="`on_demand` (per minute) or `reserved` (per month, pro rata)."
    )
    unit_price_per_month: str | None = Field(None, description="Reserved lines: one unit-month.")


class InvoiceOut(BaseModel):
    project_id: str
    start: datetime
    end: datetime
    currency: str
    total: str
    minutes: int
    lines: list[InvoiceLineOut]
    by_item: dict[str, str]


class InvoiceDayOut(BaseModel):
    start: datetime
    end: datetime
    total: str
    minutes: int


class InvoiceDaysOut(BaseModel):
    """The invoice's total day by day: consecutive 24-hour periods from ``start``, the last
    one ending at ``end``; they add up to the invoice of the whole period."""

    project_id: str
    start: datetime
    end: datetime
    currency: str
    total: str
    days: list[InvoiceDayOut]
