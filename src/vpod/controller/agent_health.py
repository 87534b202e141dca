"""What this controller last heard from each agent, kept in memory.

Heartbeats and registrations both feed it, so neither acts on a stale
belief; placement reads the faulty IPUs from it (through the occupancy
loader), repair asks whether an agent answers steadily, and the admin API
shows the last faults and boot id. The store keeps what must outlive the
process (reachability, stored faults); this is the fast, per-process view.
Every change goes through a method: nothing else writes its maps.
"""

from __future__ import annotations

from vpod.agent.model import Fault, MachineHealth
from vpod.domain.entities import Cluster
from vpod.store.records import AgentHealthState


class AgentHealthBook:
    def __init__(self) -> None:
        self._last_health: dict[str, MachineHealth] = {}
        self._health_at: dict[str, float] = {}
        self._boot_ids: dict[str, str] = {}
        self._ipuof_addresses: dict[str, str] = {}
        self._reachability: dict[str, AgentHealthState] = {}
        self._last_answer: dict[str, float] = {}
        """Monotonic time of each agent's last answer (a registration counts)."""
        self._streak: dict[str, int] = {}
        """Heartbeats answered in a row since the last silence or registration."""

    # -- what happened

    def registered(self, agent_id: str, boot_id: str, ipuof_address: str, now: float) -> bool:
        """An agent (re-)registered; True when its boot id differs from the last one."""
        previous = self._boot_ids.get(agent_id)
        self._boot_ids[agent_id] = boot_id
        if ipuof_address:
            self._ipuof_addresses[agent_id] = ipuof_address
        self._streak[agent_id] = 0
        self._last_answer[agent_id] = now
        return previous != boot_id

    def expecting(self, agent_id: str, now: float) -> None:
        """A heartbeat is about to be asked: silence counts from now if it never answered."""
        self._last_answer.setdefault(agent_id, now)

    def answered(self, agent_id: str, now: float) -> None:
        self._last_answer[agent_id] = now
        self._streak[agent_id] = self._streak.get(agent_id, 0) + 1

    def missed(self, agent_id: str, now: float) -> float:
        """A heartbeat went unanswered; returns how long the agent has been silent."""
        self._streak[agent_id] = 0
        return now - self._last_answer.setdefault(agent_id, now)

    def note_health(self, agent_id: str, health: MachineHealth, at: float = 0.0) -> bool:
        """Remember an agent's last heartbeat (answered at ``at``, epoch seconds); True when
        its IPU or link faults changed."""
        self._health_at[agent_id] = at
        if self._last_health.get(agent_id) is health:
            # The heartbeat decoder hands back the same object for an unchanged answer (most
            # of a pod1024's 1,024 a second): nothing to compare.
            return False
        before = self._fault_summary(agent_id)
        self._last_health[agent_id] = health
        return self._fault_summary(agent_id) != before

    def holders_of(self, partition_id: str) -> list[str]:
        """IPUs of the partition an application still holds, as ``agent/device``, by the
        agents' last heartbeats."""
        return [
            f"{agent_id}/{ipu.device_id}"
            for agent_id, health in sorted(self._last_health.items())
            for ipu in health.ipus
            if ipu.partition_id == partition_id and ipu.attached
        ]

    def last_health(self, agent_id: str) -> tuple[MachineHealth, float] | None:
        """The agent's last heartbeat and when it was answered (telemetry reads it)."""
        health = self._last_health.get(agent_id)
        return None if health is None else (health, self._health_at.get(agent_id, 0.0))

    def believe(self, agent_id: str, state: AgentHealthState) -> AgentHealthState | None:
        """Record the reachability just written to the store; returns the previous belief."""
        previous = self._reachability.get(agent_id)
        self._reachability[agent_id] = state
        return previous

    # -- what is known

    def believed(self, agent_id: str) -> AgentHealthState | None:
        """The reachability this controller last recorded in the store, if any."""
        return self._reachability.get(agent_id)

    def steadily_answering(self, agent_id: str) -> bool:
        """Answered at least two heartbeats in a row: a registration alone does not count,
        so an agent in a crash loop does not use up its partitions' auto-reset attempts."""
        return self._streak.get(agent_id, 0) >= 2

    def faults(self, agent_id: str) -> tuple[Fault, ...]:
        """Active injected faults, as the last heartbeat saw them."""
        last = self._last_health.get(agent_id)
        return last.faults if last is not None else ()

    def boot_id(self, agent_id: str) -> str:
        last = self._last_health.get(agent_id)
        return last.boot_id if last is not None else self._boot_ids.get(agent_id, "")

    def ipuof_address(self, agent_id: str) -> str:
        return self._ipuof_addresses.get(agent_id, "")

    def device_faults(self, agent_id: str) -> dict[int, str]:
        """IPUs of the agent's machine that are faulty or have an IPU-Link down, with why."""
        health = self._last_health.get(agent_id)
        if health is None:
            return {}
        faults: dict[int, str] = {}
        for ipu in health.ipus:
            if not ipu.healthy:
                faults[ipu.device_id] = (
                    f"IPU {ipu.device_id} of agent {agent_id} failed: {ipu.fault or 'unhealthy'}"
                )
        for link in health.links:
            if not link.up and link.device_id is not None:
                faults.setdefault(
                    link.device_id,
                    f"{link.link_id} of IPU {link.device_id} on agent {agent_id} is down:"
                    f" {link.fault or 'link down'}",
                )
        return faults

    def machine_link_faults(self, agent_id: str) -> list[str]:
        """GW-Links and Sync-Links of the machine that are down, as sentences."""
        health = self._last_health.get(agent_id)
        if health is None:
            return []
        return [
            f"{link.link_id} of agent {agent_id} is down: {link.fault or 'link down'}"
            for link in health.links
            if not link.up and link.device_id is None
        ]

    def faulty_slots(self, cluster: Cluster) -> frozenset[int]:
        """Slots of the cluster's IPUs that heartbeats report faulty: placement avoids them."""
        pod = cluster.pod()
        slots: set[int] = set()
        for machine, agent_id in enumerate(cluster.agent_ids):
            for device in self.device_faults(agent_id):
                slots.add(pod.slot_of_device(machine, device))
        return frozenset(slots)

    def _fault_summary(self, agent_id: str) -> tuple[dict[int, str], list[str]]:
        return self.device_faults(agent_id), self.machine_link_faults(agent_id)
