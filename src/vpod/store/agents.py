"""Agents and their health: rows of ``agents`` to and from domain values.

Functions take an open connection inside the caller's transaction (see
:class:`vpod.store.engine.Database`); ``Store`` decides where transactions
begin and end.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Row, bindparam, delete, insert, select, update

from vpod.domain.catalog import IPUS_PER_MACHINE, MachineType
from vpod.domain.entities import Agent

from .errors import Conflict, NotFound, StoreError, insert_raced, removal_raced
from .records import AgentHealth, AgentHealthState
from .refusals import id_taken
from .schema import agent_keys, agents, cluster_agents
from .translate import decoding


@decoding("agent")
def _agent(row: Row[Any]) -> Agent:
    return Agent(
        id=row.id,
        host=row.host,
        port=row.port,
        machine_type=MachineType[row.machine_type],
        serial=row.serial,
        key=row.agent_key or "",
    )


_AGENT_COLUMNS = (agents.c.id, agents.c.host, agents.c.port, agents.c.machine_type, agents.c.serial)
"""What an :class:`Agent` is made of. Reads name their columns: a row also holds the agent's
IPUoF facts (JSON of a few hundred bytes) and its faults, which the inventory, reloaded every
second with every agent of the pod, has no use for."""
_HEALTH_COLUMNS: tuple[Any, ...] = (
    agents.c.id,
    agents.c.health,
    agents.c.last_heartbeat,
    agents.c.health_reason,
    agents.c.device_faults,
)


def _with_key() -> Any:
    """Agents with the key each answers to (an outer join: an agent may have none)."""
    return select(*_AGENT_COLUMNS, agent_keys.c.agent_key).outerjoin(
        agent_keys, agent_keys.c.agent_id == agents.c.id
    )


def set_agent_key(
    conn: Connection, agent_id: str, host: str, port: int, key: str, at: datetime
) -> None:
    """Record the key agent ``agent_id`` (at ``host:port``) answers to."""
    conn.execute(delete(agent_keys).where(agent_keys.c.agent_id == agent_id))
    conn.execute(
        insert(agent_keys).values(
            agent_id=agent_id, host=host, port=port, agent_key=key, updated_at=at
        )
    )


def agent_key_of(conn: Connection, agent_id: str) -> str | None:
    found: str | None = conn.scalar(
        select(agent_keys.c.agent_key).where(agent_keys.c.agent_id == agent_id)
    )
    return found


def agent_key_at(conn: Connection, host: str, port: int) -> str | None:
    """The key of the agent that last registered from ``host:port``, if any."""
    found: str | None = conn.scalar(
        select(agent_keys.c.agent_key)
        .where(agent_keys.c.host == host, agent_keys.c.port == port)
        .order_by(agent_keys.c.updated_at.desc())
        .limit(1)
    )
    return found


@decoding("agent health")
def _health(row: Row[Any]) -> AgentHealth:
    return AgentHealth(
        agent_id=row.id,
        state=AgentHealthState[row.health],
        last_heartbeat=row.last_heartbeat,
        reason=row.health_reason,
        device_faults=decode_faults(row.device_faults),
    )


def decode_faults(stored: Any) -> tuple[tuple[int, str], ...]:
    """The ``device_faults`` column as (device id, reason) pairs by device; NULL is none."""
    if not stored:
        return ()
    return tuple(sorted((int(device), str(reason)) for device, reason in stored))


def _encode_faults(agent_id: str, faults: Mapping[int, str]) -> list[list[int | str]]:
    for device in faults:
        if not 0 <= device < IPUS_PER_MACHINE:
            raise ValueError(
                f"agent {agent_id} reported a fault on IPU device {device}: device ids are"
                f" 0..{IPUS_PER_MACHINE - 1}"
            )
    return [[device, faults[device]] for device in sorted(faults)]


def _values(agent: Agent) -> dict[str, Any]:
    return {
        "host": agent.host,
        "port": agent.port,
        "machine_type": agent.machine_type.name,
        "serial": agent.serial,
    }


def insert_agent(conn: Connection, agent: Agent) -> None:
    conn.execute(
        insert(agents).values(
            id=agent.id,
            health=AgentHealthState.UNKNOWN.name,
            last_heartbeat=None,
            health_reason="",
            device_faults=[],
            **_values(agent),
        )
    )


def explain_insert_refused(conn: Connection, agent: Agent) -> StoreError:
    taken_id = id_taken(conn, agents.c.id, "agent", agent.id)
    if taken_id is not None:
        return taken_id
    return insert_raced("agent", agent.id)


def update_agent(conn: Connection, agent: Agent) -> None:
    done = conn.execute(update(agents).where(agents.c.id == agent.id).values(**_values(agent)))
    if done.rowcount == 0:
        raise _not_found(agent.id)


def get_agent(conn: Connection, agent_id: str) -> Agent:
    row = conn.execute(_with_key().where(agents.c.id == agent_id)).first()
    if row is None:
        raise _not_found(agent_id)
    return _agent(row)


def list_agents(conn: Connection, ids: Sequence[str] | None = None) -> list[Agent]:
    query = _with_key().order_by(agents.c.id)
    if ids is not None:
        query = query.where(agents.c.id.in_(list(ids)))
    return [_agent(row) for row in conn.execute(query)]


def delete_agent(conn: Connection, agent_id: str) -> None:
    """Remove an agent that no cluster uses."""
    cluster_id = conn.scalar(
        select(cluster_agents.c.cluster_id).where(cluster_agents.c.agent_id == agent_id)
    )
    if cluster_id is not None:
        raise in_cluster(agent_id, cluster_id)
    if conn.execute(delete(agents).where(agents.c.id == agent_id)).rowcount == 0:
        raise _not_found(agent_id)


def explain_delete_refused(conn: Connection, agent_id: str) -> StoreError:
    cluster_id = conn.scalar(
        select(cluster_agents.c.cluster_id).where(cluster_agents.c.agent_id == agent_id)
    )
    if cluster_id is not None:
        return in_cluster(agent_id, cluster_id)
    return removal_raced("agent", agent_id)


def in_cluster(agent_id: str, cluster_id: str) -> Conflict:
    return Conflict(
        f"agent {agent_id} is part of cluster {cluster_id}: remove the cluster first",
        retryable=False,
    )


def set_health(
    conn: Connection,
    agent_id: str,
    state: AgentHealthState,
    *,
    at: datetime | None,
    reason: str,
) -> None:
    """Record reachability; ``at`` (the last heartbeat) is kept when ``None`` is given."""
    values: dict[str, Any] = {"health": state.name, "health_reason": reason}
    if at is not None:
        values["last_heartbeat"] = at
    done = conn.execute(update(agents).where(agents.c.id == agent_id).values(**values))
    if done.rowcount == 0:
        raise _not_found(agent_id)


def set_heartbeats(conn: Connection, times: Mapping[str, datetime]) -> None:
    """Record when each agent last answered (agents removed meanwhile are skipped)."""
    if not times:
        return
    conn.execute(
        update(agents)
        .where(agents.c.id == bindparam("agent_id"))
        .values(last_heartbeat=bindparam("at")),
        [{"agent_id": agent_id, "at": at} for agent_id, at in sorted(times.items())],
    )


def set_faults(conn: Connection, agent_id: str, faults: Mapping[int, str]) -> None:
    """Replace the faulty IPUs of an agent's machine (device id -> why) with ``faults``."""
    encoded = _encode_faults(agent_id, faults)
    done = conn.execute(update(agents).where(agents.c.id == agent_id).values(device_faults=encoded))
    if done.rowcount == 0:
        raise _not_found(agent_id)


