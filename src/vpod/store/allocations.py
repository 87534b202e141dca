"""Allocations: an ``allocations`` row plus its machines (``allocation_machines``).

A machine is in at most one allocation: the primary key of
``allocation_machines`` is (cluster_id, machine). A foreign key to
``cluster_agents`` refuses machines the cluster does not have.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Sequence

from sqlalchemy import Connection, delete, insert, select, update

from vpod.domain.entities import Allocation

from . import access_versions
from . import clusters as cluster_rows
from .dependants import Dependants
from .errors import Conflict, NotFound, StoreError, insert_raced
from .refusals import first_held, id_taken
from .schema import allocation_machines, allocations, cluster_agents, partitions
from .translate import decoding


@decoding("allocation")
def _allocation(
    allocation_id: str, cluster_id: str, machines: Sequence[int], hosts: object = None
) -> Allocation:
    return Allocation(
        id=allocation_id,
        cluster_id=cluster_id,
        machines=tuple(machines),
        hosts=tuple(str(h) for h in hosts) if isinstance(hosts, list) else (),
    )


def insert_allocation(conn: Connection, allocation: Allocation) -> None:
    conn.execute(
        insert(allocations).values(
            id=allocation.id, cluster_id=allocation.cluster_id, hosts=list(allocation.hosts)
        )
    )
    conn.execute(
        insert(allocation_machines),
        [
            {"cluster_id": allocation.cluster_id, "machine": m, "allocation_id": allocation.id}
            for m in allocation.machines
        ],
    )


def explain_insert_refused(conn: Connection, allocation: Allocation) -> StoreError:
    """Why an allocation could not be added: its id, its cluster, or a machine."""
    aid, cid = allocation.id, allocation.cluster_id
    taken_id = id_taken(conn, allocations.c.id, "allocation", aid)
    if taken_id is not None:
        return taken_id
    machine_agents: dict[int, str] = {
        row.position: row.agent_id
        for row in conn.execute(
            select(cluster_agents.c.position, cluster_agents.c.agent_id).where(
                cluster_agents.c.cluster_id == cid
            )
        )
    }
    if not machine_agents:
        return cluster_rows.not_found(cid)
    missing = [m for m in allocation.machines if m not in machine_agents]
    if missing:
        return NotFound(
            f"cluster {cid} has machines 0..{len(machine_agents) - 1}, not machine {missing[0]}:"
            f" allocation {aid} must use machines of its cluster"
        )
    machine_rows = allocation_machines.c
    taken = first_held(
        conn, machine_rows.machine, machine_rows.allocation_id, cid, allocation.machines
    )
    if taken is not None:
        machine, holder = taken
        return Conflict(
            f"machine {machine} (agent {machine_agents[machine]}) of cluster {cid}"
            f" is already in allocation {holder}: retry with a fresh snapshot"
        )
    return insert_raced("allocation", aid)


def set_hosts(conn: Connection, allocation_id: str, hosts: Sequence[str]) -> None:
    """Replace who may attach to the allocation's IPUs over IPUoF."""
    done = conn.execute(
        update(allocations).where(allocations.c.id == allocation_id).values(hosts=list(hosts))
    )
    if done.rowcount == 0:
        raise not_found(allocation_id)


def get_allocation(conn: Connection, allocation_id: str) -> Allocation:
    row = conn.execute(
        select(allocations.c.cluster_id, allocations.c.hosts).where(
            allocations.c.id == allocation_id
        )
    ).first()
    if row is None:
        raise not_found(allocation_id)
    cluster_id = row.cluster_id
    machines = conn.scalars(
        select(allocation_machines.c.machine)
        .where(allocation_machines.c.allocation_id == allocation_id)
        .order_by(allocation_machines.c.machine)
    ).all()
    return _allocation(allocation_id, cluster_id, machines, row.hosts)


def list_allocations(
    conn: Connection,
    *,
    ids: Collection[str] | None = None,
    cluster_id: str | None = None,
) -> list[Allocation]:
    """Allocations, by id; optionally only ``ids`` and/or those of ``cluster_id``."""
    if ids is not None and not ids:
        return []
    query = select(allocations.c.id, allocations.c.cluster_id, allocation_machines.c.machine).join(
        allocation_machines, allocation_machines.c.allocation_id == allocations.c.id
    )
    if ids is not None:
        query = query.where(allocations.c.id.in_(list(ids)))
    if cluster_id is not None:
        query = query.where(allocations.c.cluster_id == cluster_id)
    machines: dict[tuple[str, str], list[int]] = defaultdict(list)
    for aid, cid, machine in conn.execute(
        query.order_by(allocations.c.id, allocation_machines.c.machine)
    ):
        machines[aid, cid].append(machine)
    hosts_query = select(allocations.c.id, allocations.c.hosts)
    if ids is not None:
        hosts_query = hosts_query.where(allocations.c.id.in_(list(ids)))
    if cluster_id is not None:
        hosts_query = hosts_query.where(allocations.c.cluster_id == cluster_id)
    hosts: dict[str, object] = {row.id: row.hosts for row in conn.execute(hosts_query)}
    return [_allocation(a, c, m, hosts.get(a)) for (a, c), m in machines.items()]


def machines_by_allocation(conn: Connection, cluster_id: str) -> dict[str, tuple[int, ...]]:
    """Allocation id -> its machines, for one cluster."""
    found: dict[str, list[int]] = defaultdict(list)
    for aid, machine in conn.execute(
        select(allocation_machines.c.allocation_id, allocation_machines.c.machine)
        .where(allocation_machines.c.cluster_id == cluster_id)
        .order_by(allocation_machines.c.allocation_id, allocation_machines.c.machine)
    ):
        found[aid].append(machine)
    return {aid: tuple(ms) for aid, ms in found.items()}


_PARTITIONS = Dependants("allocation", "partition", partitions.c.allocation_id)


def delete_allocation(conn: Connection, allocation_id: str) -> None:
    """Remove an allocation without partitions; its grants to users go with it."""
    _PARTITIONS.refuse_while_held(conn, allocation_id)
    access_versions.revoke_everywhere(conn, allocation_id)
    if conn.execute(delete(allocations).where(allocations.c.id == allocation_id)).rowcount == 0:
        raise not_found(allocation_id)


explain_delete_refused = _PARTITIONS.explain_refusal


def not_found(allocation_id: str) -> NotFound:
    return NotFound(
        f"allocation {allocation_id} does not exist: list allocations to see the existing ones"
    )
