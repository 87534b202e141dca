"""``ListIpuTelemetry`` of the admin gRPC API: samples to ``vpod.admin.v1`` messages."""

from __future__ import annotations

from collections.abc import Iterable

from vpod.agent.convert import holder_to_wire, telemetry_to_wire, timestamp
from vpod.wire import admin_pb2 as apb
from vpod.wire.field_copy import copy_fields

from ..telemetry import IpuSample


def telemetry_reply(samples: Iterable[IpuSample]) -> apb.ListIpuTelemetryReply:
    reply = apb.ListIpuTelemetryReply()
    for s in samples:
        reply.ipus.append(
            copy_fields(
                apb.IpuTelemetrySample,
                s,
                holder=holder_to_wire(s.holder),
                attached_since=timestamp(s.attached_since) if s.attached_since else None,
                telemetry=telemetry_to_wire(s.telemetry),
                sampled_at=timestamp(s.sampled_at),
            )
        )
    return reply
