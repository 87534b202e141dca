"""``vpod up``: the embedded default — a controller on SQLite plus emulated pods, on loopback.

It starts ``vipu-server`` and ``vipu-agent`` child processes (every emulated
machine of a pod in one process, each on its own loopback address), waits
for the agents to register, and the first time creates the cluster, a
default allocation of the whole pod and a default user; it writes
``vipu-cli.hcl`` into the data directory and prints one line saying what to
type next, with absolute paths. Ctrl-C (or SIGTERM) stops every child; the
children also die with ``vpod up`` when it is killed outright
(:mod:`.up_children`). A dead agent process is restarted with backoff while
the controller keeps serving (its machines are unreachable meanwhile and
their partitions come back with them).

The whole product by default:

- **secure**: the first run initialises the store with ``vipu-server --init
  --secure`` (administrator ``admin``, key in ``DATA_DIR/admin.vipu-cli.hcl``,
  0600), the controller authenticates every call and ``vipu-cli.hcl`` carries
  the default user's key. ``--open`` runs the spec's open V-IPU mode instead,
  without the cloud (tenants need authentication). A data directory keeps its
  mode; ``--switch-mode`` changes it (:mod:`.up_state`).
- **a pod for V-IPU users and capacity for tenants**: the main pod (pod64)
  is all the default user's, and a second emulated pod (pod16, its own
  cluster ``cloud``) holds the tenants' vPODs, with emulated GPU hosts
  beside it (:mod:`.cloud_up`). A separate pod rather than a share of the
  main one keeps the V-IPU story of the spec intact (one allocation of the
  whole pod) and means an administrator reshaping that pod never takes
  capacity a tenant is using.

Under ``--secure`` it also writes ``DATA_DIR/metrics.token`` (0600), the bearer
token ``/metrics`` accepts for Prometheus, and in every mode ``DATA_DIR/agent.key``,
the key its agents answer to (:mod:`.up_secret_files`).

Logs are under ``DATA_DIR/logs``: ``controller.log`` is the controller's
(``vipu-server --log-file``, rotated by size), ``controller.out`` what it
prints outside its log (the ready line, a failure to start), ``agents.log``
and ``cloud-agents.log`` the agents'.

What the first run chose (pod shapes, addresses, mode) is kept in
``DATA_DIR/up.json``; restarts reuse it and bring back the same partitions.
"""

from __future__ import annotations

import contextlib
import fcntl
import shlex
import signal
import sys
import threading
from collections.abc import Iterator
from dataclasses import KW_ONLY, dataclass, field, replace
from pathlib import Path
from typing import NoReturn

import grpc

from vpod.cli.errors import fail
from vpod.client import AdminClient, Endpoint, Unauthenticated, VpodError
from vpod.domain.catalog import IPUS_PER_MACHINE
from vpod.domain.errors import InvalidSpec
from vpod.domain.topology import Pod, shape

from . import cloud_up
from .address_claims import AddressClaims
from .up_agent_token import ensure_agent_token
from .up_children import Child, Supervised
from .up_progress import StartProgress
from .up_secret_files import ensure_agent_key, ensure_metrics_token
from .up_setup import (
    SETUP_CALL_TIMEOUT_S,
    admin_credentials,
    bin_path,
    ensure_cluster,
    ensure_default_allocation,
    ensure_user,
    run_init,
    wait_for_agents,
    write_admin_config,
    write_cli_config,
)
from .up_state import (
    ADMIN_CONFIG,
    AGENT_PORT,
    OPEN,
    SECURE,
    UpState,
    check_agent_addresses_free,
    check_ports_free,
    load_state,
    resolve_mode,
    save_state,
)

SERVER_LOG = "controller.log"
"""The controller's log (vipu-server --log-file: rotated by size)."""
SERVER_OUTPUT = "controller.out"
"""What vipu-server prints outside its log: the ready line, a failure to start."""
START_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class UpOptions:
    data_dir: Path
    pod: str | None
    host: str
    port: int
    admin_port: int
    http_port: int
    address_base: str | None
    mode: str | None = None
    """``secure`` (--secure), ``open`` (--open), or None: the directory's, secure when new."""
    switch_mode: bool = False
    cloud: bool = True
    cloud_pod: str | None = None
    unsafe_shared_host: bool = False
    """Tenants' servers unsandboxed where the host cannot sandbox them (vipu-server's flag)."""
    ssh_direct_ports: str | None = None
    """A host port range forwarded to the servers' sshd (vipu-server's --ssh-direct-ports)."""
    ssh_direct_bind: str | None = None


