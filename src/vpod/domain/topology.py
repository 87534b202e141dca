"""Pod topology: machines, IPU-Link domains, GW-Links and the identity of every IPU.

A pod is a row of IPU-Machines numbered 0..M-1. Consecutive machines are
cabled into IPU-Link domains (ILDs) of at most 16 machines, each a ladder of
two rails in which every machine adds two rungs. Domains are joined by
GW-Links, looped (a ring, up to 256 IPUs) or switched.

Every IPU has one integer *slot*: ``4 * machine + k`` where ``k`` is the IPU's
rank in ladder order inside its machine. Slots of one domain are contiguous,
so a domain position is ``slot - domain.first_slot`` and placement can work on
flat ranges. The hardware (IPUoF device) id of the IPU on its machine runs
3, 2, 1, 0 in ladder order (vipu-system.md §1): ``device_id = 3 - k``.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass, field

from .catalog import IPUS_PER_MACHINE, MachineType
from .errors import InvalidSpec
from .excerpts import excerpt

MAX_MACHINES_PER_DOMAIN = 16
MAX_MACHINES = 1024
MAX_POD_IPUS = MAX_MACHINES * IPUS_PER_MACHINE
"""The IPUs of the largest pod (a pod4096), so of the largest partition."""
LOOPED_MAX_IPUS = 256


class IldTopology(enum.StrEnum):
    """How the ladder of one IPU-Link domain is closed."""

    TORUS = "torus"
    MESH = "mesh"


class GwTopology(enum.StrEnum):
    """How IPU-Link domains are joined by GW-Links."""

    LOOPED = "looped"
    SWITCHED = "switched"


def machine_and_device(slot: int) -> tuple[int, int]:
    """The machine of the IPU at ``slot`` and its device id there (the same in every pod)."""
    machine, rank = divmod(slot, IPUS_PER_MACHINE)
    return machine, IPUS_PER_MACHINE - 1 - rank


@dataclass(frozen=True, slots=True)
class IpuRef:
    """The stable identity of one IPU in a pod."""

    slot: int
    machine: int
    device_id: int
    domain: int
    position: int


@dataclass(frozen=True, slots=True)
class Domain:
    """One IPU-Link domain: a run of consecutive machines."""

    index: int
    first_machine: int
    num_machines: int
    topology: IldTopology

    @property
    def ipus(self) -> int:
        return self.num_machines * IPUS_PER_MACHINE

    @property
    def first_slot(self) -> int:
        return self.first_machine * IPUS_PER_MACHINE

    @property
    def end_slot(self) -> int:
        return self.first_slot + self.ipus

    @property
    def machines(self) -> range:
        return range(self.first_machine, self.first_machine + self.num_machines)

    @property
    def slots(self) -> range:
        return range(self.first_slot, self.end_slot)


@dataclass(frozen=True)
class Pod:
    """A pod's fabric: its machines grouped into domains, and how domains are joined."""

    machine_type: MachineType
    domains: tuple[Domain, ...]
    gw_topology: GwTopology = GwTopology.LOOPED
    name: str = "pod"
    _machine_domain: tuple[int, ...] = field(init=False, repr=False, compare=False)
    # Counted once: placement and the partition path read them for every IPU they touch.
    num_machines: int = field(init=False, repr=False, compare=False)
    num_ipus: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        owner: list[int] = []
        expected = 0
        for i, dom in enumerate(self.domains):
            if dom.index != i or dom.first_machine != expected:
                raise InvalidSpec("domains must be numbered 0.. and cover consecutive machines")
            owner.extend([i] * dom.num_machines)
            expected += dom.num_machines
        object.__setattr__(self, "_machine_domain", tuple(owner))
        object.__setattr__(self, "num_machines", len(owner))
        object.__setattr__(self, "num_ipus", len(owner) * IPUS_PER_MACHINE)

    def domain_of_machine(self, machine: int) -> Domain:
        return self.domains[self._machine_domain[machine]]

    def domain_of_slot(self, slot: int) -> Domain:
        return self.domain_of_machine(slot // IPUS_PER_MACHINE)

    def ipu(self, slot: int) -> IpuRef:
        if not 0 <= slot < self.num_ipus:
            raise InvalidSpec(f"IPU slot {slot} is outside the pod (0..{self.num_ipus - 1})")
        machine, device_id = machine_and_device(slot)
        dom = self.domain_of_machine(machine)
        return IpuRef(
            slot=slot,
            machine=machine,
            device_id=device_id,
            domain=dom.index,
            position=slot - dom.first_slot,
        )

    def slot_of(self, domain: int, position: int) -> int:
        """The slot of the IPU at ``position`` in ladder order of ``domain``."""
        if not 0 <= domain < len(self.domains):
            raise InvalidSpec(f"IPU-Link domain {domain} does not exist in pod {self.name}")
        dom = self.domains[domain]
        if not 0 <= position < dom.ipus:
            raise InvalidSpec(
                f"IPU position {position} is outside IPU-Link domain {domain} (0..{dom.ipus - 1})"
            )
        return dom.first_slot + position

    def slot_of_device(self, machine: int, device_id: int) -> int:
        if not 0 <= device_id < IPUS_PER_MACHINE:
            raise InvalidSpec(f"IPU device id {device_id} does not exist: use 0..3")
        return machine * IPUS_PER_MACHINE + (IPUS_PER_MACHINE - 1 - device_id)

    def machine_slots(self, machine: int) -> range:
        first = machine * IPUS_PER_MACHINE
        return range(first, first + IPUS_PER_MACHINE)


def build_pod(
    num_machines: int,
    *,
    num_domains: int = 1,
    machine_type: MachineType = MachineType.BOW2000,
    topology: IldTopology = IldTopology.TORUS,
    gw_topology: GwTopology | None = None,
    name: str = "pod",
    strict: bool = True,
) -> Pod:
    """Cable ``num_machines`` machines into ``num_domains`` equal IPU-Link domains.

    ``strict`` applies the limits of real pods (1,024 machines, looped GW-Links
    up to 256 IPUs); benchmarks build larger synthetic pods with ``strict=False``.
    The GW topology defaults to looped where a ring is allowed, else switched.
    """
    if num_machines < 1:
        raise InvalidSpec("a pod needs at least one machine")
    if num_domains < 1 or num_machines % num_domains:
        raise InvalidSpec(
            f"{num_machines} machines cannot be split into {num_domains} equal IPU-Link domains:"
            " use a number of domains that divides the number of machines"
        )
    per_domain = num_machines // num_domains
    if per_domain > MAX_MACHINES_PER_DOMAIN:
        raise InvalidSpec(
            f"an IPU-Link domain holds at most {MAX_MACHINES_PER_DOMAIN} machines, not"
            f" {per_domain}: use at least {-(-num_machines // MAX_MACHINES_PER_DOMAIN)} domains"
        )
    ipus = num_machines * IPUS_PER_MACHINE
    if strict and num_machines > MAX_MACHINES:
        raise InvalidSpec(f"a pod connects at most {MAX_MACHINES} machines, not {num_machines}")
    if gw_topology is None:
        gw_topology = GwTopology.LOOPED if ipus <= LOOPED_MAX_IPUS else GwTopology.SWITCHED
    if strict and gw_topology is GwTopology.LOOPED and ipus > LOOPED_MAX_IPUS:
        raise InvalidSpec(
            f"looped GW-Links join at most {LOOPED_MAX_IPUS} IPUs, not {ipus}: use switched"
        )
    domains = tuple(
        Domain(index=i, first_machine=i * per_domain, num_machines=per_domain, topology=topology)
        for i in range(num_domains)
    )
    return Pod(machine_type=machine_type, domains=domains, gw_topology=gw_topology, name=name)


_SHAPE = re.compile(r"^(?:(?P<kind>bow|m2000)-)?pod(?P<ipus>16|64|128|256|1024|4096)$")
SHAPES: tuple[str, ...] = ("pod16", "pod64", "pod128", "pod256", "pod1024", "pod4096")


def shape(name: str) -> Pod:
    """A ready-made pod: ``pod16``, ``pod64``, ``pod128``, ``pod256``, ``pod1024`` or ``pod4096``.

    A ``bow-`` (default) or ``m2000-`` prefix picks the machine type. A POD16
    is one domain of 4 machines; larger shapes are domains of 16 machines
    (one POD64 rack each): a POD4096 is the largest fabric GW-Links join,
    1,024 machines in 64 domains, switched.
    """
    match = _SHAPE.match(name.strip().lower())
    if match is None:
        raise InvalidSpec(
            f"unknown pod shape {excerpt(name, quote=True)}: use pod16, pod64, pod128, pod256,"
            " pod1024 or pod4096,"
            " optionally prefixed with bow- or m2000-"
        )
    kind = MachineType.M2000 if match["kind"] == "m2000" else MachineType.BOW2000
    ipus = int(match["ipus"])
    machines = ipus // IPUS_PER_MACHINE
    domains = max(1, machines // MAX_MACHINES_PER_DOMAIN)
    return build_pod(machines, num_domains=domains, machine_type=kind, name=name.strip().lower())
