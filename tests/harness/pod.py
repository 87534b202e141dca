"""An in-process controller: ``build_controller`` over SQLite, a fake clock, scripted agents.

:func:`start_pod` builds what ``vipu-server`` builds, minus the listeners: the
real use-cases on a real (migrated) SQLite store, with a
:class:`~vpod.controller.clock.FakeClock` and a
:class:`~.gateway.ScriptedGateway` in place of gRPC to the agents. Tests call
the service layer directly and drive the leader's background work by hand
(:meth:`Pod.heartbeat_round`, :meth:`Pod.recovery_round`), moving the clock
between rounds, so a fault, an auto-reset or a lease expiry takes
milliseconds, not the seconds of real heartbeats.

Migrating a store takes most of a second, so a session migrates one
:func:`migrated_template` and every pod starts on a copy of it.
:meth:`Pod.replica` builds a second controller on the same database and the
same machines: two replicas racing for the same IPUs.
"""

from __future__ import annotations

import dataclasses
import shutil
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

from vpod.agent.model import Fault
from vpod.controller.app import Controller, build_controller
from vpod.controller.caller import SYSTEM, Caller
from vpod.controller.clock import FakeClock
from vpod.controller.settings import Settings
from vpod.domain.partitions import PartitionRequirements
from vpod.store import Store
from vpod.store.records import AuditEvent, PartitionRecord

from ..faults.consistency import compare, read_store
from ..faults.live import Holding
from .gateway import ScriptedGateway

CLUSTER = "pod"
ALLOCATION = "alloc"


def migrated_template(directory: Path) -> Path:
    """An SQLite database file with the current schema, to copy for each pod."""
    path = directory / "template.db"
    store = Store.open(f"sqlite:///{path}")
    try:
        store.migrate()
    finally:
        store.close()
    # Fold the write-ahead log into the file, so that copying the file copies everything.
    connection = sqlite3.connect(path)
    try:
        connection.execute("PRAGMA journal_mode=DELETE")
    finally:
        connection.close()
    return path


def copy_database(template: Path, target: Path) -> None:
    shutil.copyfile(template, target)


