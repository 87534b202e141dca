"""The cloud API's dataset storage. No answer carries a key: the access key id is shown
masked, the secret never."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

from .fields import StrictBody


class StorageEndpointOut(BaseModel):
    name: str
    url: str
    region: str
    path_style: bool


class DatasetStorageIn(StrictBody):
    name: str = Field(description="3 to 63 characters: letters, digits, `.`, `_`, `-`.")
    endpoint: str = Field(description="An endpoint name from `GET /storage-endpoints`.")
    bucket: str = Field(description="The bucket on that endpoint.")
    access_key_id: str = Field(description="Stored sealed; shown masked from now on.")
    secret_access_key: str = Field(description="Stored sealed; never shown again.")


class DatasetStorageOut(BaseModel):
    id: str
    name: str
    endpoint: str
    bucket: str
    access_key: str = Field(description="The access key id, masked (`AKIA…WXYZ`).")
    clusters: list[str] = Field(description="Names of your clusters it is attached to.")
    created_at: datetime


class DatasetAttachIn(StrictBody):
    storage: str = Field(description="Your dataset storage (id or name).")
    mount_path: str | None = Field(
        None, description="Also mount the bucket at this absolute path on every server."
    )
