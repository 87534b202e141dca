"""GPU hosts that run an agent: registration with an inventory, samples, health, telemetry.

A GPU host agent (``vpod-gpu-agent``, docs/gpu.md) registers its host with
the inventory NVML gave it, authenticated like the IPU agents (an agent
registration token, checked by the controller's :mod:`agent_tokens
<vpod.controller.agent_tokens>`; the first registration binds the host id to
the token, and the host answers only to that token after). It then sends a
sample of every GPU every few seconds. What the store keeps is what
placement and the health round need on any replica: each GPU's health as
it last changed, and when the agent last reported. The samples themselves
(utilisation, memory, temperature, power, last XID) stay in this process,
for ``/metrics`` (:mod:`..gpu_metrics`) and the consoles.

Placement sees a host through :func:`host_views`: its free slots minus the
slots whose GPU is unhealthy, and none at all while its agent is silent.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from vpod.agent.gpu.model import GpuInfo, GpuSample, HostInventory
from vpod.domain.naming import ID_RULE, is_valid_id
from vpod.wire.field_copy import copy_all_fields

from ..flavors import HOST_MODELS, HostRole
from ..gpu_rules import GpuState, check_inventory, host_model_of, unusable_slots
from ..host_placement import HostView
from ..model import errors
from ..model.hosts import NO_SAMPLE, GpuAgent, HealthChange, Host, HostGpu
from .context import CloudContext
from .hosts import check_host

MAX_SAMPLES_AGE_S = 300.0
"""Samples of a host older than this are not shown (its agent went away)."""


@dataclass(frozen=True)
class GpuTelemetry:
    """One GPU's inventory and last sample, for ``/metrics`` and the consoles."""

    host_id: str
    hostname: str
    gpu: GpuInfo
    sample: GpuSample | None


@dataclass(frozen=True)
class GpuHostRegistration:
    """What a GPU host's agent registers: its host, and the inventory NVML gave it."""

    host_id: str
    role: str
    fabric: str | None
    model: str | None
    """The cloud's host model; None: derived from the GPUs."""
    boot_id: str
    """New at every agent start: samples from an older run are refused."""
    inventory: HostInventory


@dataclass(frozen=True)
class SampleReport:
    """One host's samples, as its agent sent them."""

    host_id: str
    boot_id: str
    """The agent run's (new at every start): a report from an older run is refused."""
    samples: Sequence[GpuSample]


@dataclass(frozen=True)
class HostGpus:
    """A host's agent and its GPUs as the store holds them."""

    agent: GpuAgent
    gpus: tuple[HostGpu, ...]
    silent_for_s: float | None
    """How long the agent has been silent past the limit (None: it reports)."""


