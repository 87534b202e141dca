"""Emulated IPU telemetry: utilisation, temperature and power that move with the workload.

A real IPU-Machine reads these from its board sensors; the emulation derives
them from what the attached application says it is doing (the ``LOAD`` line
of the IPUoF protocol, see :mod:`vpod.agent.ipuof`):

- **utilisation** is the load the application last reported (0..1), with a
  little deterministic ripple while it is above zero, and 0 when no
  application is attached;
- **power** follows utilisation with a time constant of about a second, from
  the idle draw to the model's peak (figures are plausible, not datasheet
  values: about 45 W idle and 210 W (Bow) or 185 W (M2000) flat out);
- **temperature** follows power with a time constant of about ten seconds,
  from about 35 °C idle to about 75 °C at full load.

Values are computed when read, from the time elapsed since the last change,
so the model needs no background task and costs nothing while nobody asks.
It does no I/O and takes the clock as an argument.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from vpod.domain.catalog import MachineType

from .model import IpuTelemetry

POWER_TAU_S = 1.0
TEMPERATURE_TAU_S = 10.0
AMBIENT_C = 35.0
FULL_LOAD_RISE_C = 40.0
RIPPLE = 0.03
"""Relative wobble of a busy IPU's utilisation, so a graph of it looks alive."""


@dataclass(frozen=True, slots=True)
class PowerFigures:
    idle_w: float
    peak_w: float


POWER: dict[MachineType, PowerFigures] = {
    MachineType.BOW2000: PowerFigures(idle_w=45.0, peak_w=210.0),
    MachineType.M2000: PowerFigures(idle_w=42.0, peak_w=185.0),
}


@dataclass(slots=True)
class _Sensor:
    load: float = 0.0
    power_w: float = 0.0
    temperature_c: float = AMBIENT_C
    at: float = 0.0


class TelemetryModel:
    """The sensors of one machine's four IPUs."""

    def __init__(
        self, machine_type: MachineType, clock: Callable[[], float], ipus: int = 4
    ) -> None:
        self._power = POWER[machine_type]
        self._clock = clock
        now = clock()
        self._sensors = [
            _Sensor(power_w=self._power.idle_w, temperature_c=AMBIENT_C, at=now)
            for _ in range(ipus)
        ]
        self._link_errors = [0] * ipus
        self._rest: dict[tuple[int, int], IpuTelemetry] = {}
        """Readings of a sensor at rest, by (link errors, links down)."""

    def set_load(self, device_id: int, load: float) -> None:
        """The application on ``device_id`` now runs at ``load`` (clamped to 0..1)."""
        sensor = self._advance(device_id)
        sensor.load = min(1.0, max(0.0, load))

    def count_link_error(self, device_id: int, errors: int = 1) -> None:
        self._link_errors[device_id] += errors

    def read(self, device_id: int, *, links_down: int = 0) -> IpuTelemetry:
        sensor = self._advance(device_id)
        if self._at_rest(sensor):
            # The common case (a process of 256 machines reads 1,024 sensors a second), and
            # its reading never changes: built once per count of errors and links down.
            key = (self._link_errors[device_id], links_down)
            rest = self._rest.get(key)
            if rest is None:
                rest = self._rest[key] = IpuTelemetry(
                    utilisation=0.0,
                    temperature_c=round(AMBIENT_C, 2),
                    power_w=round(self._power.idle_w, 2),
                    link_errors=key[0],
                    links_down=links_down,
                )
            return rest
        utilisation = sensor.load
        if utilisation > 0:
            wobble = RIPPLE * math.sin(sensor.at * 2.1 + device_id)
            utilisation = min(1.0, max(0.01, utilisation * (1.0 + wobble)))
        return IpuTelemetry(
            utilisation=round(utilisation, 4),
            temperature_c=round(sensor.temperature_c, 2),
            power_w=round(sensor.power_w, 2),
            link_errors=self._link_errors[device_id],
            links_down=links_down,
        )

    def _at_rest(self, sensor: _Sensor) -> bool:
        """No load, idle power, ambient temperature: where a sensor stays until loaded."""
        return (
            sensor.load == 0.0
            and sensor.power_w == self._power.idle_w
            and sensor.temperature_c == AMBIENT_C
        )

    def _advance(self, device_id: int) -> _Sensor:
        """Move the sensor's power and temperature towards what its load implies."""
        sensor = self._sensors[device_id]
        now = self._clock()
        elapsed = max(0.0, now - sensor.at)
        if elapsed and self._at_rest(sensor):
            sensor.at = now  # at rest it stays at rest: nothing to compute
        elif elapsed:
            sensor.power_w, sensor.temperature_c = _lagged(
                sensor.power_w, sensor.temperature_c, sensor.load, self._power, elapsed
            )
            sensor.at = now
        return sensor


def _lagged(
    power_w: float, temperature_c: float, load: float, figures: PowerFigures, elapsed: float
) -> tuple[float, float]:
    """Power and temperature ``elapsed`` seconds on at a steady ``load``: power a first-order
    lag towards what the load draws, temperature a first-order lag behind the power as it
    moves. Solved exactly, not stepped, so a reading does not depend on how often the sensor
    was read before it (a heartbeat every second and one a minute later agree)."""
    span = figures.peak_w - figures.idle_w
    target_power = figures.idle_w + load * span
    power_gap = power_w - target_power
    power_decay = math.exp(-elapsed / POWER_TAU_S)
    target_temperature = AMBIENT_C + FULL_LOAD_RISE_C * (target_power - figures.idle_w) / span
    # the part of the temperature still following the power's own gap, which decays with it
    following = (
        FULL_LOAD_RISE_C / span * power_gap * POWER_TAU_S / (POWER_TAU_S - TEMPERATURE_TAU_S)
    )
    temperature = (
        target_temperature
        + following * power_decay
        + (temperature_c - target_temperature - following) * math.exp(-elapsed / TEMPERATURE_TAU_S)
    )
    return target_power + power_gap * power_decay, temperature
