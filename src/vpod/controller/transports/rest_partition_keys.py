"""Partition keys under ``/api/v1/partition-keys``: the user endpoint's
``vpod.keys.v1.PartitionKeyService`` as JSON, over the same use-case
(:class:`~vpod.controller.partition_keys.PartitionKeys`). The key itself is in
the creation's answer only (the controller keeps a hash).
"""

from typing import Annotated

from fastapi import APIRouter, Path

from vpod.store.records import PartitionKeyRecord
from vpod.wire.field_copy import copy_fields
from vpod.wire.rest.partition_keys import (
    CreatedPartitionKey,
    CreatePartitionKeyBody,
    PartitionKeyList,
    PartitionKeyOut,
)

from .rest_auth import AsUser
from .rest_deps import PartitionKeysDep
from .rest_routes import Routes
from .rest_user import API_PREFIX

router = APIRouter(prefix=f"{API_PREFIX}/partition-keys", tags=["partition keys"])
"""The partition-key endpoints (``create_http_app`` includes them)."""

routes = Routes(router)


def _out(record: PartitionKeyRecord) -> PartitionKeyOut:
    return copy_fields(PartitionKeyOut, record)


@routes.creates("", 400, 401, 403, 404, 409, 503)
async def create_partition_key(
    caller: AsUser, keys: PartitionKeysDep, body: CreatePartitionKeyBody
) -> CreatedPartitionKey:
    """Mint a key that may get, reset and attach one partition and nothing else."""
    minted = await keys.mint(caller, body.partition_id, body.key_id)
    return CreatedPartitionKey(partition_key=_out(minted.record), access_key=minted.access_key)


@routes.get("", 401, 403, 503)
async def list_partition_keys(caller: AsUser, keys: PartitionKeysDep) -> PartitionKeyList:
    """The keys you minted (every key, for an administrator); never the keys themselves."""
    return PartitionKeyList(partition_keys=[_out(k) for k in await keys.list(caller)])


@routes.no_content("delete", "/{key_id}", 401, 403, 404, 503)
async def remove_partition_key(
    caller: AsUser,
    keys: PartitionKeysDep,
    key_id: Annotated[str, Path(max_length=64, description="The key's id.")],
) -> None:
    """Stop a key at once."""
    await keys.revoke(caller, key_id)
