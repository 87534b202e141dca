"""Registered hosts: GPU servers and bare-metal Poplar servers the cloud hands out whole or
in slices. Emulated hosts register like agents do, through the admin API (``vpod up``
registers a few of each model in two InfiniBand fabrics)."""

from __future__ import annotations

from vpod.domain.naming import ID_RULE, is_valid_id
from vpod.wire.field_copy import copy_all_fields

from ..flavors import HOST_MODELS, HostRole
from ..model import errors
from ..model.hosts import Host, HostRegistration, HostUsage
from .context import CloudContext

GPUS_PER_HOST = 8


def check_host(host_id: str, role: str) -> None:
    """A host's id and role, as every registration (an operator's, a GPU agent's) checks them."""
    if not is_valid_id(host_id):
        raise errors.InvalidArgument(f"host id {host_id[:70]!r} is not valid: {ID_RULE}")
    if role not in {r.value for r in HostRole}:
        raise errors.InvalidArgument(
            f"host role {role!r} is not known: use {', '.join(r.value for r in HostRole)}"
        )


class Hosts:
    def __init__(self, ctx: CloudContext) -> None:
        self._ctx = ctx

    async def register(self, new: HostRegistration) -> Host:
        check_host(new.id, new.role)
        if new.model not in HOST_MODELS:
            raise errors.InvalidArgument(
                f"host model {new.model!r} is not known: use {', '.join(HOST_MODELS)}"
            )
        if new.model == "poplar" and new.role != HostRole.BAREMETAL:
            raise errors.InvalidArgument("Poplar hosts are bare metal: use role baremetal")
        default = 1 if new.model == "poplar" else GPUS_PER_HOST
        count = default if new.slots is None else new.slots
        if not 1 <= count <= 64:
            raise errors.InvalidArgument(f"a host has 1 to 64 slots (GPUs), not {count}")
        host = copy_all_fields(
            Host,
            new,
            slots=count,
            fabric=new.fabric or None,
            enabled=True,
            registered_at=self._ctx.clock.now(),
        )
        return await self._ctx.records.add_host(host)

    async def list_hosts(self) -> list[HostUsage]:
        return await self._ctx.records.list_host_usage()

    async def set_enabled(self, host_id: str, enabled: bool) -> None:
        await self._ctx.records.set_host_enabled(host_id, enabled)

    async def remove(self, host_id: str) -> None:
        await self._ctx.records.remove_host(host_id)