@dataclass
class Pod:
    """One controller (or more: :meth:`replica`) over emulated machines, driven by hand."""

    controller: Controller
    clock: FakeClock
    gateway: ScriptedGateway
    database: Path
    agent_ids: tuple[str, ...]
    replicas: list[Controller] = field(default_factory=list)

    @property
    def database_url(self) -> str:
        return f"sqlite:///{self.database}"

    # ------------------------------------------------------------ requests

    async def create(
        self,
        partition_id: str,
        size: int,
        *,
        allocation: str = ALLOCATION,
        caller: Caller = SYSTEM,
        on: Controller | None = None,
        **options: bool,
    ) -> PartitionRecord:
        """Create a partition through ``PartitionService.create`` (of ``on``, default the
        first controller); ``options``: ``disable_auto_reset``, ``relocatable``."""
        controller = on or self.controller
        return await controller.partitions.create(
            caller,
            PartitionRequirements(id=partition_id, size=size, allocation_id=allocation),
            **options,
        )

    async def record(self, partition_id: str) -> PartitionRecord | None:
        """The partition as the store holds it (None: there is none)."""
        ctx = self.controller.ctx
        return await ctx.db(ctx.db.store.find_partition, partition_id)

    async def audit(self, action: str, target: str) -> list[AuditEvent]:
        ctx = self.controller.ctx
        return await ctx.db(ctx.db.store.list_events, action=action, target=target, limit=1000)

    # ------------------------------------------------- the leader, by hand

    async def heartbeat_round(self, *, seconds: float | None = None) -> None:
        """One round of the leader (heartbeats, then repair), after the clock moves by
        ``seconds`` (default: the heartbeat interval)."""
        controller = self.controller
        settings = controller.settings
        self.clock.advance(settings.heartbeat_interval_s if seconds is None else seconds)
        await controller.leader.monitor.tick()
        clusters = await controller.inventory.list_clusters()
        faulty = {c.id: controller.health.faulty_slots(c) for c in clusters}
        await controller.repair.repair_round(faulty)

    async def steady(self) -> None:
        """Two heartbeat rounds: every agent answers steadily, as in a pod that has been up
        for a while (repair leaves an agent alone until it has)."""
        for _ in range(2):
            await self.heartbeat_round()

    async def recovery_round(self) -> int:
        """The leader's look for abandoned operations; returns how many it finished."""
        return await self.controller.repair.finish_abandoned()

    # ------------------------------------------------------------ hardware

    def ipus_of(self, partition_id: str) -> list[tuple[str, int]]:
        """Where the machines hold the partition, as (agent, device id), in agent order."""
        return [
            (agent_id, device)
            for agent_id, held in self.gateway.holdings().items()
            for device in held.get(partition_id, ())
        ]

    def fault(self, agent_id: str, fault: Fault) -> None:
        """Make the machine fail (it reports it in its next heartbeat)."""
        self.gateway.machines[agent_id].inject_fault(fault)

    def heal(self, agent_id: str, fault: Fault | None = None) -> None:
        """Clear one fault of the machine (all when None)."""
        self.gateway.machines[agent_id].clear_fault(fault)

    # ---------------------------------------------------------- checking

    def disagreements(self) -> list[str]:
        """Every way the store and the machines disagree (see ``tests/faults/consistency``)."""
        held = {
            agent_id: [
                Holding(
                    agent_id,
                    c.config.partition_id,
                    frozenset(c.config.device_ids),
                    c.config.generation,
                )
                for c in machine.configurations()
            ]
            for agent_id, machine in self.gateway.machines.items()
        }
        return compare(read_store(self.database_url), held)

    def replica(self, replica_id: str = "harness-b") -> Controller:
        """Another controller on the same database, machines and clock (closed with the pod)."""
        settings = dataclasses.replace(self.controller.settings, replica_id=replica_id)
        other = build_controller(settings, self.gateway, clock=self.clock)
        self.replicas.append(other)
        return other

    def close(self) -> None:
        for controller in [self.controller, *self.replicas]:
            controller.close()


async def start_pod(
    directory: Path,
    template: Path,
    *,
    machines: int = 4,
    allocations: dict[str, list[str]] | None = None,
    settings: Settings | None = None,
) -> Pod:
    """A controller on a copy of ``template`` with ``machines`` emulated Bow-2000s
    (agents ``ag1``..) in cluster ``pod``; ``allocations`` by id and agent ids (default:
    one allocation ``alloc`` of every machine)."""
    database = directory / "vpod.db"
    copy_database(template, database)
    clock = FakeClock()
    gateway = ScriptedGateway(clock)
    settings = settings or Settings()
    settings = dataclasses.replace(
        settings,
        data_dir=directory,
        database_url=f"sqlite:///{database}",
        replica_id=settings.replica_id or "harness-a",
    )
    store = Store.open(settings.database_url)
    controller = build_controller(settings, gateway, store=store, clock=clock)
    agent_ids = tuple(f"ag{n}" for n in range(1, machines + 1))
    inventory = controller.inventory
    for n, agent_id in enumerate(agent_ids, start=1):
        gateway.add_machine(agent_id, ipuof_address=f"127.0.9.{n}")
        await inventory.create_agent(SYSTEM, agent_id, "127.0.0.1", 9000 + n)
    await inventory.create_cluster(SYSTEM, CLUSTER, list(agent_ids))
    for allocation_id, members in (allocations or {ALLOCATION: list(agent_ids)}).items():
        await inventory.create_allocation(SYSTEM, allocation_id, CLUSTER, agent_ids=members)
    return Pod(controller, clock, gateway, database, agent_ids)
