"""The dataset storage a cluster's servers are given, unsealed for POST_DEPLOY_SETUP only.

Every setup of a cluster's servers (creation, resume, rebuild, resize, an
endpoint refresh, attach and detach) writes what :func:`dataset_access`
returns, so a server recreated or re-imaged gets its storage again, and one
whose storage was detached loses it.
"""

from __future__ import annotations

from collections.abc import Callable

from ..dataset_rules import find_endpoint
from ..drivers import DatasetAccess
from ..model import errors
from ..model.task_params import TaskParams
from .context import CloudContext


async def dataset_access(
    ctx: CloudContext, cluster_id: str, warn: Callable[[str], None] | None = None
) -> DatasetAccess | None:
    """The cluster's storage, unsealed. With ``warn``, a storage that cannot be served (its
    endpoint left ``cloud.toml``, the sealing key changed) is left out with a warning rather
    than failing the setup: a resume must not fail for it. Without, it raises."""
    try:
        return await _access(ctx, cluster_id)
    except errors.ServiceError as exc:
        if warn is None:
            raise
        warn(f"the servers get no dataset storage: {exc}")
        return None


async def _access(ctx: CloudContext, cluster_id: str) -> DatasetAccess | None:
    attachment = await ctx.records.storage_attachment(cluster_id)
    if attachment is None:
        return None
    storage = await ctx.records.get_storage(attachment.storage_id)
    endpoint = find_endpoint(ctx.settings.storage_endpoints, storage.endpoint)
    return DatasetAccess(
        endpoint_url=endpoint.url,
        region=endpoint.region,
        bucket=storage.bucket,
        path_style=endpoint.path_style,
        access_key_id=ctx.sealer.unseal(storage.access_key_sealed),
        secret_access_key=ctx.sealer.unseal(storage.secret_key_sealed),
        mount_path=attachment.mount_path,
    )


async def apply_dataset_change(ctx: CloudContext, cluster_id: str, params: TaskParams) -> None:
    """What a task's parameters ask of the cluster's attachment, done idempotently first:
    a storage id (and mount path) attaches, none detaches."""
    change = params.dataset_change
    if change is None:
        return
    if change.storage_id is None:
        await ctx.records.detach_storage(cluster_id)
    else:
        await ctx.records.attach_storage(cluster_id, change.storage_id, change.mount)
