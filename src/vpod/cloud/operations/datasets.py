"""Giving a running cluster dataset storage, or taking it away (POST_DEPLOY_SETUP only).

Attach records the cluster's attachment and writes every server's ``~/.aws``
files, ``AWS_*`` variables and mount; detach removes the attachment and
rewrites the servers without them (unmounting). Both only configure servers,
so running either again does the same. A failed attach takes the attachment
away again; a failed detach leaves it gone (the storage may be deleted) and
says which servers may still hold the files.
"""

from __future__ import annotations

import contextlib

from .. import server_setup
from ..model import errors
from ..runner import Job, Outcome
from ..states import Phase
from .common import configure_servers, servers_of


class _SetUpServers:
    """Both operations run alike: every server set up again from the task's parameters."""

    async def run(self, job: Job) -> Outcome:
        cluster = await job.cluster()
        await job.phase(Phase.POST_DEPLOY_SETUP)
        await configure_servers(job, cluster, await servers_of(job, cluster.id))
        return Outcome()


class AttachDatasets(_SetUpServers):
    async def fail(self, job: Job, _error: str) -> Outcome:
        """Take the attachment away again and set the servers up without it (not through
        ``configure_servers``, which would attach it again from the task's parameters)."""
        ctx = job.ctx
        cluster = await job.cluster()
        await ctx.records.detach_storage(cluster.id)
        with contextlib.suppress(*errors.CloudError):
            servers = await servers_of(job, cluster.id)
            await server_setup.configure_servers(ctx, cluster, servers, job.secrets, job.warn)
        return Outcome()


class DetachDatasets(_SetUpServers):
    async def fail(self, job: Job, error: str) -> Outcome:
        job.warn(
            f"the storage is detached, but its files may remain on some servers ({error}):"
            " rebuild the cluster to rewrite them"
        )
        return Outcome()
