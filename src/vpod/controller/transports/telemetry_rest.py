"""``GET /api/v1/admin/telemetry``: per-IPU telemetry as JSON (admin gRPC ``ListIpuTelemetry``).

Admin only (as every ``/api/v1/admin`` endpoint); served from the heartbeats'
cache, so a call never reaches an agent.
"""

from dataclasses import asdict
from datetime import UTC, datetime
from typing import Annotated

from fastapi import APIRouter, Depends, Query

from vpod.wire.field_copy import copy_fields
from vpod.wire.rest.telemetry import HolderOut, IpuTelemetryList, IpuTelemetryOut

from ..telemetry import IpuSample
from .rest_auth import admin_caller
from .rest_deps import TelemetryDep
from .rest_routes import Routes
from .rest_user import API_PREFIX


def sample_out(s: IpuSample) -> IpuTelemetryOut:
    return copy_fields(
        IpuTelemetryOut,
        s,
        cluster_id=s.cluster_id or None,
        partition_id=s.partition_id or None,
        routing_id=s.routing_id if s.partition_id else None,
        attached_client=s.attached_client or None,
        holder=copy_fields(HolderOut, s.holder) if s.attached else None,
        attached_since=datetime.fromtimestamp(s.attached_since, UTC)
        if s.attached and s.attached_since
        else None,
        sampled_at=datetime.fromtimestamp(s.sampled_at, UTC),
        **asdict(s.telemetry),
    )


router = APIRouter(prefix=f"{API_PREFIX}/admin", dependencies=[Depends(admin_caller)])
"""``GET /api/v1/admin/telemetry`` (``create_http_app`` includes it)."""

Filter = Annotated[str, Query(max_length=200)]


@Routes(router, "admin: telemetry").get("/telemetry", 400, 401, 403)
async def list_ipu_telemetry(
    telemetry: TelemetryDep,
    cluster: Filter = "",
    partition: Filter = "",
    agent: Annotated[list[str], Query(description="Agent ids (repeat the parameter).")] = [],  # noqa: B006
) -> IpuTelemetryList:
    """Every IPU's utilisation, temperature, power, holder and link errors, from the agents'
    last heartbeats (empty on a controller that does not run heartbeats)."""
    samples = await telemetry.samples(cluster_id=cluster, partition_id=partition, agent_ids=agent)
    return IpuTelemetryList(ipus=[sample_out(s) for s in samples])
