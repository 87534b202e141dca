"""Direct SSH ports in the store: which server holds which host port (table in
:mod:`.ssh_port_schema`). One transaction per call.

:meth:`SshPortStore.assign` gives servers the lowest free ports of a range in
one transaction; two controllers assigning at once cannot hand out one port
twice (the primary key refuses the loser, which is told to retry).
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime

from sqlalchemy import Connection, delete, insert, select

from .cloud_schema import cloud_servers
from .errors import Conflict
from .ssh_port_schema import cloud_ssh_ports
from .table_group import TableGroup


class SshPortStore(TableGroup):
    def assign(
        self, server_ids: Collection[str], first: int, last: int, at: datetime
    ) -> dict[str, int]:
        """Give each server in ``server_ids`` (that still exists) a port of ``first..last``,
        keeping the one it holds there; a port it holds outside the range is given back.

        Answers server id -> port for those that hold one; a server the range had no
        port left for is missing from the answer (nothing else changes for it).
        """

        def lost() -> Conflict:
            return Conflict("another controller took the same SSH port meanwhile: retry")

        t = cloud_ssh_ports
        wanted = list(dict.fromkeys(server_ids))
        with self._db.write(explain=lost) as conn:
            existing = set(
                conn.execute(
                    select(cloud_servers.c.id).where(cloud_servers.c.id.in_(wanted))
                ).scalars()
            )
            held = self._held(conn)
            by_server = {server: port for port, server in held.items()}
            stale = [s for s in wanted if s in by_server and not first <= by_server[s] <= last]
            if stale:
                conn.execute(delete(t).where(t.c.server_id.in_(stale)))
                for server in stale:
                    held.pop(by_server.pop(server))
            answer = {s: by_server[s] for s in wanted if s in by_server}
            free = (p for p in range(first, last + 1) if p not in held)
            rows = []
            for server in wanted:
                if server in answer or server not in existing:
                    continue
                port = next(free, None)
                if port is None:
                    break
                answer[server] = port
                rows.append({"port": port, "server_id": server, "assigned_at": at})
            if rows:
                conn.execute(insert(t), rows)
        return answer

    def free_count(self, first: int, last: int) -> int:
        """How many ports of ``first..last`` no server holds."""
        t = cloud_ssh_ports
        with self._db.read() as conn:
            taken = conn.execute(select(t.c.port).where(t.c.port >= first, t.c.port <= last)).all()
        return last - first + 1 - len(taken)

    def of_servers(self, server_ids: Collection[str]) -> dict[str, int]:
        """Server id -> the port it holds, for those of ``server_ids`` that hold one."""
        if not server_ids:
            return {}
        t = cloud_ssh_ports
        with self._db.read() as conn:
            rows = conn.execute(
                select(t.c.server_id, t.c.port).where(t.c.server_id.in_(list(server_ids)))
            )
            return {str(r.server_id): int(r.port) for r in rows}

    def holder(self, port: int) -> tuple[str, str] | None:
        """(server id, its cluster's id) of the server holding ``port``, if any."""
        t, s = cloud_ssh_ports, cloud_servers
        query = (
            select(s.c.id, s.c.cluster_id)
            .select_from(t.join(s, s.c.id == t.c.server_id))
            .where(t.c.port == port)
        )
        with self._db.read() as conn:
            row = conn.execute(query).first()
        return None if row is None else (str(row.id), str(row.cluster_id))

    def held(self) -> dict[int, str]:
        """Every held port -> its server's id."""
        with self._db.read() as conn:
            return self._held(conn)

    def servers_needing(self, first: int, last: int) -> list[str]:
        """Ids of the servers holding no port of ``first..last`` (made before the option was
        turned on, or holding one of a range the operator has since changed), oldest first."""
        t = cloud_ssh_ports
        in_range = select(t.c.server_id).where(t.c.port >= first, t.c.port <= last)
        query = (
            select(cloud_servers.c.id)
            .where(cloud_servers.c.id.not_in(in_range))
            .order_by(cloud_servers.c.created_at, cloud_servers.c.id)
        )
        with self._db.read() as conn:
            return [str(s) for s in conn.execute(query).scalars()]

    def _held(self, conn: Connection) -> dict[int, str]:
        t = cloud_ssh_ports
        return {int(r.port): str(r.server_id) for r in conn.execute(select(t))}
