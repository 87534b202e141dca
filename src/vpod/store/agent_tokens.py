"""Agent registration tokens and the agent ids bound to them.

An administrator issues tokens (``vipu-admin create agent-token``); the
store keeps the public id, a slow salted hash of the secret (hashing is the
caller's job, as for users), a label and when. The first registration of an
agent id with a token binds the id to that token (``agent_bindings``, one
row per agent id); a registration with another token cannot change it.
Removing a token removes its bindings (the agents may bind to a new token);
removing an agent removes its binding.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Column, Connection, delete, func, insert, select

from .errors import NotFound
from .schema import agent_bindings, agent_tokens, agents
from .table_group import TableGroup


@dataclass(frozen=True)
class AgentTokenRecord:
    id: str
    label: str
    created_at: datetime
    agent_ids: tuple[str, ...] = ()
    """The agents bound to it, by id."""


class AgentTokenStore(TableGroup):
    """The agent-token tables of one database (same engine as the :class:`Store`)."""

    def add(self, token_id: str, key_hash: str, label: str, created_at: datetime) -> None:
        with self._db.write() as conn:
            conn.execute(
                insert(agent_tokens).values(
                    id=token_id, key_hash=key_hash, label=label, created_at=created_at
                )
            )

    def key_hash(self, token_id: str) -> str | None:
        """The hash of a token's secret, or ``None`` when there is no such token."""
        return self._db.run_read(_text_at, agent_tokens.c.key_hash, agent_tokens.c.id, token_id)

    def list(self) -> list[AgentTokenRecord]:
        with self._db.read(snapshot=True) as conn:
            bound: dict[str, list[str]] = {}
            for agent_id, token_id in conn.execute(
                select(agent_bindings.c.agent_id, agent_bindings.c.token_id).order_by(
                    agent_bindings.c.agent_id
                )
            ):
                bound.setdefault(token_id, []).append(agent_id)
            rows = conn.execute(select(agent_tokens).order_by(agent_tokens.c.id)).all()
        return [
            AgentTokenRecord(
                id=row.id,
                label=row.label,
                created_at=row.created_at,
                agent_ids=tuple(bound.get(row.id, [])),
            )
            for row in rows
        ]

    def remove(self, token_id: str) -> None:
        with self._db.write() as conn:
            conn.execute(delete(agent_bindings).where(agent_bindings.c.token_id == token_id))
            done = conn.execute(delete(agent_tokens).where(agent_tokens.c.id == token_id))
            if done.rowcount == 0:
                raise NotFound(f"agent token {token_id} does not exist")

    def bind(self, agent_id: str, token_id: str, at: datetime) -> str | None:
        """Bind ``agent_id`` to ``token_id`` unless it is bound already; returns the token it
        is bound to afterwards (``None``: the agent does not exist)."""
        with self._db.write() as conn:
            exists = conn.execute(
                select(func.count()).select_from(agents).where(agents.c.id == agent_id)
            ).scalar_one()
            if not exists:
                return None
            current = conn.execute(
                select(agent_bindings.c.token_id).where(agent_bindings.c.agent_id == agent_id)
            ).scalar_one_or_none()
            if current is not None:
                return str(current)
            conn.execute(
                insert(agent_bindings).values(agent_id=agent_id, token_id=token_id, bound_at=at)
            )
            return token_id

    def bound_token(self, agent_id: str) -> str | None:
        """The token an agent id is bound to, or ``None``."""
        return self._db.run_read(
            _text_at, agent_bindings.c.token_id, agent_bindings.c.agent_id, agent_id
        )


def _text_at(conn: Connection, column: Column[Any], key: Column[Any], value: str) -> str | None:
    """``column`` of the row whose ``key`` is ``value``, or ``None`` without one."""
    found = conn.execute(select(column).where(key == value)).scalar_one_or_none()
    return None if found is None else str(found)


__all__ = ["AgentTokenRecord", "AgentTokenStore"]
