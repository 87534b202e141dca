"""Partition keys (``/api/v1/partition-keys``): a key that may use one partition; the key
itself is in the creation's answer only."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

from .fields import StrictBody


class PartitionKeyOut(BaseModel):
    id: str = Field(description="The user id the key is presented with.")
    owner_id: str = Field(description="Who minted it.")
    partition_id: str = Field(description="The one partition it may use.")
    created_at: datetime


class PartitionKeyList(BaseModel):
    partition_keys: list[PartitionKeyOut]


class CreatePartitionKeyBody(StrictBody):
    partition_id: str = Field(max_length=64, description="A partition you may use.")
    key_id: str = Field(
        "", max_length=64, description="The key's id; empty: <your user id>.<partition id>."
    )


class CreatedPartitionKey(BaseModel):
    partition_key: PartitionKeyOut
    access_key: str = Field(description="Shown once: send it with the key's id as the user id.")
