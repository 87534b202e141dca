"""An IPU-Machine in memory: the state a real machine keeps, without the silicon.

:class:`EmulatedMachine` is an IPU-M2000 or Bow-2000 of four IPUs, synchronous
and in memory; :class:`~vpod.agent.emulated_backend.EmulatedBackend` puts it
behind the agent's async hardware seam (:mod:`vpod.agent.backend`). It keeps which IPUs belong to
which partition and configuration generation, which application is attached
to each IPU, the state of every link and the injected faults, and it records
events. It does no I/O and takes its clock as an argument, so it is tested
without gRPC or sockets.

Link training (decision; see :mod:`vpod.agent.links` for the link names):
a partition of more than one IPU needs every IPU-Link port of its IPUs up; a
multi-segment partition also needs both GW-Links up.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

import vpod
from vpod.domain.catalog import IPUS_PER_MACHINE, MachineType, machine_spec
from vpod.domain.errors import InvalidSpec
from vpod.domain.excerpts import excerpt
from vpod.domain.naming import check_id

from .errors import InvalidRequest, MachineConflict, Reason, UnknownPartition
from .events import EventListener, EventLog
from .identity import derive_identity
from .links import DEVICE_IDS, GW_LINKS, LINKS, MachineFaults, ipu_links_of, run_link_tests
from .model import (
    ConfiguredPartition,
    ConfigureOutcome,
    EventBatch,
    EventKind,
    Fault,
    FaultKind,
    Holder,
    IpuAttachment,
    IpuHealth,
    IpuIdentity,
    IpuTelemetry,
    LinkHealth,
    LinkTestKind,
    LinkTestResult,
    MachineEndpoints,
    MachineHealth,
    MachineIdentity,
    PartitionConfig,
)
from .telemetry import TelemetryModel


@dataclass(frozen=True, slots=True)
class SoftwareVersions:
    firmware: str = "2.6.8"
    driver: str = "1.3.0"
    gateway: str = "2.6.0"
    ipum: str = "2.6.0"


@dataclass(slots=True)
class _Partition:
    config: PartitionConfig
    configured_at: float
    reset_count: int = 0


class EmulatedMachine:
    """One emulated IPU-Machine. Not thread-safe: use it from one event loop."""

    def __init__(
        self,
        agent_id: str,
        *,
        machine_type: MachineType = MachineType.BOW2000,
        seed: str = "vpod",
        endpoints: MachineEndpoints | None = None,
        boot_id: str | None = None,
        clock: Callable[[], float] = time.time,
        versions: SoftwareVersions | None = None,
        event_capacity: int = 1024,
    ) -> None:
        try:
            check_id("agent", agent_id)
        except InvalidSpec as exc:
            raise ValueError(str(exc)) from None
        self._agent_id = agent_id
        self._spec = machine_spec(machine_type)
        self._derived = derive_identity(seed, agent_id)
        self._endpoints = endpoints or MachineEndpoints()
        self._boot_id = boot_id or uuid.uuid4().hex
        self._clock = clock
        self._versions = versions or SoftwareVersions()
        self._events = EventLog(self._boot_id, clock, event_capacity)
        self._partitions: dict[str, _Partition] = {}
        self._owner: dict[int, str] = {}
        self._attachments: dict[int, IpuAttachment] = {}
        self._attached_device: dict[int, int] = {}
        self._next_attachment = 1
        self._ipu_faults: dict[int, Fault] = {}
        self._link_faults: dict[str, Fault] = {}
        self._telemetry = TelemetryModel(self._spec.machine_type, clock)
        self._quiet_health: tuple[tuple[int, tuple[IpuTelemetry, ...]], MachineHealth] | None = None
        self._links: tuple[tuple[tuple[str, str], ...], tuple[LinkHealth, ...]] | None = None
        """The links last reported, by the link faults they show: the same tuple while no link
        fault changes, so the agent sees at once that the links are unchanged."""
        """The last answer without events, and what it was built from (see :meth:`health`)."""

    # ------------------------------------------------------------- identity

    @property
    def agent_id(self) -> str:
        return self._agent_id

    @property
    def boot_id(self) -> str:
        return self._boot_id

    @property
    def endpoints(self) -> MachineEndpoints:
        return self._endpoints

    def set_endpoints(self, endpoints: MachineEndpoints) -> None:
        """Record where the machine listens (known only once its servers are bound)."""
        if len(endpoints.server_ports) != IPUS_PER_MACHINE:
            raise ValueError(f"a machine has {IPUS_PER_MACHINE} IPUoF server ports")
        if len(endpoints.rdma_ports) != IPUS_PER_MACHINE:
            raise ValueError(f"a machine has {IPUS_PER_MACHINE} IPUoF RDMA ports")
        self._endpoints = endpoints

    def identity(self) -> MachineIdentity:
        ep = self._endpoints
        ipus = tuple(
            IpuIdentity(
                device_id=ipu.device_id,
                chip_id=ipu.chip_id,
                serial=ipu.serial,
                ipu_id=ipu.device_id,
                ipu_arch_id=self._spec.ipu_arch_id,
                server_port=ep.server_ports[ipu.device_id],
                rdma_port=ep.rdma_ports[ipu.device_id],
            )
            for ipu in self._derived.ipus
        )
        return MachineIdentity(
            agent_id=self._agent_id,
            machine_type=self._spec.machine_type,
            serial=self._derived.serial,
            management_address=ep.management_address,
            ipuof_address=ep.ipuof_address,
            ipus=ipus,
            firmware_version=self._versions.firmware,
            driver_version=self._versions.driver,
            gateway_sw_version=self._versions.gateway,
            ipum_sw_version=self._versions.ipum,
            agent_version=vpod.__version__,
            boot_id=self._boot_id,
        )

    def ipu_attributes(self) -> dict[int, dict[str, str]]:
        spec, versions = self._spec, self._versions
        major, minor, patch = ([*versions.firmware.split("."), "0", "0"])[:3]
        attributes: dict[int, dict[str, str]] = {}
        for ipu in self._derived.ipus:
            d = ipu.device_id
            fault = self._ipu_faults.get(d)
            attributes[d] = {
                "id": str(d),
                "target": "Fabric",
                "board ipu index": str(IPUS_PER_MACHINE - 1 - d),
                "board serial number": self._derived.serial,
                "board type": spec.board_type,
                "board variant": spec.board_type,
                "clock": f"{spec.clock_mhz}MHz",
                "driver version": versions.driver,
                "firmware version": versions.firmware,
                "firmware major version": major,
                "firmware minor version": minor,
                "firmware patch version": patch,
                "gateway software version": versions.gateway,
                "ipu-m software version": versions.ipum,
                "ipu architecture": spec.ipu_version,
                "ipu serial number": ipu.serial,
                "chip id": ipu.chip_id,
                "ipu error state": fault.describe() if fault else "no errors",
                "ipuof server port": str(self._endpoints.server_ports[d]),
                "ipuof rdma port": str(self._endpoints.rdma_ports[d]),
                "remote buffers supported": "1",
            }
        return attributes

    # -------------------------------------------------------- configuration

    def configure(self, config: PartitionConfig) -> ConfigureOutcome:
        config = self._validated(config)
        pid = config.partition_id
        current = self._partitions.get(pid)
        if current is not None:
            held = current.config
            if config.generation < held.generation:
                raise MachineConflict(
                    f"partition {pid} on agent {self._agent_id} is at generation"
                    f" {held.generation}; generation {config.generation} is stale:"
                    " send the newest configuration",
                    Reason.STALE_GENERATION,
                )
            if config.generation == held.generation:
                if config == held:
                    return ConfigureOutcome(self._snapshot(current), changed=False)
                raise MachineConflict(
                    f"partition {pid} generation {config.generation} is configured differently"
                    f" on agent {self._agent_id}: give a changed configuration a new generation",
                    Reason.CONFLICTING_CONFIG,
                )
        self._check_ipus_usable(config)
        if current is not None:
            self._drop(current, detail=f"partition reconfigured to generation {config.generation}")
        entry = _Partition(config=config, configured_at=self._clock())
        self._partitions[pid] = entry
        for device_id in config.device_ids:
            self._owner[device_id] = pid
        self._events.emit(EventKind.CONFIGURED, partition_id=pid, generation=config.generation)
        return ConfigureOutcome(self._snapshot(entry), changed=True)

    def release(self, partition_id: str) -> bool:
        entry = self._partitions.get(partition_id)
        if entry is None:
            return False
        self._drop(entry, detail="partition released")
        self._events.emit(
            EventKind.RELEASED, partition_id=partition_id, generation=entry.config.generation
        )
        return True

    def reset(self, partition_id: str, *, unless_attached: bool = False) -> ConfiguredPartition:
        entry = self._require(partition_id)
        held = [d for d in entry.config.device_ids if d in self._attached_device]
        if unless_attached and held:
            raise MachineConflict(
                f"not resetting partition {partition_id}: an application holds IPU"
                f"{'s' if len(held) > 1 else ''} {', '.join(map(str, held))} of agent"
                f" {self._agent_id}",
                Reason.IPU_ATTACHED,
            )
        for device_id in entry.config.device_ids:
            fault = self._ipu_faults.get(device_id)
            if fault is not None:
                raise MachineConflict(
                    f"cannot reset partition {partition_id}: IPU {device_id} of agent"
                    f" {self._agent_id} is faulted ({fault.describe()}); clear the fault"
                    " or move the partition to other IPUs",
                    Reason.IPU_FAULTED,
                )
        self._evict(entry.config.device_ids, detail="partition reset")
        entry.reset_count += 1
        self._events.emit(
            EventKind.RESET, partition_id=partition_id, generation=entry.config.generation
        )
        return self._snapshot(entry)

    def configurations(self) -> list[ConfiguredPartition]:
        return [self._snapshot(self._partitions[pid]) for pid in sorted(self._partitions)]

    def _require(self, partition_id: str) -> _Partition:
        entry = self._partitions.get(partition_id)
        if entry is None:
            raise UnknownPartition(
                f"partition {partition_id} is not configured on agent {self._agent_id}:"
                " configure it first"
            )
        return entry

    def _drop(self, entry: _Partition, *, detail: str) -> None:
        self._evict(entry.config.device_ids, detail=detail)
        for device_id in entry.config.device_ids:
            self._owner.pop(device_id, None)
        del self._partitions[entry.config.partition_id]

    def _snapshot(self, entry: _Partition) -> ConfiguredPartition:
        attached = tuple(d for d in entry.config.device_ids if d in self._attached_device)
        return ConfiguredPartition(
            config=entry.config,
            attached_device_ids=attached,
            reset_count=entry.reset_count,
            configured_at=entry.configured_at,
        )

    def _validated(self, config: PartitionConfig) -> PartitionConfig:
        def bad(message: str) -> InvalidRequest:
            return InvalidRequest(
                f"cannot configure partition on agent {self._agent_id}: {message}"
            )

        try:
            check_id("partition", config.partition_id)
        except InvalidSpec as exc:
            raise bad(str(exc)) from None
        config = config.normalised()
        if config.generation < 1:
            raise bad(f"generation must be 1 or more, not {config.generation}")
        if not config.ipus:
            raise bad("no IPUs listed: name at least one IPU of this machine")
        devices = [ipu.device_id for ipu in config.ipus]
        unknown = sorted(set(devices) - set(DEVICE_IDS))
        if unknown:
            raise bad(f"device ids {unknown} do not exist: this machine has IPUs 0..3")
        if len(set(devices)) != len(devices):
            raise bad("an IPU is listed twice: list each device id once")
        routing = [ipu.routing_id for ipu in config.ipus]
        if len(set(routing)) != len(routing):
            raise bad("two IPUs have the same routing id: routing ids are unique in a partition")
        if config.partition_size < len(config.ipus):
            raise bad(
                f"partition size {config.partition_size} is smaller than the"
                f" {len(config.ipus)} IPUs listed"
            )
        if max(routing) >= config.partition_size:
            raise bad(
                f"routing id {max(routing)} is outside the partition of"
                f" {config.partition_size} IPUs (0..{config.partition_size - 1})"
            )
        segments = config.num_ipulink_segments
        if any(ipu.segment_id >= segments for ipu in config.ipus):
            raise bad(f"a segment id is outside the partition's {segments} segments")
        return config

    def _check_ipus_usable(self, config: PartitionConfig) -> None:
        pid = config.partition_id
        for device_id in config.device_ids:
            owner = self._owner.get(device_id)
            if owner is not None and owner != pid:
                raise MachineConflict(
                    f"IPU {device_id} of agent {self._agent_id} is configured into partition"
                    f" {owner}: release that partition first",
                    Reason.IPU_BUSY,
                )
            fault = self._ipu_faults.get(device_id)
            if fault is not None:
                raise MachineConflict(
                    f"IPU {device_id} of agent {self._agent_id} is faulted"
                    f" ({fault.describe()}): choose other IPUs or clear the fault",
                    Reason.IPU_FAULTED,
                )
            if config.partition_size > 1 and self._link_faults:
                for link in ipu_links_of(device_id):
                    if link in self._link_faults:
                        raise MachineConflict(
                            f"IPU-Link training failed for partition {pid} on agent"
                            f" {self._agent_id}: {link} of IPU {device_id} is down;"
                            " choose other IPUs or clear the fault",
                            Reason.LINK_DOWN,
                        )
        if config.num_ipulink_segments > 1:
            for link in GW_LINKS:
                if link in self._link_faults:
                    raise MachineConflict(
                        f"GW-Link training failed for partition {pid} on agent"
                        f" {self._agent_id}: {link} is down; choose other machines or"
                        " clear the fault",
                        Reason.LINK_DOWN,
                    )

    # ---------------------------------------------------------------- IPUoF

    def attach(
        self,
        partition_id: str | None,
        device_id: int,
        client: str,
        holder: Holder | None = None,
    ) -> IpuAttachment:
        where = f"IPU {device_id} of agent {self._agent_id}"
        if device_id not in DEVICE_IDS:
            raise InvalidRequest(f"{where} does not exist: this machine has IPUs 0..3")
        fault = self._ipu_faults.get(device_id)
        if fault is not None:
            raise MachineConflict(f"{where} is faulted ({fault.describe()})", Reason.IPU_FAULTED)
        owner = self._owner.get(device_id)
        if owner is None:
            raise MachineConflict(
                f"{where} is in no active partition: create the partition first",
                Reason.IPU_NOT_CONFIGURED,
            )
        if partition_id is not None and owner != partition_id:
            raise MachineConflict(
                f"{where} belongs to partition {owner}, not {partition_id}",
                Reason.WRONG_PARTITION,
            )
        held = self._attached_device.get(device_id)
        if held is not None:
            holding = self._attachments[held]
            raise MachineConflict(
                f"{where} is already attached by {holding.holder.describe(holding.client)}:"
                " one application per IPU; wait until it detaches",
                Reason.IPU_ATTACHED,
            )
        config = self._partitions[owner].config
        routing_id = next(ipu.routing_id for ipu in config.ipus if ipu.device_id == device_id)
        attachment = IpuAttachment(
            attachment_id=self._next_attachment,
            partition_id=owner,
            device_id=device_id,
            routing_id=routing_id,
            client=client,
            holder=holder or Holder(),
            attached_at=self._clock(),
        )
        self._next_attachment += 1
        self._attachments[attachment.attachment_id] = attachment
        self._attached_device[device_id] = attachment.attachment_id
        self._events.emit(
            EventKind.ATTACHED,
            partition_id=owner,
            device_id=device_id,
            client=client,
            detail=attachment.holder.describe(client),
        )
        return attachment

    def detach(self, attachment_id: int, *, evicted: bool = False, detail: str = "") -> bool:
        attachment = self._attachments.pop(attachment_id, None)
        if attachment is None:
            return False
        del self._attached_device[attachment.device_id]
        self._telemetry.set_load(attachment.device_id, 0.0)
        self._events.emit(
            EventKind.DETACHED,
            partition_id=attachment.partition_id,
            device_id=attachment.device_id,
            client=attachment.client,
            evicted=evicted,
            detail=detail or ("detached by the agent" if evicted else "application detached"),
        )
        return True

    def set_load(self, attachment_id: int, load: float) -> bool:
        """The application of an attachment reports how busy its IPU is (0..1)."""
        attachment = self._attachments.get(attachment_id)
        if attachment is None:
            return False
        self._telemetry.set_load(attachment.device_id, load)
        return True

    def ipu_status(self, device_id: int) -> IpuHealth:
        """One IPU's health, holder and telemetry (what an IPUoF ``STATUS`` line reports)."""
        return self._ipu_status(device_id, self._read_telemetry(device_id))

    def _read_telemetry(self, device_id: int) -> IpuTelemetry:
        links_down = sum(1 for link in ipu_links_of(device_id) if link in self._link_faults)
        return self._telemetry.read(device_id, links_down=links_down)

    def _ipu_status(self, device_id: int, telemetry: IpuTelemetry) -> IpuHealth:
        fault = self._ipu_faults.get(device_id)
        held = self._attached_device.get(device_id)
        attachment = self._attachments[held] if held else None
        owner = self._owner.get(device_id, "")
        routing_id = 0
        if owner:
            config = self._partitions[owner].config
            routing_id = next(i.routing_id for i in config.ipus if i.device_id == device_id)
        return IpuHealth(
            device_id=device_id,
            healthy=fault is None,
            fault=fault.describe() if fault else "",
            partition_id=owner,
            attached_client=attachment.client if attachment else "",
            holder=attachment.holder if attachment else Holder(),
            attached_since=attachment.attached_at if attachment else 0.0,
            routing_id=routing_id,
            telemetry=telemetry,
            serial=self._derived.ipus[device_id].serial,
        )

    def attachments(self) -> list[IpuAttachment]:
        return sorted(self._attachments.values(), key=lambda a: a.device_id)

    def _evict(self, device_ids: Iterable[int], *, detail: str) -> None:
        for device_id in device_ids:
            held = self._attached_device.get(device_id)
            if held is not None:
                self.detach(held, evicted=True, detail=detail)

    # --------------------------------------------------------------- faults

    def inject_fault(self, fault: Fault) -> list[Fault]:
        if fault.kind is FaultKind.IPU:
            if fault.device_id not in DEVICE_IDS:
                raise InvalidRequest(
                    f"cannot fault IPU {fault.device_id} of agent {self._agent_id}:"
                    " use a device id 0..3"
                )
            self._ipu_faults[fault.device_id] = replace(fault, link_id=None, delay_s=0.0)
            self._evict([fault.device_id], detail=f"IPU faulted ({fault.describe()})")
        elif fault.kind is FaultKind.LINK_DOWN:
            if fault.link_id not in LINKS:
                raise InvalidRequest(
                    f"agent {self._agent_id} has no link"
                    f" {excerpt(fault.link_id, quote=True)}: use one of"
                    f" {', '.join(LINKS)}"
                )
            if fault.link_id not in self._link_faults:
                owner_ipu = LINKS[fault.link_id][1]
                if owner_ipu is not None:
                    self._telemetry.count_link_error(owner_ipu)
            self._link_faults[fault.link_id] = replace(fault, device_id=None, delay_s=0.0)
        else:
            raise InvalidRequest(
                f"{fault.kind.name} is a fault of the agent, not of the machine:"
                " inject it through the agent service"
            )
        self._events.emit(
            EventKind.FAULT_INJECTED, device_id=fault.device_id, detail=fault.describe()
        )
        return self.faults()

    def clear_fault(self, fault: Fault | None) -> list[Fault]:
        if fault is None:
            cleared = [*self._ipu_faults.values(), *self._link_faults.values()]
            self._ipu_faults.clear()
            self._link_faults.clear()
        elif fault.kind is FaultKind.IPU and fault.device_id is not None:
            cleared = [f for f in [self._ipu_faults.pop(fault.device_id, None)] if f]
        elif fault.kind is FaultKind.LINK_DOWN and fault.link_id is not None:
            cleared = [f for f in [self._link_faults.pop(fault.link_id, None)] if f]
        else:
            cleared = []
        for gone in cleared:
            self._events.emit(
                EventKind.FAULT_CLEARED, device_id=gone.device_id, detail=gone.describe()
            )
        return self.faults()

    def faults(self) -> list[Fault]:
        ipu = [self._ipu_faults[d] for d in sorted(self._ipu_faults)]
        return ipu + [self._link_faults[link] for link in sorted(self._link_faults)]

    # --------------------------------------------------------------- health

    def health(self, since_event: int = 0) -> MachineHealth:
        """The machine's health and its events after ``since_event``.

        Every change of what it reports but the telemetry emits an event, so an answer
        without events, at the same last event and with the same readings, is the previous
        answer again: it is reused (a process hosting 256 machines answers 256 heartbeats a
        second, nearly all unchanged, and building them anew was most of its idle CPU)."""
        batch = self._events.since(since_event)
        telemetry = tuple(self._read_telemetry(device_id) for device_id in DEVICE_IDS)
        quiet = not batch.news
        key = (batch.last_event, telemetry)
        if quiet and self._quiet_health is not None and self._quiet_health[0] == key:
            return self._quiet_health[1]
        health = self._build_health(batch, telemetry)
        if quiet:
            self._quiet_health = (key, health)
        return health

    def _build_health(
        self, batch: EventBatch, telemetry: tuple[IpuTelemetry, ...]
    ) -> MachineHealth:
        ipus = [self._ipu_status(d, t) for d, t in zip(DEVICE_IDS, telemetry, strict=True)]
        return MachineHealth(
            agent_id=self._agent_id,
            boot_id=self._boot_id,
            ipus=tuple(ipus),
            links=self._link_health(),
            faults=tuple(self.faults()),
            events=batch,
        )

    def _link_health(self) -> tuple[LinkHealth, ...]:
        faults = tuple((link, fault.describe()) for link, fault in self._link_faults.items())
        if self._links is not None and self._links[0] == faults:
            return self._links[1]
        links = tuple(
            LinkHealth(
                link_id=link,
                kind=kind,
                device_id=device_id,
                up=link not in self._link_faults,
                fault=self._link_faults[link].describe() if link in self._link_faults else "",
            )
            for link, (kind, device_id) in LINKS.items()
        )
        self._links = (faults, links)
        return links

    def events_since(self, sequence: int) -> EventBatch:
        return self._events.since(sequence)

    def subscribe(self, listener: EventListener) -> Callable[[], None]:
        return self._events.subscribe(listener)

    # ----------------------------------------------------------- link tests

    def run_link_tests(self, tests: Iterable[LinkTestKind] = ()) -> list[LinkTestResult]:
        return run_link_tests(
            self._agent_id, tests, MachineFaults(self._ipu_faults, self._link_faults)
        )
