"""Real processes for the fault, stress and fuzz suites: controllers, agent processes, clients.

Everything here starts the console scripts a user would run (``vipu-server``,
``vipu-agent``) as child processes on loopback, so the tests can do to them
what happens to real ones: SIGKILL, SIGSTOP (a hung process), restart.

- :class:`ControllerProcess`: one ``vipu-server`` on free ports; restarts on
  the same ports so clients' channels reconnect by themselves.
- :class:`AgentProcess`: one ``vipu-agent`` hosting several emulated
  machines, each on its own loopback address and the agent's default port,
  so a restarted machine comes back where the store expects it.
- :class:`UserClient` / :func:`admin_stub` / :func:`agent_holdings`: plain
  generated stubs, as any V-IPU client or operator tool would use.
- :func:`build_pod`: controller + agent processes + cluster + allocation.

Agents are started *after* the controller and register with it
(``--register``); the admin then creates the cluster over the admin API.
"""

from __future__ import annotations

import contextlib
import ipaddress
import random
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc

from vpod.agent.trust import KEY_METADATA
from vpod.store import Store
from vpod.wire import admin_pb2 as apb
from vpod.wire import admin_pb2_grpc as apb_grpc
from vpod.wire import agent_pb2 as agpb
from vpod.wire import agent_pb2_grpc as agpb_grpc
from vpod.wire import virmgrpc_pb2 as pb
from vpod.wire import virmgrpc_pb2_grpc as pb_grpc

BIN = Path(sys.executable).parent
READY_TIMEOUT_S = 60.0
CALL_TIMEOUT_S = 30.0
AGENT_PORT = 8092
IPUOF_SERVER_PORT = 50052
IPUS_PER_MACHINE = 4
CHANNEL_OPTIONS = [("grpc.use_local_subchannel_pool", 1)]
"""Each channel its own connections: by default channels to one address share them, so a
new channel after a controller restart would inherit the old one's reconnect backoff."""


def wait_until(check: Callable[[], bool], what: str, within_s: float = 30.0) -> float:
    """Poll ``check`` until it holds; returns the seconds it took (live processes run on
    their own time). Fails with ``what`` when it does not hold within ``within_s``."""
    start = time.monotonic()
    deadline = start + within_s
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not true within {within_s:.0f} s")
        time.sleep(0.05)
    return time.monotonic() - start


# ------------------------------------------------------------------ processes


class _Child:
    """A child process whose stdout is scanned for a ready line, stderr kept in a log file."""

    def __init__(self, argv: list[str], log_path: Path, marker: str) -> None:
        self.argv = argv
        self.log_path = log_path
        self._log = log_path.open("a")
        self._log.write(f"--- {' '.join(argv)}\n")
        self._log.flush()
        self.proc = subprocess.Popen(
            argv,
            stdout=subprocess.PIPE,
            stderr=self._log,
            text=True,
            start_new_session=True,
        )
        self.ready_line = ""
        self._ready = threading.Event()
        threading.Thread(target=self._pump, args=(marker,), daemon=True).start()
        if not self._ready.wait(READY_TIMEOUT_S) or not self.ready_line:
            self.kill()
            raise AssertionError(f"{Path(argv[0]).name} did not become ready:\n{self.log_tail()}")

    def _pump(self, marker: str) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if not self.ready_line and marker in line:
                self.ready_line = line.strip()
                self._ready.set()
        self._ready.set()

    def log_tail(self, chars: int = 4000) -> str:
        if not self._log.closed:
            self._log.flush()
        return self.log_path.read_text(errors="replace")[-chars:]

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None

    def signal(self, sig: signal.Signals) -> None:
        if self.alive():
            self.proc.send_signal(sig)

    def kill(self) -> None:
        """SIGKILL: no clean-up of any kind, as when a machine loses power."""
        if self.alive():
            self.proc.kill()
        self.proc.wait(timeout=30)
        if not self._log.closed:
            self._log.close()

    def stop(self) -> None:
        """SIGTERM, then SIGKILL if it does not exit within 20 s."""
        if self.alive():
            self.proc.send_signal(signal.SIGCONT)
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=30)
        if not self._log.closed:
            self._log.close()


