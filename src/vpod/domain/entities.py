"""The entities an administrator defines: agents, clusters, allocations and users.

Each is a frozen value checked on construction, so an instance that exists
obeys the rules of vipu-system.md §3. Partitions live in ``partitions.py``
(their spec) and ``partition_states.py`` (their life cycle).

Machines are numbered by cabling order: agent ``i`` of a cluster drives
machine ``i`` of the cluster's :class:`~vpod.domain.topology.Pod`, and every
run of consecutive machines up to 16 long forms one IPU-Link domain.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from .catalog import IPUS_PER_MACHINE, MachineType
from .errors import InvalidSpec
from .excerpts import excerpt
from .host_networks import normalise_hosts
from .naming import check_id, check_unique_ids
from .sizes import check_allocation_size
from .topology import LOOPED_MAX_IPUS, GwTopology, IldTopology, Pod, build_pod

HOST_MAX_LENGTH = 253
MAX_PORT = 65535
MAX_FAULT_DELAY_MS = 600_000
"""Longest answer delay an injected ``agent-slow`` fault may set: ten minutes (the agent
protocol's bound, checked by the agent, the REST shape and ``vipu-admin inject fault``)."""
_WHITESPACE = re.compile(r"\s")


def split_host_port(address: str) -> tuple[str, int]:
    """Parse ``host:port`` or ``[v6]:port``; raises ValueError with a sentence."""
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) <= MAX_PORT:
        raise ValueError(f"{address!r} is not HOST:PORT (e.g. 127.0.0.1:8090)")
    return host.removeprefix("[").removesuffix("]"), int(port)


@dataclass(frozen=True, slots=True)
class Agent:
    """The V-IPU agent of one IPU-Machine, reached at ``host:port``."""

    id: str
    host: str
    port: int
    machine_type: MachineType = MachineType.BOW2000
    serial: str = ""
    """The machine's serial number; empty until the agent reports it."""
    key: str = field(default="", repr=False, compare=False)
    """The secret the agent answers to (it registered with it, or an administrator gave it);
    the controller presents it on every call. Never shown in listings."""

    def __post_init__(self) -> None:
        check_id("agent", self.id)
        if not self.host or len(self.host) > HOST_MAX_LENGTH or _WHITESPACE.search(self.host):
            raise InvalidSpec(
                f"agent {self.id} has host {excerpt(self.host, quote=True)}: give a host name or IP"
                f" address"
                f" of at most {HOST_MAX_LENGTH} characters without spaces"
            )
        if not 1 <= self.port <= 65535:
            raise InvalidSpec(f"agent {self.id} has port {self.port}: use a port in 1..65535")

    @property
    def address(self) -> str:
        """``host:port``, bracketing IPv6 hosts."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"


def default_gw_topology(num_machines: int) -> GwTopology:
    """Looped GW-Links where a ring is allowed (up to 256 IPUs), switched beyond."""
    if num_machines * IPUS_PER_MACHINE <= LOOPED_MAX_IPUS:
        return GwTopology.LOOPED
    return GwTopology.SWITCHED


@dataclass(frozen=True)
class Cluster:
    """Agents cabled together, in cabling order, and how their fabric is closed.

    ``num_domains`` equal IPU-Link domains of at most 16 machines each; an
    ILD never spans racks. Construction fails if the agents cannot be cabled
    so, and builds the cluster's :class:`Pod` once (see :meth:`pod`).
    """

    id: str
    agent_ids: tuple[str, ...]
    num_domains: int = 1
    ild_topology: IldTopology = IldTopology.TORUS
    gw_topology: GwTopology = GwTopology.LOOPED
    machine_type: MachineType = MachineType.BOW2000
    _pod: Pod = field(init=False, repr=False, compare=False)
    _machine_of: dict[str, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        check_id("cluster", self.id)
        object.__setattr__(self, "agent_ids", tuple(self.agent_ids))
        if not self.agent_ids:
            raise InvalidSpec(f"cluster {self.id} has no agents: list at least one agent")
        check_unique_ids("agent", self.agent_ids)
        try:
            pod = build_pod(
                len(self.agent_ids),
                num_domains=self.num_domains,
                machine_type=self.machine_type,
                topology=self.ild_topology,
                gw_topology=self.gw_topology,
                name=self.id,
            )
        except InvalidSpec as exc:
            raise InvalidSpec(f"cluster {self.id} ({len(self.agent_ids)} agents): {exc}") from exc
        object.__setattr__(self, "_pod", pod)
        object.__setattr__(self, "_machine_of", {a: i for i, a in enumerate(self.agent_ids)})

    def pod(self) -> Pod:
        """The cluster's fabric; machine ``i`` is driven by ``agent_ids[i]``."""
        return self._pod

    @property
    def num_ipus(self) -> int:
        return len(self.agent_ids) * IPUS_PER_MACHINE

    def machine_of(self, agent_id: str) -> int:
        """The machine index of an agent of this cluster."""
        try:
            return self._machine_of[agent_id]
        except KeyError:
            raise InvalidSpec(
                f"agent {agent_id} is not in cluster {self.id}: its agents are"
                f" {', '.join(self.agent_ids)}"
            ) from None

    def agent_of(self, machine: int) -> str:
        """The agent driving machine ``machine`` of this cluster."""
        if not 0 <= machine < len(self.agent_ids):
            raise InvalidSpec(
                f"cluster {self.id} has no machine {machine}: use 0..{len(self.agent_ids) - 1}"
            )
        return self.agent_ids[machine]

    def domain_agents(self, domain: int) -> tuple[str, ...]:
        """The agents of one IPU-Link domain, in ladder order."""
        if not 0 <= domain < len(self._pod.domains):
            raise InvalidSpec(
                f"cluster {self.id} has no IPU-Link domain {domain}:"
                f" use 0..{len(self._pod.domains) - 1}"
            )
        machines = self._pod.domains[domain].machines
        return self.agent_ids[machines.start : machines.stop]

    def check_agents(self, agents: Mapping[str, Agent]) -> None:
        """Check every agent of the cluster is registered and drives this machine type."""
        for agent_id in self.agent_ids:
            agent = agents.get(agent_id)
            if agent is None:
                raise InvalidSpec(
                    f"cluster {self.id} lists agent {agent_id}, which is not registered:"
                    " create the agent first"
                )
            if agent.machine_type is not self.machine_type:
                raise InvalidSpec(
                    f"agent {agent_id} drives an {agent.machine_type.value} but cluster"
                    f" {self.id} is made of {self.machine_type.value} machines: use agents"
                    " of one machine type"
                )