def mode_of(secure: bool | None) -> str | None:
    """The mode ``--secure``/``--open`` asked for (None: neither was given)."""
    return None if secure is None else SECURE if secure else OPEN


@contextlib.contextmanager
def _exclusive(data_dir: Path) -> Iterator[None]:
    lock_path = data_dir / "up.lock"
    handle = lock_path.open("w")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        fail(
            f"another `vpod up` is running on {data_dir}: stop it, or use another --data-dir",
        )
    try:
        yield
    finally:
        fcntl.flock(handle, fcntl.LOCK_UN)
        handle.close()


def _port_of(ready_line: str, label: str) -> int:
    # "vipu-server ready: user API 127.0.0.1:8090, admin API 127.0.0.1:8091, HTTP http://..."
    part = ready_line.split(label, 1)[1].split(",", 1)[0].strip()
    return int(part.rsplit(":", 1)[1])


def _say(message: str) -> None:
    print(f"vpod up: {message}", file=sys.stderr, flush=True)


def _cloud_pod(state: UpState, cloud: bool) -> Pod | None:
    if not cloud or state.cloud_pod is None:
        return None
    try:
        return shape(state.cloud_pod)
    except InvalidSpec as exc:
        fail(f"--cloud-pod: {exc}", 2)


def _agent_argv(pod: Pod, state: UpState, host: str, admin_port: int) -> list[str]:
    return [
        bin_path("vipu-agent"),
        "--machines",
        str(pod.num_machines),
        "--id-prefix",
        "ag",
        "--machine-type",
        pod.machine_type.name.lower(),
        "--address-base",
        state.address_base,
        "--agent-port",
        str(AGENT_PORT),
        "--register",
        f"{host}:{admin_port}",
        # vpod up is the demo: `vipu-admin create fault` works on its emulated machines.
        "--enable-fault-injection",
    ]


def _prepare(options: UpOptions, claims: AddressClaims) -> tuple[UpState, str | None]:
    """Load the state, settle the mode, and check nothing holds what the pod needs."""
    data_dir = options.data_dir
    state = load_state(data_dir, options.pod, options.address_base, options.cloud_pod, claims)
    switch_from = resolve_mode(data_dir, state, options.mode, options.switch_mode)
    check_ports_free(
        options.host,
        [
            (options.port, "V-IPU user API", "--port"),
            (options.admin_port, "admin API", "--admin-port"),
            (options.http_port, "HTTP API", "--http-port"),
        ],
    )
    check_agent_addresses_free(state.address_base, shape(state.pod).num_machines, data_dir)
    if state.cloud_pod is not None and options.cloud and state.mode == SECURE:
        base = cloud_up.cloud_address_base(state.address_base)
        check_agent_addresses_free(base, shape(state.cloud_pod).num_machines, data_dir)
    return state, switch_from


def run_up(options: UpOptions, *, echo: bool = True) -> None:
    """Start everything, print the ready line, and block until interrupted."""
    options = replace(options, data_dir=options.data_dir.absolute())
    direct_ssh = cloud_up.direct_ssh_argv(options.ssh_direct_ports, options.ssh_direct_bind)
    data_dir = options.data_dir
    data_dir.mkdir(parents=True, exist_ok=True)
    with _exclusive(data_dir), contextlib.closing(AddressClaims()) as claims:
        state, switch_from = _prepare(options, claims)
        pod = shape(state.pod)
        logs = data_dir / "logs"
        logs.mkdir(exist_ok=True)
        secure = state.mode == SECURE
        cloud = options.cloud and secure  # the cloud serves tenants only with authentication
        if switch_from == SECURE:
            run_init(data_dir, "--insecure", logs / SERVER_OUTPUT)
        save_state(data_dir, state)
        server_argv = [
            bin_path("vipu-server"),
            "--data-dir",
            str(data_dir),
            "--host",
            options.host,
            "--port",
            str(options.port),
            "--admin-port",
            str(options.admin_port),
            "--http-port",
            str(options.http_port),
            "--log-file",  # rotated by size (vipu-server's --log-max-bytes, --log-backups)
            str(logs / SERVER_LOG),
        ]
        admin: tuple[str, str] | None = None
        if secure:
            server_argv.append("--secure")
            admin = admin_credentials(data_dir, logs / SERVER_OUTPUT)
            server_argv += ["--metrics-token-file", str(ensure_metrics_token(data_dir))]
        cloud_pod = _cloud_pod(state, cloud)
        if cloud:
            cloud_up.write_cloud_settings(data_dir)
            if options.unsafe_shared_host:
                server_argv.append("--unsafe-shared-host")
            server_argv += direct_ssh
        else:
            server_argv.append("--no-cloud")
        _Run(options, state, pod, cloud_pod, admin, cloud=cloud, echo=echo).run(server_argv, logs)


