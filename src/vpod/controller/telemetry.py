"""Per-IPU telemetry of the pod, from the agents' heartbeats, for the admin API and ``/metrics``.

The heartbeat (``Health``, once a second from the leader, see
:mod:`.heartbeats`) already carries each IPU's utilisation, temperature,
power, link errors and holder, so reading telemetry never calls an agent:
:class:`IpuTelemetryView` folds the last heartbeat of every agent with the
clusters the agents belong to. Only the controller that runs the heartbeats
(the leader) has telemetry; another replica answers with no samples.

:class:`TelemetryExporter` turns the samples into Prometheus series in the
manner of NVIDIA's DCGM exporter: one series per IPU per quantity, labelled
``cluster``, ``machine`` (the agent id), ``ipu`` (device id), ``serial`` and
``partition`` (empty when free). It renders at most once per ``ttl_s`` and
serves the same bytes to every scrape in between (0.5 s by default), so a
pod1024 scraped by several Prometheus servers costs at most two renderings a
second.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass

from vpod.agent.model import Holder, IpuTelemetry, MachineHealth
from vpod.domain.entities import Agent, Cluster
from vpod.domain.naming import natural_key
from vpod.wire.field_copy import copy_fields

from . import errors

log = logging.getLogger("vpod.telemetry")

BUSY_ABOVE = 0.0
"""An IPU whose utilisation is above this is busy."""


@dataclass(frozen=True, slots=True)
class IpuSample:
    """One IPU as its agent's last heartbeat reported it."""

    agent_id: str
    cluster_id: str
    device_id: int
    serial: str
    partition_id: str
    routing_id: int
    healthy: bool
    fault: str
    attached_client: str
    holder: Holder
    attached_since: float
    telemetry: IpuTelemetry
    sampled_at: float
    """Seconds since the epoch when the agent answered."""

    @property
    def attached(self) -> bool:
        return bool(self.attached_client)

    @property
    def busy(self) -> bool:
        return self.telemetry.utilisation > BUSY_ABOVE


class IpuTelemetryView:
    """Samples from the cached heartbeats; never calls an agent."""

    def __init__(
        self,
        last_health: Callable[[str], tuple[MachineHealth, float] | None],
        agents_and_clusters: Callable[[], Awaitable[tuple[list[Agent], list[Cluster]]]],
    ) -> None:
        self._last_health = last_health
        self._agents_and_clusters = agents_and_clusters

    async def samples(
        self,
        *,
        cluster_id: str = "",
        partition_id: str = "",
        agent_ids: Sequence[str] = (),
    ) -> list[IpuSample]:
        errors.check_filter("cluster", cluster_id)
        errors.check_filter("partition", partition_id)
        for agent_id in agent_ids:
            errors.check_filter("agent", agent_id)
        agents, clusters = await self._agents_and_clusters()
        return fold_samples(
            agents,
            clusters,
            self._last_health,
            cluster_id=cluster_id,
            partition_id=partition_id,
            agent_ids=agent_ids,
        )


def fold_samples(
    agents: Iterable[Agent],
    clusters: Iterable[Cluster],
    last_health: Callable[[str], tuple[MachineHealth, float] | None],
    *,
    cluster_id: str = "",
    partition_id: str = "",
    agent_ids: Sequence[str] = (),
) -> list[IpuSample]:
    """Every IPU of every agent with a heartbeat, filtered; by agent id, then device id."""
    cluster_of = {a: c.id for c in clusters for a in c.agent_ids}
    wanted = set(agent_ids)
    samples: list[IpuSample] = []
    for agent in sorted(agents, key=lambda a: natural_key(a.id)):
        if wanted and agent.id not in wanted:
            continue
        cluster = cluster_of.get(agent.id, "")
        if cluster_id and cluster != cluster_id:
            continue
        seen = last_health(agent.id)
        if seen is None:
            continue
        health, at = seen
        for ipu in health.ipus:
            if partition_id and ipu.partition_id != partition_id:
                continue
            samples.append(
                copy_fields(IpuSample, ipu, agent_id=agent.id, cluster_id=cluster, sampled_at=at)
            )
    return samples


