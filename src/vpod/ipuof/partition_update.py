"""``vpod-run --update-partition yes``: make a named partition the shape a run asks for.

As ``poprun --update-partition yes``: a partition whose shape differs from
the run's (its size, replicas, or GCDs) is removed and created again with
the asked shape, in the same allocation and with the same id, unless it is
in use. In use means an application holds one of its IPUs now; the
partition's machines say so on its IPUoF endpoints (``STATUS``), so the
check needs nothing but the user's own credentials. A partition in use is
never touched: the run is refused with who holds which IPU.
"""

from __future__ import annotations

from vpod.client import FailedPrecondition, Partition, UserClient

from .controller import device_of
from .protocol import IpuStatus, query_statuses


def shape_differences(existing: Partition, size: int, replicas: int, gcds: int) -> list[str]:
    """How ``existing`` differs from the asked shape, in words (empty: the same)."""
    found = []
    if existing.size != size:
        found.append(f"{existing.size} IPUs, not {size}")
    if existing.num_replicas and existing.num_replicas != replicas:
        found.append(f"{existing.num_replicas} replicas, not {replicas}")
    if max(existing.num_gcds, 1) != gcds:
        found.append(f"{max(existing.num_gcds, 1)} GCDs, not {gcds}")
    return found


def holders(client: UserClient, partition_id: str) -> list[str]:
    """Who holds an IPU of the partition now, one phrase per IPU (empty: not in use)."""
    try:
        config = client.ipuof_config(partition_id)
    except FailedPrecondition:
        return []  # not ACTIVE: nothing can be attached to it
    ipus = [device_of(d) for gcd in config.gcds for d in gcd.devices]
    found = []
    for status in query_statuses(ipus, partition_id):
        if isinstance(status, IpuStatus) and status.attached:
            who = status.holder
            by = f"pid {who.pid} on {who.host}" if who.pid else status.client or "an application"
            found.append(f"IPU {status.routing_id} ({status.agent}) held by {by}")
    return found