@dataclass
class _Run:
    """One run of ``vpod up`` once the data directory is settled: children, setup, watch."""

    options: UpOptions
    state: UpState
    pod: Pod
    cloud_pod: Pod | None
    admin: tuple[str, str] | None
    _: KW_ONLY
    cloud: bool
    echo: bool
    server: Child | None = field(default=None, init=False)
    agents: list[Supervised] = field(default_factory=list, init=False)
    progress: StartProgress = field(default_factory=StartProgress, init=False)

    def run(self, server_argv: list[str], logs: Path) -> None:
        stop = threading.Event()
        previous = {
            sig: signal.signal(sig, lambda *_: stop.set())
            for sig in (signal.SIGINT, signal.SIGTERM)
        }
        try:
            self._start(server_argv, logs)
            while not stop.is_set():
                assert self.server is not None
                code = self.server.proc.poll()
                if code is not None:
                    fail(
                        f"vipu-server exited with code {code}: {self.server.last_error()}"
                        f" (see {self.server.log_path} and {SERVER_LOG} beside it)"
                    )
                for agents in self.agents:
                    agents.check()
                stop.wait(0.25)
        except Unauthenticated:
            self._admin_key_refused()
        except VpodError as exc:
            fail(f"setting up the pod failed: {exc}")
        except grpc.RpcError as exc:  # issuing the agents' token
            if exc.code() is grpc.StatusCode.UNAUTHENTICATED:
                self._admin_key_refused()
            fail(f"setting up the pod failed: {exc.details()}")
        finally:
            self.progress.close()
            for agents in reversed(self.agents):
                agents.stop()
            if self.server is not None:
                self.server.stop()
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        if self.echo:
            print("vpod stopped", flush=True)

    def _admin_key_refused(self) -> NoReturn:
        """The administrator's key vpod up keeps was refused: most likely it was replaced
        (`vipu-admin update user admin --new-key`) and the file still holds the old one."""
        data_dir = self.options.data_dir
        path = data_dir / ADMIN_CONFIG
        fail(
            f"setting up the pod failed: the controller refuses the administrator's key in"
            f" {path} (was it replaced with `vipu-admin update user ... --new-key`?): put the"
            f" current key in that file, or issue a new one with vipu-server --init --secure"
            f" --new-admin-key --data-dir {shlex.quote(str(data_dir))}, then run vpod up again"
        )

    def _start(self, server_argv: list[str], logs: Path) -> None:
        options, state, pod, progress = self.options, self.state, self.pod, self.progress
        progress.step("starting the controller")
        self.server = Child("vipu-server", server_argv, logs / SERVER_OUTPUT)
        ready = self.server.wait_ready(START_TIMEOUT_S)
        user_port = _port_of(ready, "user API")
        admin_port = _port_of(ready, "admin API")
        http_port = _port_of(ready, "HTTP")
        agent_argv = _agent_argv(pod, state, options.host, admin_port)
        agent_argv += ["--key-file", str(ensure_agent_key(options.data_dir))]
        agent_env: dict[str, str] = {}
        if self.admin is not None:  # a secure controller admits agents with a token only
            target = f"{options.host}:{admin_port}"
            agent_env["VIPU_AGENT_TOKEN"] = ensure_agent_token(target, self.admin, options.data_dir)
        progress.step(f"starting {pod.num_machines} emulated IPU-Machines")
        main = self._supervise("vipu-agent", agent_argv, logs / "agents.log", agent_env)
        gpus = None
        if self.cloud:  # the emulated GPU hosts register while the pods are set up
            url = f"http://{options.host}:{http_port}"
            gpu_argv = cloud_up.gpu_agent_argv(options.data_dir, url)
            gpus = self._supervise("vpod-gpu-agent", gpu_argv, logs / "gpu-agents.log", agent_env)
        main.child.wait_ready(START_TIMEOUT_S)
        ids = [f"ag{i}" for i in range(1, pod.num_machines + 1)]
        cloud_ids: list[str] = []
        if self.cloud_pod is not None:
            progress.step(
                f"starting {self.cloud_pod.num_machines} emulated IPU-Machines for the cloud"
            )
            argv = cloud_up.cloud_agent_argv(agent_argv, self.cloud_pod, state.address_base)
            extra = self._supervise(
                "vipu-agent (cloud pod)", argv, logs / "cloud-agents.log", agent_env
            )
            extra.child.wait_ready(START_TIMEOUT_S)
            cloud_ids = cloud_up.cloud_agent_ids(self.cloud_pod)
        user_id, access_key = self.admin if self.admin is not None else ("", "")
        endpoint = Endpoint(
            options.host,
            admin_port,
            user_id=user_id,
            access_key=access_key,
            timeout_s=SETUP_CALL_TIMEOUT_S,
        )
        with AdminClient(endpoint) as admin_api:
            wait_for_agents(admin_api, ids + cloud_ids, START_TIMEOUT_S, progress.registered)
            progress.step("setting up the cluster, the default allocation and the default user")
            ensure_cluster(admin_api, pod, ids)
            if self.cloud_pod is not None:
                cloud_up.ensure_cloud_cluster(admin_api, self.cloud_pod, cloud_ids)
            ensure_default_allocation(admin_api, pod, state, _say)
            credentials = ensure_user(admin_api, state)
        save_state(options.data_dir, state)
        config = write_cli_config(
            options.data_dir, options.host, user_port, admin_port, credentials
        )
        cloud_line = ""
        if self.cloud:
            progress.step("setting up the cloud and its GPU hosts")
            url = f"http://{options.host}:{http_port}"
            cloud_line = cloud_up.bootstrap_cloud(options.data_dir, url)
            if gpus is not None:
                gpus.child.wait_ready(START_TIMEOUT_S)
            late = cloud_up.wait_for_gpu_hosts(options.data_dir, url, START_TIMEOUT_S)
            if late is not None:
                _say(f"vpod cloud: {late} (see {logs / 'gpu-agents.log'})")
        elif options.cloud and state.mode == OPEN:
            cloud_line = "vpod cloud: off in open mode (tenants need authentication: drop --open)"
        admin_hint = ""
        if self.admin is not None:
            admin_config = write_admin_config(
                options.data_dir, options.host, user_port, admin_port, self.admin
            )
            admin_hint = (
                f" (admin: vipu-admin --config {shlex.quote(str(admin_config))} list agents)"
            )
        progress.close()
        if self.echo:
            if cloud_line:  # before the ready line, which says everything is up
                print(cloud_line, flush=True)
            print(
                f"vpod is up: {pod.machine_type.value} {state.pod}"
                f" ({pod.num_machines} machines, {pod.num_machines * IPUS_PER_MACHINE} IPUs),"
                f" user API {options.host}:{user_port}, admin API {options.host}:{admin_port},"
                f" HTTP http://{options.host}:{http_port}, web console"
                f" http://{options.host}:{http_port}/. Next: export"
                f" VIPU_CLI_CONFIG={shlex.quote(str(config))} && vipu create partition p1 --size 4"
                + admin_hint,
                flush=True,
            )

    def _supervise(
        self, name: str, argv: list[str], log_path: Path, env: dict[str, str]
    ) -> Supervised:
        supervised = Supervised(name, lambda: Child(name, argv, log_path, env), _say)
        self.agents.append(supervised)
        return supervised
