"""Per-GPU series on the controller's ``/metrics``, named and labelled as NVIDIA's DCGM
exporter has them, so dashboards made for dcgm-exporter work unchanged.

=========================  =====  ===========================================
series                     type   value (dcgm-exporter's help text)
=========================  =====  ===========================================
``DCGM_FI_DEV_GPU_UTIL``   gauge  GPU utilization (in %).
``DCGM_FI_DEV_FB_USED``    gauge  Framebuffer memory used (in MiB).
``DCGM_FI_DEV_FB_FREE``    gauge  Framebuffer memory free (in MiB).
``DCGM_FI_DEV_GPU_TEMP``   gauge  GPU temperature (in C).
``DCGM_FI_DEV_POWER_USAGE``gauge  Power draw (in W).
``DCGM_FI_DEV_XID_ERRORS`` gauge  Value of the last XID error encountered.
=========================  =====  ===========================================

Labels: ``gpu`` (index), ``UUID``, ``pci_bus_id``, ``device`` (``nvidiaN``),
``modelName``, ``Hostname`` (the agent's host name) and
``DCGM_FI_DRIVER_VERSION``, as dcgm-exporter's; ``vpod_host`` (the host's id
in the cloud) and ``vpod_healthy`` (1/0 as a gauge of its own,
``vpod_gpu_healthy``) are vpod's. Values come from the last sample each
agent sent to this controller (memory only: no store read per scrape).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from .services.gpu_hosts import GpuTelemetry

LABELS = [
    "gpu",
    "UUID",
    "pci_bus_id",
    "device",
    "modelName",
    "Hostname",
    "DCGM_FI_DRIVER_VERSION",
    "vpod_host",
]
SERIES = (
    ("DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %)."),
    ("DCGM_FI_DEV_FB_USED", "Framebuffer memory used (in MiB)."),
    ("DCGM_FI_DEV_FB_FREE", "Framebuffer memory free (in MiB)."),
    ("DCGM_FI_DEV_GPU_TEMP", "GPU temperature (in C)."),
    ("DCGM_FI_DEV_POWER_USAGE", "Power draw (in W)."),
    ("DCGM_FI_DEV_XID_ERRORS", "Value of the last XID error encountered."),
    ("vpod_gpu_healthy", "1 when the GPU agent judges the GPU healthy (it may be placed), else 0."),
)


class DcgmCollector(Collector):
    def __init__(
        self, telemetry: Callable[[], list[GpuTelemetry]], drivers: Callable[[], dict[str, str]]
    ) -> None:
        self._telemetry = telemetry
        self._drivers = drivers

    def collect(self) -> Iterator[Metric]:
        families = {name: GaugeMetricFamily(name, text, labels=LABELS) for name, text in SERIES}
        drivers = self._drivers()
        for item in self._telemetry():
            if item.sample is None:
                continue
            gpu, r = item.gpu, item.sample.reading
            labels = [
                str(gpu.index),
                gpu.uuid,
                gpu.pci_bus_id,
                f"nvidia{gpu.minor}",
                gpu.name,
                item.hostname,
                drivers.get(item.host_id, ""),
                item.host_id,
            ]
            values = (
                r.utilization_pct,
                r.memory_used_mib,
                max(r.memory_total_mib - r.memory_used_mib, 0),
                r.temperature_c,
                r.power_w,
                r.last_xid,
                1 if item.sample.healthy else 0,
            )
            for (name, _), value in zip(SERIES, values, strict=True):
                families[name].add_metric(labels, value)
        yield from families.values()


def dcgm_renderer(
    telemetry: Callable[[], list[GpuTelemetry]], drivers: Callable[[], dict[str, str]]
) -> Callable[[], bytes]:
    """A function rendering the series now, in the Prometheus text format."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(DcgmCollector(telemetry, drivers))
    return lambda: generate_latest(registry)
