"""The :class:`CloudStore`: the cloud layer's persistent facts, one transaction per call.

It shares the controller's database (and its engine) and follows the same
habits as :class:`~vpod.store.store.Store`: synchronous, thread-safe,
frozen values in and out, constraint violations explained as
``AlreadyExists``/``NotFound``/``Conflict``. Methods are shaped after the
cloud's use-cases, so that what must change together changes in one
transaction: a cluster with its servers, volumes, first task and metering
entries; a task's end with its cluster's new status and the metering entry
that status implies.

Quota checks run inside those transactions: the caller passes ``admit``, a
function of (project, usage) that raises to refuse; the project row is
locked first (``SELECT ... FOR UPDATE`` on PostgreSQL; SQLite's write
transaction holds the database lock from its first statement).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from functools import partial
from typing import Any, Concatenate, ParamSpec, TypeVar

from sqlalchemy import Connection, select

from vpod.domain.cloud.hosts import Host, HostUsage
from vpod.domain.cloud.metering import MeterEntry
from vpod.domain.cloud.resources import Cluster, Server, TaskFacts, Volume
from vpod.domain.cloud.statuses import Phase, TaskState
from vpod.domain.cloud.tenants import Project, Token

from . import cloud_clusters as clusters
from . import cloud_projects as projects
from . import cloud_rows, leases
from . import cloud_tasks as tasks
from . import cloud_volumes as volumes
from .cloud_records import TaskRecord
from .cloud_rows import Claimable, ClaimableRows
from .cloud_schema import cloud_clusters, cloud_projects, cloud_volumes
from .dataset_store import DatasetStore
from .engine import Database
from .errors import AlreadyExists, Conflict, StoreError
from .gpu_hosts import GpuHostStore
from .keypair_store import KeypairStore
from .reservation_store import ReservationStore
from .ssh_port_store import SshPortStore
from .store import Store

Admit = Callable[[Project, dict[str, int]], None]
"""Raises to refuse a request that would overrun the project's quotas."""

VolumeClaims = Mapping[str, tuple[Sequence[str], Mapping[str, Any]]]
"""Volume id -> (statuses it may be in, changes to apply when claimed)."""

R = TypeVar("R", bound=Claimable)
P = ParamSpec("P")