class GpuHosts:
    def __init__(self, ctx: CloudContext) -> None:
        self._ctx = ctx
        self._inventories: dict[str, HostInventory] = {}
        self._samples: dict[str, tuple[float, tuple[GpuSample, ...]]] = {}
        self._stored_at: dict[str, datetime] = {}
        """When each host's report time was last written (the cloud's clock, as silence is
        judged by it)."""

    # -- the agent's calls --------------------------------------------------------------------

    async def _token_for(self, host_id: str, token: str, source: str) -> str | None:
        """The agent token's id; refused unless it is the one the host is bound to."""
        token_id = await self._ctx.vipu.admit_agent(host_id, token, source=source)
        agent = await self._ctx.records.gpu_agent(host_id)
        if agent is not None and agent.token_id is not None and agent.token_id != token_id:
            raise errors.PermissionDenied(
                f"GPU host {host_id} is registered with another agent token: a host answers to"
                " the token it first registered with; remove the host (DELETE"
                " /api/cloud/v1/admin/hosts/{host_id}) to register it anew"
            )
        return token_id

    async def register(
        self, registration: GpuHostRegistration, *, token: str, source: str
    ) -> tuple[Host, bool]:
        """Register (or register again) a host with its agent's inventory; (host, new?)."""
        r = registration
        host_id, role, fabric, inventory = r.host_id, r.role, r.fabric, r.inventory
        check_host(host_id, role)
        if fabric is not None and not is_valid_id(fabric):
            raise errors.InvalidArgument(f"fabric {fabric[:70]!r} is not valid: {ID_RULE}")
        if not r.boot_id or len(r.boot_id) > 64:
            raise errors.InvalidArgument("boot_id is 1 to 64 characters")
        check_inventory(inventory)
        first = inventory.gpus[0]
        derived = host_model_of(first.name, first.memory_mib)
        chosen = r.model or derived
        if chosen is None or chosen not in HOST_MODELS or chosen == "poplar":
            gpu_models = ", ".join(m for m in HOST_MODELS if m != "poplar")
            raise errors.InvalidArgument(
                f"GPU model {first.name!r} is none the cloud offers ({gpu_models}): start the"
                " agent with --model to say which it stands for"
            )
        token_id = await self._token_for(host_id, token, source)
        now = self._ctx.clock.now()
        host = Host(
            id=host_id,
            role=role,
            model=chosen,
            slots=len(inventory.gpus),
            fabric=fabric,
            address=source.rsplit(":", 1)[0],
            enabled=True,
            registered_at=now,
        )
        agent = copy_all_fields(
            GpuAgent,
            inventory,  # its host name, driver, CUDA version and backend
            host_id=host_id,
            token_id=token_id,
            boot_id=r.boot_id,
            registered_at=now,
            reported_at=now,
        )
        gpus = [_gpu_record(host_id, g, now) for g in inventory.gpus]
        await self._check_role(host_id, role)
        new = await self._ctx.records.register_gpu_host(host, agent, gpus)
        self._inventories[host_id] = inventory
        self._stored_at[host_id] = now
        message = (
            f"GPU host {host_id} {'registered' if new else 'registered again'}:"
            f" {len(gpus)} × {first.name}, driver {inventory.driver_version}"
        )
        await self._ctx.vipu.agent_registered(host_id, token_id, message, source=source)
        return host, new

    async def _check_role(self, host_id: str, role: str) -> None:
        usage = await self._ctx.records.list_host_usage()
        for u in usage:
            if u.host.id == host_id and u.host.role != role:
                raise errors.InvalidArgument(
                    f"host {host_id} is registered as a {u.host.role} host, not {role}: start"
                    f" the agent with --role {u.host.role}, or remove the host first"
                )

    async def report(
        self,
        *,
        host_id: str,
        boot_id: str,
        samples: Sequence[GpuSample],
        token: str,
    ) -> None:
        """Take an agent's samples; store the GPUs whose health changed."""
        [refusal] = await self.report_many([SampleReport(host_id, boot_id, samples)], token=token)
        if refusal is not None:
            raise refusal

    async def report_many(
        self, reports: Sequence[SampleReport], *, token: str
    ) -> list[errors.ServiceError | None]:
        """Take the samples of the hosts one agent process serves, each judged on its own: the
        refusal of each host refused, None for each taken. The records are read once for all,
        and the changed health and report times written in one transaction."""
        host_ids = [r.host_id for r in reports]
        if len(set(host_ids)) != len(host_ids):
            repeated = sorted({h for h in host_ids if host_ids.count(h) > 1})
            raise errors.InvalidArgument(
                f"host {repeated[0]} is reported more than once: send each host's samples once"
            )
        agents = {a.host_id: a for a in await self._ctx.records.list_gpu_agents(host_ids)}
        token_id = await self._ctx.vipu.agent_token_id(token)
        known: dict[str, dict[int, HostGpu]] = {}
        for gpu in await self._ctx.records.list_host_gpus(host_ids):
            known.setdefault(gpu.host_id, {})[gpu.idx] = gpu
        now = self._ctx.clock.now()
        due: dict[str, list[HealthChange]] = {}
        refusals: list[errors.ServiceError | None] = []
        for report in reports:
            try:
                changes = self._judged(report, agents.get(report.host_id), token_id, known)
            except errors.ServiceError as exc:
                refusals.append(exc)
                continue
            refusals.append(None)
            host_id = report.host_id
            self._samples[host_id] = (time.monotonic(), tuple(report.samples))
            written = self._stored_at.get(host_id, agents[host_id].reported_at)
            stale = (now - written).total_seconds() >= self._ctx.settings.gpu_agent_silent_s / 3
            if changes or stale:
                due[host_id] = changes
        if due:
            await self._ctx.records.record_gpu_health(due, now)
            for host_id in due:
                self._stored_at[host_id] = now
        return refusals

    def _judged(
        self,
        report: SampleReport,
        agent: GpuAgent | None,
        token_id: str | None,
        known: dict[str, dict[int, HostGpu]],
    ) -> list[HealthChange]:
        """The health changes ``report`` brings; refused if it is not from the host's agent
        (its token, its current run) or names GPUs the host did not register."""
        host_id = report.host_id
        if agent is None:
            raise errors.NotFound(f"GPU host {host_id} is not registered: register it first")
        if (agent.token_id is not None or self._ctx.vipu.agent_tokens_required) and (
            token_id is None or token_id != agent.token_id
        ):
            raise errors.PermissionDenied(
                f"GPU host {host_id} answers only to the agent token it registered with"
            )
        if agent.boot_id != report.boot_id:
            raise errors.NotFound(
                f"GPU host {host_id} was registered by another agent run: register again"
            )
        gpus = known.get(host_id, {})
        changes = []
        for sample in report.samples:
            index = sample.reading.index
            gpu = gpus.get(index)
            if gpu is None or (sample.reading.uuid and sample.reading.uuid != gpu.uuid):
                raise errors.NotFound(
                    f"GPU {index} of host {host_id} is not the one registered: register again"
                )
            problems = "; ".join(sample.problems)[:2000]
            if gpu.healthy != sample.healthy or gpu.problems != problems:
                changes.append(HealthChange(index, sample.healthy, problems))
        return changes

    # -- what others read ---------------------------------------------------------------------

    def telemetry(self) -> list[GpuTelemetry]:
        """Every GPU this controller heard of lately, with its last sample (from memory)."""
        found = []
        now = time.monotonic()
        for host_id, inventory in sorted(self._inventories.items()):
            at, samples = self._samples.get(host_id, (now, ()))
            if now - at > MAX_SAMPLES_AGE_S:
                continue
            by_index = {s.reading.index: s for s in samples}
            for gpu in inventory.gpus:
                found.append(
                    GpuTelemetry(host_id, inventory.hostname, gpu, by_index.get(gpu.index))
                )
        return found

    async def inventory(self) -> dict[str, HostGpus]:
        return await agent_hosts(self._ctx)

    def driver_versions(self) -> dict[str, str]:
        """Host id -> its NVIDIA driver's version (as its agent registered)."""
        return {h: inv.driver_version for h, inv in self._inventories.items()}

    def last_sample(self, host_id: str, index: int) -> GpuSample | None:
        at, samples = self._samples.get(host_id, (0.0, ()))
        if time.monotonic() - at > MAX_SAMPLES_AGE_S:
            return None
        return next((s for s in samples if s.reading.index == index), None)

    async def of_servers(
        self, server_ids: Sequence[str]
    ) -> dict[str, list[tuple[ServerGpu, GpuSample | None]]]:
        """Each server's GPUs with their last samples (what its tenant may see of them)."""
        found = await server_gpus(self._ctx, server_ids)
        return {
            server: [(g, self.last_sample(g.host_id, g.slot)) for g in gpus]
            for server, gpus in found.items()
        }


