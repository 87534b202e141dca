"""Whether a GPU may be handed out, from one reading. Pure.

A GPU is *unhealthy* (taken out of placement; a cluster using it is DEGRADED)
when the reading shows damage that needs an operator or a GPU reset: an XID
error of the hardware kind (the driver's own list of XIDs that call for a
reset or mean lost memory or a lost link; application errors such as XID 13
or 31 are a program's fault, not the GPU's), uncorrectable ECC errors, pages
waiting to be retired or rows waiting to be remapped, a failed remapping, a
GPU NVML lost, or a temperature at or above the GPU's own slowdown point (a
fixed limit where NVML does not say). Throttling is reported as a warning.
"""

from __future__ import annotations

from dataclasses import dataclass

from .model import GpuReading, GpuSample

HARDWARE_XIDS: dict[int, str] = {
    48: "double-bit ECC error",
    61: "internal micro-controller breakpoint",
    62: "internal micro-controller halt",
    63: "ECC page retirement or row remapping recorded",
    64: "ECC page retirement or row remapping failed",
    74: "NVLink error",
    79: "GPU has fallen off the bus",
    92: "high single-bit ECC error rate",
    94: "contained ECC error",
    95: "uncontained ECC error",
    119: "GSP RPC timeout",
    120: "GSP error",
    140: "unrecovered ECC error",
}
"""XIDs that mean the GPU itself failed (NVIDIA's XID catalog: reset or replace)."""

APPLICATION_XIDS: dict[int, str] = {
    13: "graphics engine exception",
    31: "GPU memory page fault",
    43: "GPU stopped processing",
    45: "preemptive cleanup",
}


def xid_text(xid: int) -> str:
    """``XID 79 (GPU has fallen off the bus)``."""
    meaning = HARDWARE_XIDS.get(xid) or APPLICATION_XIDS.get(xid)
    return f"XID {xid} ({meaning})" if meaning else f"XID {xid}"


@dataclass(frozen=True)
class HealthLimits:
    max_temperature_c: int = 90
    """Unhealthy at or above this when the GPU does not report its slowdown temperature."""


def assess(reading: GpuReading, limits: HealthLimits = HealthLimits()) -> GpuSample:
    problems: list[str] = []
    if reading.lost:
        problems.append("NVML lost the GPU (fallen off the bus?)")
    if reading.last_xid in HARDWARE_XIDS:
        problems.append(xid_text(reading.last_xid))
    if reading.ecc_uncorrected > 0:
        problems.append(f"{reading.ecc_uncorrected} uncorrectable ECC error(s)")
    if reading.retired_pages_pending:
        problems.append("retired memory pages pending: reset the GPU")
    if reading.remapped_rows_pending:
        problems.append("remapped memory rows pending: reset the GPU")
    if reading.remapping_failed:
        problems.append("memory row remapping failed: replace the GPU")
    hot = reading.slowdown_temperature_c or limits.max_temperature_c
    if reading.temperature_c >= hot:
        problems.append(f"temperature {reading.temperature_c} °C at or above {hot} °C")
    warnings = [f"throttled: {', '.join(reading.throttle_reasons)}"] * bool(
        reading.throttle_reasons
    )
    if reading.last_xid and reading.last_xid not in HARDWARE_XIDS:
        warnings.append(f"last {xid_text(reading.last_xid)}, an application error")
    return GpuSample(reading, not problems, tuple(problems), tuple(warnings))