def _port_after(line: str, label: str) -> int:
    # "vipu-server ready: user API 127.0.0.1:8090, admin API 127.0.0.1:8091, HTTP http://..."
    return int(line.split(label, 1)[1].split(",", 1)[0].strip().rsplit(":", 1)[1])


@dataclass
class ControllerProcess:
    """One ``vipu-server`` on a database; ports are chosen at first start and then kept."""

    database_url: str
    workdir: Path
    name: str = "controller"
    options: tuple[str, ...] = ()
    user_port: int = 0
    admin_port: int = 0
    http_port: int = 0
    _child: _Child | None = None
    _channels: list[grpc.Channel] = field(default_factory=list)

    def start(self) -> ControllerProcess:
        self.workdir.mkdir(parents=True, exist_ok=True)
        argv = [
            str(BIN / "vipu-server"),
            "--data-dir", str(self.workdir),
            "--database-url", self.database_url,
            "--port", str(self.user_port),
            "--admin-port", str(self.admin_port),
            "--http-port", str(self.http_port),
            *self.options,
        ]  # fmt: skip
        self._child = _Child(argv, self.workdir / f"{self.name}.log", "vipu-server ready:")
        line = self._child.ready_line
        self.user_port = _port_after(line, "user API")
        self.admin_port = _port_after(line, "admin API")
        self.http_port = _port_after(line, "HTTP")
        return self

    @property
    def child(self) -> _Child:
        assert self._child is not None, f"{self.name} was never started"
        return self._child

    @property
    def pid(self) -> int:
        return self.child.pid

    @property
    def replica_id(self) -> str:
        """How this process names itself in the leader lease (host and process id)."""
        return f"{socket.gethostname()}:{self.pid}"

    @property
    def admin_address(self) -> str:
        return f"127.0.0.1:{self.admin_port}"

    def alive(self) -> bool:
        return self._child is not None and self._child.alive()

    def kill(self) -> None:
        self.child.kill()

    def stop(self) -> None:
        if self._child is not None:
            self._child.stop()

    def restart(self) -> ControllerProcess:
        """Start again on the same ports (after :meth:`kill` or :meth:`stop`)."""
        if self.alive():
            self.kill()
        return self.start()

    def log(self) -> str:
        return self.child.log_tail(200_000)

    def user(self) -> UserClient:
        client = UserClient(self.user_port)
        self._channels.append(client.channel)
        return client

    def admin(self) -> apb_grpc.AdminServiceStub:
        channel = grpc.insecure_channel(f"127.0.0.1:{self.admin_port}", options=CHANNEL_OPTIONS)
        self._channels.append(channel)
        return apb_grpc.AdminServiceStub(channel)

    def close(self) -> None:
        for channel in self._channels:
            channel.close()
        self._channels.clear()
        self.stop()


def free_address_block(machines: int, rng: random.Random | None = None) -> str:
    """A 127.X.0.1 base whose first ``machines`` addresses have the agent and IPUoF ports free.

    X is drawn from 216..254, above the blocks ``vpod up`` picks (16..215).
    """
    rng = rng or random.Random()
    candidates = list(range(216, 255))
    rng.shuffle(candidates)
    for second in candidates:
        base = ipaddress.IPv4Address(f"127.{second}.0.1")
        if all(
            _free(str(base + i), port)
            for i in range(machines)
            for port in (AGENT_PORT, IPUOF_SERVER_PORT)
        ):
            return str(base)
    raise AssertionError("no free 127.X.0.0/16 block for the emulated agents")