class CloudStore:
    """Projects, tokens, clusters, servers, hosts, volumes, tasks and metering."""

    def __init__(self, database: Database) -> None:
        self._db = database
        self.reservations = ReservationStore(database)
        """Reservation plans (their own module: :mod:`.reservation_store`)."""
        self.datasets = DatasetStore(database)
        """Dataset storage registrations and attachments (:mod:`.dataset_store`)."""
        self.gpu_hosts = GpuHostStore(database)
        """GPU host agents, their GPUs and health (:mod:`.gpu_hosts`)."""
        self.keypairs = KeypairStore(database)
        """SSH keypairs and the clusters they log in to (:mod:`.keypair_store`)."""
        self.ssh_ports = SshPortStore(database)
        """Direct SSH ports: which server holds which host port (:mod:`.ssh_port_store`)."""

    @classmethod
    def of(cls, store: Store) -> CloudStore:
        """The cloud tables of ``store``'s database (same engine, same pool)."""
        return cls(store._db)

    @property
    def dialect(self) -> str:
        """``sqlite`` or ``postgresql``: callers run SQLite calls inline (one writer, no waits)."""
        return self._db.dialect

    def try_acquire_lease(
        self, name: str, holder: str, now: datetime, ttl: timedelta | float
    ) -> bool:
        """Take lease ``name`` for ``holder`` (see :mod:`.leases`); True if it holds it now."""
        return leases.try_acquire(self._db, name, holder, now, ttl)

    def release_lease(self, name: str, holder: str) -> bool:
        return leases.give_up(self._db, name, holder)

    def _explain(self, explain: Callable[[Connection], StoreError]) -> StoreError:
        return self._db.run_read(explain)

    # -- projects and tokens ------------------------------------------------------------------

    def add_project(self, project: Project, token: Token | None = None) -> Project:
        def explain(conn: Connection) -> StoreError:
            deleted = conn.execute(
                select(cloud_projects.c.deleted_at).where(cloud_projects.c.id == project.id)
            ).one_or_none()
            if deleted is not None and deleted[0] is not None:
                return AlreadyExists(
                    f"project id {project.id} belonged to a deleted project: ids are never"
                    " reused (a new project would see its tasks and invoices); pick another id"
                )
            if deleted is not None:
                return AlreadyExists(f"project {project.id} exists already: pick another id")
            return Conflict(f"project {project.id} could not be added: retry")

        with self._db.write(partial(self._explain, explain)) as conn:
            projects.insert_project(conn, project)
            if token is not None:
                projects.insert_token(conn, token)
        return project

    def get_project(self, project_id: str) -> Project:
        return self._db.run_read(projects.get_project, project_id)

    def list_projects(self) -> list[Project]:
        return self._db.run_read(projects.list_projects)

    def set_quotas(self, project_id: str, quotas: Mapping[str, int]) -> Project:
        with self._db.write() as conn:
            projects.set_quotas(conn, project_id, dict(quotas))
            return projects.get_project(conn, project_id)

    def remove_project(self, project_id: str, at: datetime) -> None:
        """Delete a project and its tokens; Conflict while it holds clusters or volumes. The
        row stays, marked deleted, so the id is never given to another project."""
        self._db.run_write(projects.delete_project, project_id, at=at)

    def project_usage(self, project_id: str) -> dict[str, int]:
        with self._db.read(snapshot=True) as conn:
            projects.get_project(conn, project_id)
            return projects.usage(conn, project_id)

    def add_token(self, token: Token) -> Token:
        self._db.run_write(projects.insert_token, token)
        return token

    def find_token(self, token_id: str) -> Token | None:
        return self._db.run_read(projects.find_token, token_id)

    def list_tokens(self, *, project_id: str | None = None, admin: bool = False) -> list[Token]:
        """Admin tokens (``admin``), a project's tokens, or every token."""
        return self._db.run_read(projects.list_tokens, admin=admin, project_id=project_id)

    def remove_token(self, token_id: str) -> None:
        self._db.run_write(projects.delete_token, token_id)

    # -- clusters -----------------------------------------------------------------------------

    def create_cluster(
        self,
        cluster: Cluster,
        servers: Sequence[Server],
        task: TaskFacts,
        *,
        new_volumes: Sequence[Volume] = (),
        attach: VolumeClaims | None = None,
        meter: Iterable[MeterEntry] = (),
        admit: Admit | None = None,
    ) -> Cluster:
        """Record a new cluster with its servers, volumes and task, if the quotas admit it.

        AlreadyExists if the project has a cluster (or a volume) of that name;
        ``attach`` claims existing volumes for the task (Conflict if one is busy
        or not in an allowed status).
        """

        def explain(conn: Connection) -> StoreError:
            named = [(cloud_clusters, "cluster", cluster.project_id, cluster.name)]
            named += [(cloud_volumes, "volume", v.project_id, v.name) for v in new_volumes]
            return cloud_rows.name_taken(conn, named) or Conflict(
                f"cluster {cluster.name} could not be recorded: retry"
            )

        with self._db.write(partial(self._explain, explain)) as conn:
            self._admit(conn, cluster.project_id, admit)
            clusters.insert_cluster(conn, cluster)
            clusters.insert_servers(conn, servers)
            volumes.insert_volumes(conn, new_volumes)
            self._claim_volumes(conn, task.id, attach or {})
            tasks.record_started(conn, task, meter)
        return cluster

    def _admit(self, conn: Connection, project_id: str, admit: Admit | None) -> None:
        project = projects.get_project(conn, project_id, lock=True)
        if admit is not None:
            admit(project, projects.usage(conn, project_id))

    def _update_metered(
        self,
        rows: ClaimableRows[R],
        row_id: str,
        changes: Mapping[str, Any],
        meter: Iterable[MeterEntry],
    ) -> R:
        with self._db.write() as conn:
            rows.update(conn, row_id, changes)
            tasks.append_meter(conn, meter)
            return rows.get(conn, row_id)

    def _write_metered(
        self,
        meter: Iterable[MeterEntry],
        write: Callable[Concatenate[Connection, P], None],
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> None:
        """``write(conn, ...)`` and the metering entries that go with it, in one transaction."""
        with self._db.write() as conn:
            write(conn, *args, **kwargs)
            tasks.append_meter(conn, meter)

    def _claim_volumes(self, conn: Connection, task_id: str, claims: VolumeClaims) -> None:
        for volume_id, (allowed, changes) in claims.items():
            volumes.ROWS.claim(conn, volume_id, task_id, allowed, changes)

    def get_cluster(self, cluster_id: str) -> Cluster:
        return self._db.run_read(clusters.ROWS.get, cluster_id)

    def find_cluster(self, project_id: str, id_or_name: str) -> Cluster | None:
        """The project's cluster with that id, else with that name, else None."""
        return self._db.run_read(clusters.ROWS.find, project_id, id_or_name)

    def list_clusters(self, project_id: str | None = None) -> list[Cluster]:
        return self._db.run_read(clusters.list_clusters, project_id)

    def update_cluster(
        self, cluster_id: str, /, *, meter: Iterable[MeterEntry] = (), **changes: Any
    ) -> Cluster:
        """Change a cluster's columns, and record the metering entries that go with it."""
        return self._update_metered(clusters.ROWS, cluster_id, changes, meter)

    def update_idle_cluster(
        self,
        cluster_id: str,
        from_statuses: Sequence[str],
        /,
        *,
        meter: Iterable[MeterEntry] = (),
        **changes: Any,
    ) -> bool:
        """Change a cluster no task holds, if its status is in ``from_statuses``; True if done.

        For changes made outside tasks (health checks), which must never
        overwrite a status a task set meanwhile.
        """
        with self._db.write() as conn:
            done = clusters.set_status_if_idle(conn, cluster_id, from_statuses, changes)
            if done:
                tasks.append_meter(conn, meter)
            return done

    def start_cluster_task(
        self,
        cluster_id: str,
        task: TaskFacts,
        *,
        allowed: Sequence[str],
        changes: Mapping[str, Any] | None = None,
        new_servers: Sequence[Server] = (),
        new_volumes: Sequence[Volume] = (),
        attach: VolumeClaims | None = None,
        meter: Iterable[MeterEntry] = (),
        admit: Admit | None = None,
    ) -> TaskFacts:
        """Claim the cluster (and volumes) for ``task`` and record it, all or nothing.

        Conflict (not retryable) when the cluster is busy or in a status not
        in ``allowed``; the message says which.
        """
        with self._db.write() as conn:
            current = clusters.ROWS.get(conn, cluster_id)
            self._admit(conn, current.project_id, admit)
            clusters.ROWS.claim(conn, cluster_id, task.id, allowed, dict(changes or {}))
            clusters.insert_servers(conn, new_servers)
            volumes.insert_volumes(conn, new_volumes)
            self._claim_volumes(conn, task.id, attach or {})
            tasks.record_started(conn, task, meter)
        return task

    def delete_cluster(self, cluster_id: str, meter: Iterable[MeterEntry] = ()) -> None:
        """Forget a cluster, its servers and their host slots (metering keeps its history)."""
        self._write_metered(meter, clusters.delete_cluster, cluster_id)

    # -- servers and hosts ----------------------------------------------------------------------

    def list_servers(self, cluster_ids: Iterable[str]) -> list[Server]:
        return self._db.run_read(clusters.list_servers, list(cluster_ids))

    def add_servers(self, servers: Sequence[Server]) -> None:
        self._db.run_write(clusters.insert_servers, servers)

    def update_server(self, server_id: str, /, **changes: Any) -> None:
        self._db.run_write(clusters.update_server, server_id, changes)

    def delete_server(self, server_id: str) -> None:
        """Forget a server and free its host slots."""
        self._db.run_write(clusters.delete_server, server_id)

    def add_host(self, host: Host) -> Host:
        def explain(_conn: Connection) -> StoreError:
            return AlreadyExists(f"host {host.id} is registered already: pick another id")

        with self._db.write(partial(self._explain, explain)) as conn:
            clusters.insert_host(conn, host)
        return host

    def list_host_usage(self) -> list[HostUsage]:
        """Every registered host with the slots its servers hold, from one snapshot."""
        return self._db.run_snapshot(clusters.host_usage)

    def set_host_enabled(self, host_id: str, enabled: bool) -> None:
        self._db.run_write(clusters.set_host_enabled, host_id, enabled)

    def remove_host(self, host_id: str) -> None:
        """Unregister a host; Conflict (not retryable) while a server runs on it."""
        self._db.run_write(clusters.delete_host, host_id)

    def take_slots(self, server_id: str, host_id: str, slots: Sequence[int]) -> None:
        """Give host slots to a server; Conflict (retryable) if one was taken meanwhile."""
        self._db.run_write(clusters.take_slots, server_id, host_id, slots)

    def release_slots(self, server_id: str) -> None:
        self._db.run_write(clusters.release_slots, server_id)

    # -- volumes ------------------------------------------------------------------------------

    def create_volume(
        self,
        volume: Volume,
        task: TaskFacts,
        *,
        meter: Iterable[MeterEntry] = (),
        admit: Admit | None = None,
    ) -> Volume:
        def explain(conn: Connection) -> StoreError:
            named = [(cloud_volumes, "volume", volume.project_id, volume.name)]
            return cloud_rows.name_taken(conn, named) or Conflict(
                f"volume {volume.name} could not be recorded: retry"
            )

        with self._db.write(partial(self._explain, explain)) as conn:
            self._admit(conn, volume.project_id, admit)
            volumes.insert_volumes(conn, [volume])
            tasks.record_started(conn, task, meter)
        return volume

    def get_volume(self, volume_id: str) -> Volume:
        return self._db.run_read(volumes.ROWS.get, volume_id)

    def find_volume(self, project_id: str, id_or_name: str) -> Volume | None:
        return self._db.run_read(volumes.ROWS.find, project_id, id_or_name)

    def list_volumes(
        self, *, project_id: str | None = None, cluster_id: str | None = None
    ) -> list[Volume]:
        return self._db.run_read(volumes.list_volumes, project_id=project_id, cluster_id=cluster_id)

    def update_volume(
        self, volume_id: str, /, *, meter: Iterable[MeterEntry] = (), **changes: Any
    ) -> Volume:
        """Change a volume's columns, and record the metering entries that go with it."""
        return self._update_metered(volumes.ROWS, volume_id, changes, meter)

    def add_volumes(self, new: Sequence[Volume], meter: Iterable[MeterEntry] = ()) -> None:
        """Record volumes a running task makes (boot volumes of servers a resize adds)."""
        self._write_metered(meter, volumes.insert_volumes, new)

    def start_volume_task(
        self,
        volume_id: str,
        task: TaskFacts,
        *,
        allowed: Sequence[str],
        changes: Mapping[str, Any] | None = None,
        cluster: tuple[str, Sequence[str]] | None = None,
        meter: Iterable[MeterEntry] = (),
    ) -> TaskFacts:
        """Claim the volume (and ``cluster``: id, allowed statuses) for ``task``; record it."""
        with self._db.write() as conn:
            volumes.ROWS.claim(conn, volume_id, task.id, allowed, dict(changes or {}))
            if cluster is not None:
                clusters.ROWS.claim(conn, cluster[0], task.id, cluster[1], {})
            tasks.record_started(conn, task, meter)
        return task

    def delete_volume(self, volume_id: str, meter: Iterable[MeterEntry] = ()) -> None:
        self._write_metered(meter, volumes.delete_volume, volume_id)

    # -- tasks --------------------------------------------------------------------------------

    def add_task(self, task: TaskFacts) -> TaskFacts:
        self._db.run_write(tasks.insert_task, task)
        return task

    def get_task(self, task_id: str) -> TaskRecord:
        return self._db.run_read(tasks.get_task, task_id)

    def list_tasks(
        self,
        *,
        project_id: str | None = None,
        resource_id: str | None = None,
        states: Sequence[str] | None = None,
        limit: int = 100,
    ) -> list[TaskRecord]:
        """Tasks matching every filter given, newest first."""
        with self._db.read() as conn:
            return tasks.list_tasks(
                conn, project_id=project_id, resource_id=resource_id, states=states, limit=limit
            )

    def update_task(self, task_id: str, /, **changes: Any) -> TaskRecord:
        with self._db.write() as conn:
            tasks.update_task(conn, task_id, changes)
            return tasks.get_task(conn, task_id)

    def enter_phase(
        self, task_id: str, phase: Phase, at: datetime, *, state: TaskState
    ) -> TaskRecord:
        """Record that the task reached ``phase`` (appended to its phase history)."""
        with self._db.write() as conn:
            current = tasks.get_task(conn, task_id)
            phases = list(current.phases)
            if not phases or phases[-1][0] != phase:
                phases.append((phase, at))
            tasks.update_task(
                conn,
                task_id,
                {"detailed_state": phase, "phases": phases, "state": state, "updated_at": at},
            )
            return dataclasses.replace(
                current, detailed_state=phase, phases=phases, state=state, updated_at=at
            )

    def finish_task(
        self,
        task_id: str,
        *,
        state: TaskState,
        at: datetime,
        detailed_state: Phase | None,
        error: str = "",
        warnings: Sequence[str] = (),
        cluster_changes: Mapping[str, Any] | None = None,
        volume_changes: Mapping[str, Mapping[str, Any]] | None = None,
        meter: Iterable[MeterEntry] = (),
    ) -> TaskRecord:
        """End a task, apply its last changes and free what it claimed, in one transaction."""
        with self._db.write() as conn:
            current = tasks.get_task(conn, task_id)
            phases = list(current.phases)
            if detailed_state is not None and (not phases or phases[-1][0] != detailed_state):
                phases.append((detailed_state, at))
            tasks.update_task(
                conn,
                task_id,
                {
                    "state": state,
                    "detailed_state": detailed_state,
                    "phases": phases,
                    "error": error,
                    "warnings": list(warnings),
                    "updated_at": at,
                    "finished_at": at,
                },
            )
            if current.resource_type == "cluster":
                self._end_cluster(conn, current, cluster_changes)
            volumes.unclaim_all(conn, task_id)
            for volume_id, changes in (volume_changes or {}).items():
                volumes.ROWS.update(conn, volume_id, changes)
            if current.resource_type == "volume" and current.params.get("cluster_id"):
                clusters.ROWS.unclaim(conn, str(current.params["cluster_id"]), task_id)
            tasks.append_meter(conn, meter)
            return tasks.get_task(conn, task_id)

    def _end_cluster(
        self, conn: Connection, task: TaskRecord, changes: Mapping[str, Any] | None
    ) -> None:
        found = conn.scalar(
            select(cloud_clusters.c.id).where(cloud_clusters.c.id == task.resource_id)
        )
        if found is None:
            return  # deleted by the task itself
        clusters.ROWS.unclaim(conn, task.resource_id, task.id)
        if changes:
            clusters.ROWS.update(conn, task.resource_id, changes)

    def unfinished_tasks(self) -> list[TaskRecord]:
        """Tasks NEW or RUNNING, oldest first: what a (re)starting runner must carry on."""
        with self._db.read() as conn:
            found = tasks.list_tasks(conn, states=(TaskState.NEW, TaskState.RUNNING), limit=10_000)
        return sorted(found, key=lambda t: (t.created_at, t.id))

    # -- metering -----------------------------------------------------------------------------

    def append_meter(self, entries: Iterable[MeterEntry]) -> None:
        self._db.run_write(tasks.append_meter, entries)

    def list_meter(
        self,
        *,
        project_id: str | None = None,
        resource_id: str | None = None,
        before: datetime | None = None,
    ) -> list[MeterEntry]:
        """Metering entries in time order, filtered by every criterion given."""
        with self._db.read() as conn:
            return tasks.list_meter(
                conn, project_id=project_id, resource_id=resource_id, before=before
            )