def _gpu_record(host_id: str, gpu: GpuInfo, now: datetime) -> HostGpu:
    return copy_all_fields(
        HostGpu,
        gpu,
        host_id=host_id,
        idx=gpu.index,
        details={
            "minor": gpu.minor,
            "mig_mode": gpu.mig_mode,
            "nvlink_peers": list(gpu.nvlink_peers),
            "topology": [list(t) for t in gpu.topology],
            "devices": [{"path": d.path, "source": d.source} for d in gpu.devices],
        },
        healthy=False,
        problems=NO_SAMPLE,
        changed_at=now,
    )


async def agent_hosts(ctx: CloudContext) -> dict[str, HostGpus]:
    """Every host with an agent: its agent, GPUs and how long it has been silent."""
    agents = await ctx.records.list_gpu_agents()
    gpus = await ctx.records.list_host_gpus()
    now = ctx.clock.now()
    by_host: dict[str, list[HostGpu]] = {}
    for gpu in gpus:
        by_host.setdefault(gpu.host_id, []).append(gpu)
    found = {}
    for agent in agents:
        quiet = (now - agent.reported_at).total_seconds()
        silent = quiet if quiet > ctx.settings.gpu_agent_silent_s else None
        found[agent.host_id] = HostGpus(agent, tuple(by_host.get(agent.host_id, ())), silent)
    return found


def gpu_states(host: HostGpus) -> list[GpuState]:
    return [GpuState(g.idx, g.uuid, g.healthy, g.problems) for g in host.gpus]


async def host_views(ctx: CloudContext) -> list[HostView]:
    """Registered hosts as placement sees them: slots held by servers are not free, and
    neither are the slots of unhealthy GPUs or of a host whose agent is silent. Hosts
    registered by hand (no agent) are placed as before, unmonitored."""
    usage = await ctx.records.list_host_usage()
    agents = await agent_hosts(ctx)
    views = []
    for u in usage:
        free = u.free
        host = agents.get(u.host.id)
        if host is not None:
            bad = unusable_slots(u.host.id, gpu_states(host), host.silent_for_s, u.host.slots)
            free = tuple(s for s in free if s not in bad)
        views.append(
            HostView(
                id=u.host.id,
                role=HostRole(u.host.role),
                model=u.host.model,
                fabric=u.host.fabric,
                slots=u.host.slots,
                free=free,
                enabled=u.host.enabled,
            )
        )
    return views


@dataclass(frozen=True)
class ServerGpu:
    """A GPU a server holds: the slot, and what its agent says of it (None: a host registered
    by hand, without an agent)."""

    host_id: str
    slot: int
    record: HostGpu | None


async def server_gpus(ctx: CloudContext, server_ids: Sequence[str]) -> dict[str, list[ServerGpu]]:
    """The GPUs each server holds, in slot order (servers holding none are left out)."""
    held = await ctx.records.server_slots(server_ids)
    hosts = {host for host, _ in held.values()}
    records = await ctx.records.list_host_gpus(sorted(hosts))
    by_slot = {(g.host_id, g.idx): g for g in records}
    return {
        server: [ServerGpu(host, slot, by_slot.get((host, slot))) for slot in slots]
        for server, (host, slots) in held.items()
    }
