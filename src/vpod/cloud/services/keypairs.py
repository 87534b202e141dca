"""Keypair use-cases (Nova's model): a project's SSH public keys, and which clusters each
may log in to.

``create`` generates an ed25519 key and answers its private half once (it
is never stored); ``import_key`` takes a public key the tenant made. A
cluster is given keypairs at creation or later (``give``/``take``); the
servers' ``authorized_keys`` follows at once (and is rewritten by every
POST_DEPLOY_SETUP from the store, the truth). A project sees and uses only
its own keypairs: another project's is "not found", whether or not it
exists. A keypair a cluster holds cannot be deleted (take it away first).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Sequence
from dataclasses import replace

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from ..drivers import DriverError
from ..model import errors
from ..model.records import Cluster, Keypair
from ..quotas import admit_within
from ..ssh_keys import parse_public_key
from ..states import ClusterStatus, ServerStatus
from ..validation import check_name
from .context import CloudContext
from .project_resources import ViewedResources
from .projects import Principal

log = logging.getLogger("vpod.cloud")

_UNWRITTEN = (ServerStatus.BUILD, ServerStatus.DELETED)
"""Servers whose keys their setup will write (or nobody needs)."""


async def authorized_lines(ctx: CloudContext, cluster_id: str) -> tuple[str, ...]:
    """The ``authorized_keys`` lines of the cluster's keypairs (comment: ``vpod:NAME``)."""
    held = await ctx.records.keypairs_of([cluster_id])
    lines = []
    for record in held.get(cluster_id, []):
        key = parse_public_key(record.public_key)
        lines.append(key.line(comment=f"vpod:{record.name}"))
    return tuple(lines)


class Keypairs(ViewedResources[Keypair, Keypair]):
    what = "keypair"
    lists_them = "vpod keypair list"

    def _lookup(self, project_id: str, ref: str) -> Awaitable[Keypair | None]:
        return self._ctx.records.find_keypair(project_id, ref)

    async def _view(self, record: Keypair) -> Keypair:
        """The keypair with the names of the clusters it may log in to."""
        holders = await self._ctx.records.keypair_holders(record.id)
        return replace(record, clusters=tuple(holders))

    async def create(self, principal: Principal, name: str) -> tuple[Keypair, str]:
        """A new ed25519 keypair: the record and the private key (OpenSSH format), once."""
        private = Ed25519PrivateKey.generate()
        public = private.public_key().public_bytes(
            serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
        )
        pem = private.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.OpenSSH,
            serialization.NoEncryption(),
        ).decode()
        keypair = await self.import_key(principal, name, f"{public.decode()} vpod:{name}")
        return keypair, pem

    async def import_key(self, principal: Principal, name: str, public_key: str) -> Keypair:
        ctx = self._ctx
        check_name("keypair", name)
        key = parse_public_key(public_key)
        record = Keypair(
            id=ctx.ids.new("kp"),
            project_id=principal.project(),
            name=name,
            key_type=key.key_type,
            public_key=key.line(),
            fingerprint=key.fingerprint,
            created_at=ctx.clock.now(),
        )
        await ctx.records.add_keypair(record, admit=admit_within({"keypairs": 1}))
        return record

    async def list_keypairs(self, principal: Principal) -> list[Keypair]:
        found = await self._ctx.records.list_keypairs(principal.project())
        return await self._views_of(found)

    async def delete(self, principal: Principal, ref: str) -> None:
        record = await self._find(principal, ref)
        holders = await self._ctx.records.keypair_holders(record.id)
        if holders:
            raise errors.FailedPrecondition(
                f"keypair {record.name} may log in to cluster(s) {', '.join(holders)}: remove it"
                f" there first (`vpod cluster keypair remove CLUSTER {record.name}`)"
            )
        await self._ctx.records.delete_keypair(record.id)

    # -- a cluster's keypairs -------------------------------------------------------------------

    async def ids_of(self, principal: Principal, refs: Sequence[str]) -> list[str]:
        """The ids of the project's keypairs ``refs`` (ids or names), checked."""
        return [(await self._find(principal, ref)).id for ref in dict.fromkeys(refs)]

    async def of_cluster(self, principal: Principal, cluster_ref: str) -> list[Keypair]:
        cluster = await self._views.find(principal, cluster_ref)
        held = await self._ctx.records.keypairs_of([cluster.id])
        return await self._views_of(held.get(cluster.id, []))

    async def give(self, principal: Principal, cluster_ref: str, ref: str) -> list[Keypair]:
        """Let the keypair log in to the cluster's servers (idempotent); its keypairs after."""
        cluster = await self._writable(principal, cluster_ref)
        record = await self._find(principal, ref)
        await self._ctx.records.give_keypairs(cluster.id, [record.id])
        await self._push(cluster)
        return await self.of_cluster(principal, cluster.id)

    async def take(self, principal: Principal, cluster_ref: str, ref: str) -> list[Keypair]:
        """The keypair may no longer log in (its open connections stay, as with OpenSSH)."""
        cluster = await self._writable(principal, cluster_ref)
        record = await self._find(principal, ref)
        await self._ctx.records.take_keypair(cluster.id, record.id)
        await self._push(cluster)
        return await self.of_cluster(principal, cluster.id)

    async def _writable(self, principal: Principal, cluster_ref: str) -> Cluster:
        cluster = await self._views.find(principal, cluster_ref)
        if cluster.status in (ClusterStatus.DELETING, ClusterStatus.ERROR) and not (
            await self._ctx.records.list_servers([cluster.id])
        ):
            raise errors.FailedPrecondition(
                f"cluster {cluster.name} is {cluster.status} and holds no server: its keypairs"
                " can no longer change"
            )
        return cluster

    async def _push(self, cluster: Cluster) -> None:
        """Write the cluster's keys on every built server (later ones get them at setup)."""
        lines = await authorized_lines(self._ctx, cluster.id)
        failed = []
        for server in await self._ctx.records.list_servers([cluster.id]):
            if server.status in _UNWRITTEN:
                continue
            try:
                await self._ctx.compute.authorize_keys(server.id, lines)
            except DriverError as exc:
                log.warning("cloud: keys of server %s not written: %s", server.name, exc)
                failed.append(server.name)
        if failed:
            raise errors.Unavailable(
                f"the keys were recorded but not written on {', '.join(failed)}: try again"
                " (the next setup of the cluster writes them too)"
            )


__all__ = ["Keypairs", "authorized_lines"]
