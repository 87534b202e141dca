"""SSH keypairs and the clusters they may log in to."""

from __future__ import annotations

from collections.abc import Sequence

from ...model.records import Keypair
from .base import RecordsBase
from .convert import keypair_of, row_of_keypair


class KeypairRecords(RecordsBase):
    async def add_keypair(self, keypair: Keypair) -> None:
        await self._db(self._store.keypairs.add, row_of_keypair(keypair))

    async def find_keypair(self, project_id: str, ref: str) -> Keypair | None:
        """The project's keypair with id or name ``ref``."""
        return await self._found(keypair_of, self._store.keypairs.find, project_id, ref)

    async def list_keypairs(self, project_id: str) -> list[Keypair]:
        return [
            keypair_of(k) for k in await self._db(self._store.keypairs.list_keypairs, project_id)
        ]

    async def delete_keypair(self, keypair_id: str) -> None:
        """FailedPrecondition while a cluster holds it."""
        await self._db(self._store.keypairs.delete, keypair_id)

    async def keypair_holders(self, keypair_id: str) -> list[str]:
        """Names of the clusters holding the keypair."""
        return await self._db(self._store.keypairs.holders, keypair_id)

    async def give_keypairs(self, cluster_id: str, keypair_ids: Sequence[str]) -> None:
        """Let the keypairs log in to the cluster's servers (idempotent)."""
        await self._db(self._store.keypairs.give, cluster_id, list(keypair_ids))

    async def take_keypair(self, cluster_id: str, keypair_id: str) -> None:
        """The keypair may no longer log in to the cluster (idempotent)."""
        await self._db(self._store.keypairs.take, cluster_id, keypair_id)

    async def keypairs_of(self, cluster_ids: Sequence[str]) -> dict[str, list[Keypair]]:
        """Cluster id -> the keypairs it holds (by name), for those that hold any."""
        held = await self._db(self._store.keypairs.of_clusters, list(cluster_ids))
        return {c: [keypair_of(k) for k in found] for c, found in held.items()}
