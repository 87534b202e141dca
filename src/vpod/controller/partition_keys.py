"""Partition keys: credentials that may use one partition and nothing else.

A user (or an administrator) mints a key for a partition it may use, to hand
to something that should touch only that partition: a Slurm job gets one for
its ``slurm_<jobid>`` when it starts and loses it when it ends. The key is
presented as any access key, with its id as the user id
(``VIPU_CLI_API_USER_ID``/``api-user-id``), and its caller

- sees that partition alone: listings hold it and nothing else, no
  allocation, no IPU attribute of any machine;
- may get it, read its status and IPUoF configuration (attach) and reset it;
- may not create, remove or mint keys (``PERMISSION_DENIED`` with the
  reason), and any other partition, named by id, is ``NOT_FOUND`` with the
  words a nonexistent one gets;
- keeps its rights only while its owner has them: revoking the owner's grant
  of the allocation, or removing the owner, stops the key.

A key goes with its partition (the store deletes it with the partition, so a
partition made again with the same id never answers to an old key), with its
owner, or when revoked. Minting again with the same id for the same
partition replaces the key (a retried prolog). A controller without
``--secure`` checks no credentials, so it mints none (``FAILED_PRECONDITION``).
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass

from vpod.domain.errors import InvalidSpec
from vpod.domain.naming import check_id
from vpod.store.errors import LimitReached
from vpod.store.partition_keys import PartitionKeyStore
from vpod.store.records import PartitionKeyRecord

from . import errors
from .caller import Caller, refuse_scoped
from .context import Context
from .credentials import new_access_key
from .partitions import PartitionService

_HASH_PREFIX = "sha256$"
MAX_KEYS_PER_PARTITION = 256
"""Keys one partition may have at once: a job needs one, a launcher a few; a user minting
without end would only fill the store."""


def hash_partition_key(key: str) -> str:
    """A fast hash is enough: the key is 256 random bits, which no one guesses from it."""
    return _HASH_PREFIX + hashlib.sha256(key.encode()).hexdigest()


def _matches(key: str, stored: str) -> bool:
    return stored.startswith(_HASH_PREFIX) and hmac.compare_digest(hash_partition_key(key), stored)


@dataclass(frozen=True)
class MintedKey:
    record: PartitionKeyRecord
    access_key: str
    """Shown once: the store keeps only its hash."""


class PartitionKeyBook:
    """Who is calling with a partition key (for :class:`~.auth.Authenticator`)."""

    def __init__(self, ctx: Context) -> None:
        self._ctx = ctx
        self._store = PartitionKeyStore.of(ctx.db.store)

    async def caller(self, key_id: str, access_key: str) -> Caller | None:
        """The caller of this key, or None when it is no partition key's or the key is wrong."""
        found = await self._ctx.db(self._store.find, key_id)
        if found is None or not _matches(access_key, found[1]):
            return None
        record = found[0]
        owner = await self._ctx.db(self._ctx.db.store.find_user_with_hash, record.owner_id)
        if owner is None:
            return None
        user = owner[0]
        return Caller(
            user_id=record.id,
            allocation_ids=frozenset(),
            partition_scope=record.partition_id,
            owner_allocation_ids=None if user.admin else frozenset(user.allocation_ids),
        )


class PartitionKeys:
    """Mint, list and revoke partition keys."""

    def __init__(self, ctx: Context, partitions: PartitionService) -> None:
        self._ctx = ctx
        self._partitions = partitions
        self._store = PartitionKeyStore.of(ctx.db.store)

    async def mint(self, caller: Caller, partition_id: str, key_id: str = "") -> MintedKey:
        """A new key for ``partition_id`` (one the caller may use), named ``key_id`` or
        ``<caller>.<partition>``."""
        refuse_scoped(caller, "mint partition keys")
        if not self._ctx.settings.secure:
            raise errors.FailedPrecondition(
                "this controller runs without --secure: every caller may use every partition,"
                " so a partition key would restrict nothing"
            )
        await self._partitions.get(caller, partition_id)
        key_id = key_id or f"{caller.user_id}.{partition_id}"
        try:
            check_id("partition key", key_id)
        except InvalidSpec as exc:
            raise errors.InvalidArgument(f"{exc} (name the key with its own id)") from None
        key = new_access_key()
        record = PartitionKeyRecord(
            id=key_id,
            owner_id=caller.user_id,
            partition_id=partition_id,
            created_at=self._ctx.clock.now(),
        )
        try:
            await self._ctx.db(
                self._store.put, record, hash_partition_key(key), limit=MAX_KEYS_PER_PARTITION
            )
        except LimitReached as exc:
            raise errors.NoCapacity(
                f"{exc} (GET /api/v1/partition-keys lists yours, DELETE"
                " /api/v1/partition-keys/{key_id} revokes one)"
            ) from None
        await self._ctx.audit(caller, "create_partition_key", key_id, "ok", partition_id)
        return MintedKey(record, key)

    async def list(self, caller: Caller) -> list[PartitionKeyRecord]:
        """The keys the caller minted (every key, for an administrator)."""
        refuse_scoped(caller, "list partition keys")
        owner = None if caller.admin else caller.user_id
        return await self._ctx.db(self._store.list, owner_id=owner)

    async def revoke(self, caller: Caller, key_id: str) -> None:
        """Stop a key now; NOT_FOUND when there is none the caller minted (or, admins, any)."""
        refuse_scoped(caller, "revoke partition keys")
        found = await self._ctx.db(self._store.find, key_id)
        if found is None or not (caller.admin or found[0].owner_id == caller.user_id):
            raise errors.NotFound(f"partition key {key_id} does not exist")
        await self._ctx.db(self._store.remove, key_id)
        await self._ctx.audit(caller, "remove_partition_key", key_id, "ok", found[0].partition_id)