def list_faults(conn: Connection) -> dict[str, dict[int, str]]:
    """The agents that last reported faulty IPUs, each with device id -> why."""
    rows = conn.execute(select(agents.c.id, agents.c.device_faults).order_by(agents.c.id))
    found = {row.id: dict(decode_faults(row.device_faults)) for row in rows}
    return {agent_id: faults for agent_id, faults in found.items() if faults}


def get_health(conn: Connection, agent_id: str) -> AgentHealth:
    row = conn.execute(select(*_HEALTH_COLUMNS).where(agents.c.id == agent_id)).first()
    if row is None:
        raise _not_found(agent_id)
    return _health(row)


def list_health(conn: Connection) -> list[AgentHealth]:
    query = select(*_HEALTH_COLUMNS).order_by(agents.c.id)
    return [_health(row) for row in conn.execute(query)]


def _not_found(agent_id: str) -> NotFound:
    return NotFound(f"agent {agent_id} does not exist: list agents to see the registered ones")


def set_ipuof_facts(conn: Connection, agent_id: str, facts: Mapping[str, Any]) -> None:
    """Record the IPUoF details an agent reported (a removed agent's are simply dropped)."""
    conn.execute(update(agents).where(agents.c.id == agent_id).values(ipuof_facts=dict(facts)))


def ipuof_facts(conn: Connection, agent_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
    """The recorded IPUoF details of those agents that have any, by agent id."""
    rows = conn.execute(
        select(agents.c.id, agents.c.ipuof_facts).where(
            agents.c.id.in_(list(agent_ids)), agents.c.ipuof_facts.is_not(None)
        )
    )
    return {row.id: dict(row.ipuof_facts) for row in rows}