def _free(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


AGENT_KEY = "faults-tests-agent-key-" + "f" * 24
"""The key the tests' agents answer to (``--key-file``): the tests call agents directly
too, as the controller does, to see what they hold and to inject faults."""
AGENT_KEY_METADATA = ((KEY_METADATA, AGENT_KEY),)


@dataclass
class AgentProcess:
    """One ``vipu-agent`` process hosting machines ``first_index .. first_index+count-1``."""

    workdir: Path
    first_index: int
    count: int
    address_base: str
    """Address of machine 1 (``ag1``); machine i is at base + i - 1."""
    name: str = "agents"
    addresses: dict[str, str] = field(default_factory=dict)
    _child: _Child | None = None

    @property
    def ids(self) -> list[str]:
        return [f"ag{i}" for i in range(self.first_index, self.first_index + self.count)]

    def start(self, register: str) -> AgentProcess:
        first = ipaddress.IPv4Address(self.address_base) + (self.first_index - 1)
        key_file = self.workdir / "agent.key"
        key_file.write_text(AGENT_KEY + "\n")
        argv = [
            str(BIN / "vipu-agent"),
            "--machines", str(self.count),
            "--first-index", str(self.first_index),
            "--address-base", str(first),
            "--agent-port", str(AGENT_PORT),
            "--no-rdma-listen",
            "--enable-fault-injection",
            "--key-file", str(key_file),
            "--register", register,
        ]  # fmt: skip
        self._child = _Child(argv, self.workdir / f"{self.name}.log", "vipu-agent ready:")
        for item in self._child.ready_line.split("ready:", 1)[1].split():
            agent_id, _, address = item.partition("=")
            self.addresses[agent_id] = address
        return self

    @property
    def child(self) -> _Child:
        assert self._child is not None, f"{self.name} was never started"
        return self._child

    def kill(self) -> None:
        self.child.kill()

    def hang(self) -> None:
        """SIGSTOP: the process stops answering but keeps its sockets and state."""
        self.child.signal(signal.SIGSTOP)

    def resume(self) -> None:
        self.child.signal(signal.SIGCONT)

    def restart(self, register: str) -> AgentProcess:
        """A new boot of the same machines on the same addresses (state is lost)."""
        if self._child is not None and self._child.alive():
            self.kill()
        return self.start(register)

    def stop(self) -> None:
        if self._child is not None:
            self._child.stop()


# -------------------------------------------------------------------- clients


class UserClient:
    """The V-IPU user API through stubs generated from the public proto (open mode)."""

    def __init__(self, port: int) -> None:
        self.channel = grpc.insecure_channel(f"127.0.0.1:{port}", options=CHANNEL_OPTIONS)
        self.users = pb_grpc.UserServiceStub(self.channel)
        self.version = pb_grpc.VersionServiceStub(self.channel)

    def create(
        self,
        pid: str,
        size: int,
        *,
        disable_auto_reset: bool = False,
        relocatable: bool = False,
        timeout: float = CALL_TIMEOUT_S,
        **requirements: Any,
    ) -> str:
        request = pb.CreatePartitionRequest(
            requirements=pb.PartitionRequirements(id=pid, size=size, **requirements),
            disable_auto_reset=disable_auto_reset,
            relocatable=relocatable,
        )
        return str(self.users.CreatePartition(request, timeout=timeout).partition_id)

    def remove(self, pid: str, *, force: bool = False, timeout: float = CALL_TIMEOUT_S) -> None:
        self.users.RemovePartition(
            pb.RemovePartitionRequest(partition_id=pid, force=force), timeout=timeout
        )

    def reset(self, pid: str) -> None:
        self.users.ResetPartition(pb.ResetPartitionRequest(partition_id=pid), timeout=30)

    def status(self, pid: str) -> pb.PartitionStatus:
        reply = self.users.GetPartitionStatus(
            pb.GetPartitionStatusRequest(partition_id=pid), timeout=CALL_TIMEOUT_S
        )
        status: pb.PartitionStatus = reply.status
        return status

    def ids(self) -> list[str]:
        reply = self.users.ListPartitions(pb.ListPartitionsRequest(), timeout=CALL_TIMEOUT_S)
        return [p.id for p in reply.partitions]

    def config(self, pid: str) -> pb.PartitionConfig:
        reply = self.users.GetPartitionIpuofConfig(
            pb.GetPartitionIpuofConfigRequest(partition_id=pid), timeout=CALL_TIMEOUT_S
        )
        config: pb.PartitionConfig = reply.ipuof_config
        return config

    def remove_all(self) -> None:
        """Force-remove every partition (tests sharing a pod start from an empty one)."""
        for pid in self.ids():
            with contextlib.suppress(grpc.RpcError):
                self.remove(pid, force=True)

    def close(self) -> None:
        self.channel.close()


def rpc_code(call: Callable[[], object]) -> tuple[grpc.StatusCode, str]:
    """Run a call; return (OK, "") or the status code and message it failed with."""
    try:
        call()
    except grpc.RpcError as exc:
        return exc.code(), exc.details() or ""
    return grpc.StatusCode.OK, ""


@dataclass(frozen=True)
class Holding:
    """What one agent holds for one partition: its devices, as ListConfigurations says."""

    agent_id: str
    partition_id: str
    device_ids: frozenset[int]
    generation: int


def agent_holdings(address: str, timeout: float = 15.0) -> tuple[str, list[Holding]]:
    """Ask one agent directly which partitions it has configured: (boot id, holdings)."""
    with grpc.insecure_channel(address, options=CHANNEL_OPTIONS) as channel:
        stub = agpb_grpc.AgentServiceStub(channel)
        reply = stub.ListConfigurations(
            agpb.ListConfigurationsRequest(), timeout=timeout, metadata=AGENT_KEY_METADATA
        )
    return reply.boot_id, [
        Holding(
            agent_id=reply.agent_id,
            partition_id=p.config.partition_id,
            device_ids=frozenset(i.device_id for i in p.config.ipus),
            generation=p.config.generation,
        )
        for p in reply.partitions
    ]


def agent_fault(address: str, fault: agpb.Fault | None) -> None:
    """Inject ``fault`` into one agent directly (None: clear every fault), controller or not."""
    with grpc.insecure_channel(address, options=CHANNEL_OPTIONS) as channel:
        stub = agpb_grpc.AgentServiceStub(channel)
        if fault is None:
            stub.ClearFault(
                agpb.ClearFaultRequest(all=True), timeout=15, metadata=AGENT_KEY_METADATA
            )
        else:
            stub.InjectFault(
                agpb.InjectFaultRequest(fault=fault), timeout=15, metadata=AGENT_KEY_METADATA
            )


def agent_states(admin: apb_grpc.AdminServiceStub) -> dict[str, apb.Agent]:
    """Agents by id, as the admin API reports them (state, state_detail, boot id)."""
    listed = admin.ListAgents(apb.ListAgentsRequest(), timeout=CALL_TIMEOUT_S)
    return {a.id: a for a in listed.agents}


def locations(admin: apb_grpc.AdminServiceStub, pid: str) -> list[tuple[str, int]]:
    """(agent id, device id) of each IPU of a partition, in routing order."""
    listed = admin.ListPartitions(apb.ListPartitionsRequest(), timeout=CALL_TIMEOUT_S)
    for info in listed.partitions:
        if info.partition.id == pid:
            return [(loc.agent_id, loc.device_id) for loc in info.locations]
    raise AssertionError(f"the admin API does not list partition {pid}")


def audit_count(database_url: str, action: str, target: str) -> int:
    """How many audit-log entries of ``action`` on ``target`` the store holds."""
    with Store.open(database_url) as store:
        return len(store.list_events(action=action, target=target, limit=10_000))


def audit_actions(database_url: str, action: str) -> int:
    """How many audit-log entries of ``action`` (on any target) the store holds."""
    with Store.open(database_url) as store:
        return len(store.list_events(action=action, limit=100_000))


def inject(admin: apb_grpc.AdminServiceStub, agent_id: str, fault: agpb.Fault) -> None:
    admin.InjectFault(apb.InjectFaultRequest(agent_id=agent_id, fault=fault), timeout=30)


def clear(admin: apb_grpc.AdminServiceStub, agent_id: str, fault: agpb.Fault) -> None:
    admin.ClearFault(apb.ClearFaultRequest(agent_id=agent_id, fault=fault), timeout=30)


def clear_all(admin: apb_grpc.AdminServiceStub, agent_id: str) -> None:
    admin.ClearFault(apb.ClearFaultRequest(agent_id=agent_id, all=True), timeout=30)


# ------------------------------------------------------------------------ pods


@dataclass
class LivePod:
    """Controllers and agent processes of one emulated pod, cluster ``c1``, allocation ``al``."""

    controllers: list[ControllerProcess]
    agents: list[AgentProcess]
    address_base: str
    database_url: str

    @property
    def controller(self) -> ControllerProcess:
        return self.controllers[0]

    @property
    def agent_ids(self) -> list[str]:
        return [a for proc in self.agents for a in proc.ids]

    def agent_process(self, agent_id: str) -> AgentProcess:
        for proc in self.agents:
            if agent_id in proc.ids:
                return proc
        raise KeyError(agent_id)

    def address(self, agent_id: str) -> str:
        return self.agent_process(agent_id).addresses[agent_id]

    def close(self) -> None:
        for proc in self.agents:
            proc.stop()
        for controller in self.controllers:
            controller.close()


def build_pod(
    workdir: Path,
    database_url: str,
    *,
    machines: int,
    agents_per_process: int,
    controllers: int = 1,
    controller_options: Sequence[str] = (),
    allocation_size: int | None = None,
) -> LivePod:
    """Start controllers on one database, agent processes registering with the first,
    then create cluster ``c1`` over all machines and allocation ``al``."""
    started: list[ControllerProcess] = []
    agent_procs: list[AgentProcess] = []
    try:
        for n in range(controllers):
            started.append(
                ControllerProcess(
                    database_url,
                    workdir / f"controller{n}",
                    name=f"controller{n}",
                    options=tuple(controller_options),
                ).start()
            )
        base = free_address_block(machines)
        for first in range(1, machines + 1, agents_per_process):
            count = min(agents_per_process, machines - first + 1)
            agent_procs.append(
                AgentProcess(workdir, first, count, base, name=f"agents{first}").start(
                    started[0].admin_address
                )
            )
        pod = LivePod(started, agent_procs, base, database_url)
        admin = started[0].admin()
        wait_until(
            lambda: set(pod.agent_ids) <= set(agent_states(admin)),
            "every agent registered",
        )
        domains = max(1, machines // 16)
        admin.CreateCluster(
            apb.CreateClusterRequest(
                cluster_id="c1", agent_ids=pod.agent_ids, num_ipulinkdomains=domains
            ),
            timeout=CALL_TIMEOUT_S,
        )
        admin.CreateAllocation(
            apb.CreateAllocationRequest(
                allocation_id="al",
                cluster_id="c1",
                size=allocation_size or machines * IPUS_PER_MACHINE,
            ),
            timeout=CALL_TIMEOUT_S,
        )
        return pod
    except BaseException:
        for proc in agent_procs:
            proc.stop()
        for controller in started:
            controller.close()
        raise


@contextlib.contextmanager
def live_pod(workdir: Path, database_url: str, **kwargs: Any) -> Iterator[LivePod]:
    pod = build_pod(workdir, database_url, **kwargs)
    try:
        yield pod
    finally:
        pod.close()