@dataclass(frozen=True, slots=True)
class Allocation:
    """Whole machines of one cluster granted to users; partitions never span allocations.

    ``machines`` are machine indexes of the cluster, kept sorted.
    """

    id: str
    cluster_id: str
    machines: tuple[int, ...]
    hosts: tuple[str, ...] = ()
    """Who may attach to its IPUs over IPUoF, as CIDRs (normalised); empty: the operator's
    trusted host network."""

    def __post_init__(self) -> None:
        check_id("allocation", self.id)
        check_id("cluster", self.cluster_id)
        object.__setattr__(self, "hosts", normalise_hosts(self.hosts))
        machines = tuple(sorted(self.machines))
        if any(m < 0 for m in machines):
            raise InvalidSpec(f"allocation {self.id} names a negative machine index")
        if len(set(machines)) != len(machines):
            raise InvalidSpec(f"allocation {self.id} lists a machine twice: list each once")
        object.__setattr__(self, "machines", machines)
        try:
            check_allocation_size(self.size)
        except InvalidSpec as exc:
            raise InvalidSpec(f"allocation {self.id} has {len(machines)} machines: {exc}") from exc

    @property
    def size(self) -> int:
        """IPUs in the allocation."""
        return IPUS_PER_MACHINE * len(self.machines)

    def holds_machine(self, machine: int) -> bool:
        return machine in self.machines

    def slots(self) -> Iterable[int]:
        """The pod slots of every IPU of the allocation, ascending."""
        for machine in self.machines:
            yield from range(machine * IPUS_PER_MACHINE, (machine + 1) * IPUS_PER_MACHINE)

    def agent_ids(self, cluster: Cluster) -> tuple[str, ...]:
        """The agents of the allocation's machines (the wire's ``AllocationSpec.agent_ids``)."""
        return tuple(cluster.agent_of(m) for m in self.machines)

    def check_shape(self, pod: Pod) -> None:
        """Check the machines form a block placement could have chosen (vipu-system.md §3).

        Decision: up to one domain, an allocation is a run of neighbouring
        machines aligned to its length inside one domain; larger allocations
        are whole domains.
        """
        if self.machines[-1] >= pod.num_machines:
            raise InvalidSpec(
                f"allocation {self.id} names machine {self.machines[-1]}, but cluster"
                f" {pod.name} has machines 0..{pod.num_machines - 1}"
            )
        count = len(self.machines)
        first = pod.domain_of_machine(self.machines[0])
        if count <= first.num_machines:
            offset = self.machines[0] - first.first_machine
            run = tuple(range(self.machines[0], self.machines[0] + count))
            if self.machines != run or offset % count or run[-1] >= first.machines.stop:
                raise InvalidSpec(
                    f"allocation {self.id} must be {count} neighbouring machines of one IPU-Link"
                    f" domain starting at a multiple of {count} in that domain, not machines"
                    f" {', '.join(map(str, self.machines))}"
                )
            return
        held = set(self.machines)
        for machine in self.machines:
            domain = pod.domain_of_machine(machine)
            if not held.issuperset(domain.machines):
                raise InvalidSpec(
                    f"allocation {self.id} is larger than an IPU-Link domain, so it must hold"
                    f" whole domains, but it holds only part of domain {domain.index}"
                    f" (machines {domain.machines.start}..{domain.machines.stop - 1})"
                )


@dataclass(frozen=True, slots=True)
class User:
    """The holder of an access key, and the allocations granted to it.

    Decision: an admin may use every allocation; a plain user only those
    granted to it, and users of one allocation share its partitions.
    """

    id: str
    allocation_ids: tuple[str, ...] = ()
    admin: bool = False

    def __post_init__(self) -> None:
        check_id("user", self.id)
        object.__setattr__(
            self, "allocation_ids", check_unique_ids("allocation", self.allocation_ids)
        )

    def can_use(self, allocation_id: str) -> bool:
        """Whether the user may see and use partitions of ``allocation_id``."""
        return self.admin or allocation_id in self.allocation_ids