# -- Prometheus --------------------------------------------------------------------------------

LABELS = ["cluster", "machine", "ipu", "serial", "partition"]

METRICS: tuple[tuple[str, str, str], ...] = (
    ("vpod_ipu_utilization_ratio", "gauge", "Share of the IPU's tiles busy (0..1)."),
    ("vpod_ipu_temperature_celsius", "gauge", "IPU temperature."),
    ("vpod_ipu_power_watts", "gauge", "IPU power draw."),
    ("vpod_ipu_attached", "gauge", "1 when an application holds the IPU over IPUoF."),
    ("vpod_ipu_healthy", "gauge", "1 when the IPU has no fault."),
    ("vpod_ipu_links_down", "gauge", "The IPU's IPU-Links that are down."),
    ("vpod_ipu_link_errors", "counter", "IPU-Link errors counted since the agent started."),
)
"""(name, type, help) of every per-IPU series, DCGM-exporter style."""


def _values(sample: IpuSample) -> tuple[float, ...]:
    t = sample.telemetry
    return (
        t.utilisation,
        t.temperature_c,
        t.power_w,
        1.0 if sample.attached else 0.0,
        1.0 if sample.healthy else 0.0,
        float(t.links_down),
        float(t.link_errors),
    )


def _label(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def render_samples(samples: Sequence[IpuSample]) -> bytes:
    """The Prometheus text of :data:`METRICS` for ``samples``.

    Written directly rather than through ``prometheus_client``'s collectors: one
    label string per IPU serves all seven families, which keeps a pod1024
    (7,168 series) to a few milliseconds.
    """
    labels = [
        f'cluster="{_label(s.cluster_id)}",machine="{_label(s.agent_id)}",ipu="{s.device_id}",'
        f'serial="{_label(s.serial)}",partition="{_label(s.partition_id)}"'
        for s in samples
    ]
    values = [_values(s) for s in samples]
    out: list[str] = []
    for column, (name, kind, text) in enumerate(METRICS):
        series = f"{name}_total" if kind == "counter" else name
        out.append(f"# HELP {series} {text}\n# TYPE {series} {kind}\n")
        out.extend(
            f"{series}{{{label}}} {value[column]!r}\n"
            for label, value in zip(labels, values, strict=True)
        )
    return "".join(out).encode()


class TelemetryExporter:
    """The per-IPU series, rendered at most once per ``ttl_s`` (scrapes in between reuse it)."""

    def __init__(
        self,
        view: IpuTelemetryView,
        *,
        ttl_s: float = 0.5,
        timer: Callable[[], float] = time.monotonic,
    ) -> None:
        self._view = view
        self._ttl = ttl_s
        self._timer = timer
        self._rendered = b""
        self._rendered_at: float | None = None
        self._lock = asyncio.Lock()
        self.renders = 0
        """How many times the series were built (tests and benchmarks read it)."""

    async def render(self) -> bytes:
        now = self._timer()
        if self._rendered_at is not None and now - self._rendered_at < self._ttl:
            return self._rendered
        async with self._lock:
            if self._rendered_at is not None and self._timer() - self._rendered_at < self._ttl:
                return self._rendered
            try:
                samples = await self._view.samples()
            except errors.ServiceError as exc:
                # Without the inventory (store down) the series cannot be labelled: serve the
                # last rendering (or none); the state gauges report the outage.
                log.warning("telemetry: cannot read the inventory: %s", exc)
                return self._rendered
            self._rendered = render_samples(samples)
            self._rendered_at = self._timer()
            self.renders += 1
            return self._rendered


__all__ = [
    "METRICS",
    "IpuSample",
    "IpuTelemetryView",
    "TelemetryExporter",
    "fold_samples",
]
