"""``vpod up``: the embedded default — a controller on SQLite plus an emulated pod, on loopback.

It starts two child processes, ``vipu-server`` and ``vipu-agent`` (every
emulated machine of the pod in one process, each on its own loopback
address), waits for the agents to register, creates the cluster, a default
allocation and a default user the first time, writes ``vipu-cli.hcl`` into the
data directory and prints one line saying what to type next. Ctrl-C (or
SIGTERM) stops both children. Running it again on the same data directory
brings back the same cluster and partitions: the agents register with new
boot ids and the controller configures them again from its store.

What ``vpod up`` decided the first time (pod shape, agent addresses) is kept in
``DATA_DIR/up.json`` so a restart reuses it.

With ``--secure`` the first run initialises the store with
``vipu-server --init --secure``, which creates the administrator ``admin``
and writes its key into ``DATA_DIR/admin.vipu-cli.hcl`` (mode 0600). Every
run reads that file for its own admin calls and rewrites it with the ports
actually in use; ``vipu-cli.hcl`` gets the default user's credentials, as
without ``--secure``. A data directory set up with ``--secure`` must be
started with ``--secure`` again (the controller refuses otherwise).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import ipaddress
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO

from vpod.client import AdminClient, Endpoint, VpodError
from vpod.domain.catalog import IPUS_PER_MACHINE
from vpod.domain.errors import InvalidSpec
from vpod.domain.topology import Pod, shape

from . import cloud_up
from .config import parse_hcl, render_hcl
from .errors import CliFailure, fail
from .up_agent_token import ensure_agent_token
from .vipu_admin_users import write_private

CLUSTER_ID = "cluster"
ALLOCATION_ID = "default"
USER_ID = "default"
AGENT_PORT = 8092
START_TIMEOUT_S = 60.0
SETUP_CALL_TIMEOUT_S = 30.0
"""The deadline of each admin call that sets the pod up."""
ADMIN_CONFIG = "admin.vipu-cli.hcl"
"""Written by ``vipu-server --init --secure``: the administrator's endpoint and credentials."""


@dataclass
class UpState:
    """What the first ``vpod up`` on a data directory chose; later runs reuse it."""

    pod: str
    address_base: str
    user_created: bool = False
    cloud_pod: str | None = None


@dataclass(frozen=True)
class UpOptions:
    data_dir: Path
    pod: str | None
    host: str
    port: int
    admin_port: int
    http_port: int
    address_base: str | None
    secure: bool = False
    cloud: bool = True
    cloud_pod: str | None = None


def _bin(name: str) -> str:
    """The console script next to the running interpreter (the same environment)."""
    candidate = Path(sys.executable).with_name(name)
    return str(candidate) if candidate.exists() else name


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


def _free(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def choose_address_base(data_dir: Path, machines: int) -> str:
    """A 127.X.0.0/16 block whose first addresses are free, X derived from the data dir.

    Deriving X from the directory makes a restart land on the same addresses;
    probing makes two instances side by side land on different ones.
    """
    digest = hashlib.sha256(str(data_dir.resolve()).encode()).digest()
    start = 16 + digest[0] % 200
    for offset in range(200):
        second = 16 + (start - 16 + offset) % 200
        base = ipaddress.IPv4Address(f"127.{second}.0.1")
        hosts = [str(base + i) for i in (0, machines - 1)]
        if all(_free(h, AGENT_PORT) for h in hosts):
            return str(base)
    raise CliFailure(
        "no free loopback block for the emulated agents: pass --address-base 127.N.0.1"
    )


def _load_state(data_dir: Path, options: UpOptions) -> UpState:
    path = data_dir / "up.json"
    if path.exists():
        state = UpState(**json.loads(path.read_text()))
        if options.pod and options.pod != state.pod:
            fail(
                f"{data_dir} holds a {state.pod}; start it without --pod, or use another"
                f" --data-dir for a {options.pod}",
                2,
            )
        return state
    pod_name = options.pod or "pod64"
    try:
        pod = shape(pod_name)
    except InvalidSpec as exc:
        fail(str(exc), 2)
    base = options.address_base or choose_address_base(data_dir, pod.num_machines)
    return UpState(pod=pod_name, address_base=base)


def _save_state(data_dir: Path, state: UpState) -> None:
    tmp = data_dir / "up.json.tmp"
    tmp.write_text(json.dumps(asdict(state), indent=2) + "\n")
    tmp.replace(data_dir / "up.json")


class _Child:
    """A child process whose stdout we scan for its ready line and then echo."""

    def __init__(
        self, name: str, argv: list[str], log_path: Path, env: dict[str, str] | None = None
    ) -> None:
        self.name = name
        self.log = log_path.open("a")
        self.proc = subprocess.Popen(
            argv,
            stdout=subprocess.PIPE,
            stderr=self.log,
            text=True,
            start_new_session=True,
            env=None if env is None else {**os.environ, **env},
        )
        self.ready_line: str | None = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._pump, args=(self.proc.stdout,), daemon=True)
        self._thread.start()

    def _pump(self, stream: IO[str] | None) -> None:
        assert stream is not None
        for line in stream:
            if self.ready_line is None and " ready:" in line:
                self.ready_line = line.strip()
                self._ready.set()
            self.log.write(line)
            self.log.flush()
        self._ready.set()

    def wait_ready(self, timeout: float) -> str:
        if not self._ready.wait(timeout) or self.ready_line is None:
            code = self.proc.poll()
            why = (
                f"exited with code {code}" if code is not None else f"not ready in {timeout:.0f} s"
            )
            fail(f"{self.name} {why}: see {self.log.name}")
        return self.ready_line

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


def _wait_for_agents(admin: AdminClient, ids: list[str], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    missing = set(ids)
    while time.monotonic() < deadline:
        missing = set(ids) - {a.id for a in admin.list_agents()}
        if not missing:
            return
        time.sleep(0.1)
    fail(f"agents did not register in {timeout:.0f} s: {', '.join(sorted(missing))}")


def _ensure_cluster(admin: AdminClient, pod: Pod, ids: list[str]) -> None:
    if any(c.id == CLUSTER_ID for c in admin.list_clusters()):
        return
    admin.create_cluster(CLUSTER_ID, ids, num_ilds=len(pod.domains))


def _ensure_allocation(admin: AdminClient, pod: Pod) -> None:
    if any(a.id == ALLOCATION_ID for a in admin.list_allocations()):
        return
    admin.create_allocation(ALLOCATION_ID, CLUSTER_ID, size=pod.num_ipus)


def _write_cli_config(
    options: UpOptions, user_port: int, admin_port: int, credentials: tuple[str, str] | None
) -> Path:
    path = options.data_dir / "vipu-cli.hcl"
    values: dict[str, str | int] = {
        "api-host": options.host,
        "api-port": user_port,
        "admin-api-host": options.host,
        "admin-api-port": admin_port,
    }
    if credentials is None and path.exists():
        from .config import parse_hcl

        old = parse_hcl(path.read_text())
        if old.get("api-user-id") and old.get("api-access-key"):
            credentials = (old["api-user-id"], old["api-access-key"])
    if credentials is not None:
        values["api-user-id"], values["api-access-key"] = credentials
    tmp = path.with_suffix(".tmp")
    tmp.write_text(render_hcl(values))
    os.chmod(tmp, 0o600)
    tmp.replace(path)
    return path


def _ensure_user(admin: AdminClient, state: UpState) -> tuple[str, str] | None:
    if any(u.id == USER_ID for u in admin.list_users()):
        return None
    created = admin.create_user(USER_ID, allocation_ids=[ALLOCATION_ID])
    state.user_created = True
    return USER_ID, created.access_key


def _admin_credentials(options: UpOptions, log_path: Path) -> tuple[str, str]:
    """The administrator's (user id, key) from admin.vipu-cli.hcl (--init writes it first)."""
    path = options.data_dir / ADMIN_CONFIG
    if not path.exists():
        done = subprocess.run(
            [_bin("vipu-server"), "--init", "--secure", "--data-dir", str(options.data_dir)],
            capture_output=True,
            text=True,
            check=False,
        )
        with log_path.open("a") as log:
            log.write(done.stderr)
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["no message"])[-1]
            fail(f"vipu-server --init --secure failed: {last}")
        if not path.exists():
            fail(
                f"the administrator of {options.data_dir} exists but its key is not in {path}:"
                f" give it a new one with vipu-server --init --secure --new-admin-key"
                f" --data-dir {options.data_dir}"
            )
    values = parse_hcl(path.read_text())
    user_id, key = values.get("api-user-id", ""), values.get("api-access-key", "")
    if not user_id or not key:
        fail(f"{path} has no api-user-id and api-access-key: remove it and run vpod up again")
    return user_id, key


def _write_admin_config(
    options: UpOptions, user_port: int, admin_port: int, credentials: tuple[str, str]
) -> Path:
    path = options.data_dir / ADMIN_CONFIG
    values: dict[str, str | int] = {
        "api-host": options.host,
        "api-port": user_port,
        "admin-api-host": options.host,
        "admin-api-port": admin_port,
        "api-user-id": credentials[0],
        "api-access-key": credentials[1],
    }
    write_private(
        path, "# vipu-cli.hcl for the administrator (vpod up --secure)\n" + render_hcl(values)
    )
    return path


def _cloud_pod(state: UpState, options: UpOptions) -> Pod | None:
    """The cloud's own pod, if it has one (``--cloud-pod``; the choice is kept in up.json)."""
    if not options.cloud:
        return None
    if state.cloud_pod is None:
        state.cloud_pod = options.cloud_pod
    elif options.cloud_pod and options.cloud_pod != state.cloud_pod:
        fail(f"{options.data_dir} has a {state.cloud_pod} cloud pod: leave --cloud-pod out", 2)
    if state.cloud_pod is None:
        return None
    try:
        return shape(state.cloud_pod)
    except InvalidSpec as exc:
        fail(f"--cloud-pod: {exc}", 2)


def _port_of(ready_line: str, label: str) -> int:
    # "vipu-server ready: user API 127.0.0.1:8090, admin API 127.0.0.1:8091, HTTP http://..."
    part = ready_line.split(label, 1)[1].split(",", 1)[0].strip()
    return int(part.rsplit(":", 1)[1])


def run_up(options: UpOptions, *, echo: bool = True) -> None:
    """Start everything, print the ready line, and block until interrupted."""
    data_dir = options.data_dir
    data_dir.mkdir(parents=True, exist_ok=True)
    with _exclusive(data_dir):
        state = _load_state(data_dir, options)
        pod = shape(state.pod)
        _save_state(data_dir, state)
        logs = data_dir / "logs"
        logs.mkdir(exist_ok=True)
        server_argv = [
            _bin("vipu-server"),
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
        ]
        admin: tuple[str, str] | None = None
        if options.secure:
            server_argv.append("--secure")
            admin = _admin_credentials(options, logs / "controller.log")
        elif (data_dir / ADMIN_CONFIG).exists():
            fail(f"{data_dir} was set up with --secure: run vpod up --secure", 2)
        cloud_pod = _cloud_pod(state, options)
        if options.cloud:
            cloud_up.write_cloud_settings(data_dir)
        else:
            server_argv.append("--no-cloud")
        children: list[_Child] = []
        stop = threading.Event()
        previous = {
            sig: signal.signal(sig, lambda *_: stop.set())
            for sig in (signal.SIGINT, signal.SIGTERM)
        }
        try:
            server = _Child("vipu-server", server_argv, logs / "controller.log")
            children.append(server)
            ready = server.wait_ready(START_TIMEOUT_S)
            user_port = _port_of(ready, "user API")
            admin_port = _port_of(ready, "admin API")
            http_port = _port_of(ready, "HTTP")
            ids = [f"ag{i}" for i in range(1, pod.num_machines + 1)]
            agent_argv = [
                _bin("vipu-agent"),
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
                f"{options.host}:{admin_port}",
            ]
            agent_env = None
            if admin is not None:  # --secure: agents register with a token
                token = ensure_agent_token(f"{options.host}:{admin_port}", admin, data_dir)
                agent_env = {"VIPU_AGENT_TOKEN": token}
            agents = _Child("vipu-agent", agent_argv, logs / "agents.log", agent_env)
            children.append(agents)
            agents.wait_ready(START_TIMEOUT_S)
            cloud_ids: list[str] = []
            if cloud_pod is not None:
                argv = cloud_up.cloud_agent_argv(agent_argv, cloud_pod, state.address_base)
                cloud_agents = _Child(
                    "vipu-agent (cloud pod)", argv, logs / "cloud-agents.log", agent_env
                )
                children.append(cloud_agents)
                cloud_agents.wait_ready(START_TIMEOUT_S)
                cloud_ids = cloud_up.cloud_agent_ids(cloud_pod)
            user_id, access_key = admin if admin is not None else ("", "")
            endpoint = Endpoint(
                options.host,
                admin_port,
                user_id=user_id,
                access_key=access_key,
                timeout_s=SETUP_CALL_TIMEOUT_S,
            )
            with AdminClient(endpoint) as admin_api:
                _wait_for_agents(admin_api, ids + cloud_ids, START_TIMEOUT_S)
                _ensure_cluster(admin_api, pod, ids)
                if cloud_pod is not None:
                    cloud_up.ensure_cloud_cluster(admin_api, cloud_pod, cloud_ids)
                _ensure_allocation(admin_api, pod)
                credentials = _ensure_user(admin_api, state)
            _save_state(data_dir, state)
            config = _write_cli_config(options, user_port, admin_port, credentials)
            cloud_line = ""
            if options.cloud:
                cloud_url = f"http://{options.host}:{http_port}"
                cloud_line = cloud_up.bootstrap_cloud(data_dir, cloud_url)
            admin_hint = ""
            if admin is not None:
                admin_config = _write_admin_config(options, user_port, admin_port, admin)
                admin_hint = f" (admin: vipu-admin --config {admin_config} list events)"
            if echo:
                if cloud_line:  # before the ready line, which says everything is up
                    print(cloud_line, flush=True)
                print(
                    f"vpod is up: {pod.machine_type.value} {state.pod}"
                    f" ({pod.num_machines} machines, {pod.num_machines * IPUS_PER_MACHINE} IPUs),"
                    f" user API {options.host}:{user_port}, admin API {options.host}:{admin_port},"
                    f" HTTP http://{options.host}:{http_port}, web console"
                    f" http://{options.host}:{http_port}/. Next: export"
                    f" VIPU_CLI_CONFIG={config} && vipu create partition p1 --size 4" + admin_hint,
                    flush=True,
                )
            while not stop.is_set():
                for child in children:
                    code = child.proc.poll()
                    if code is not None:
                        fail(f"{child.name} exited with code {code}: see {child.log.name}")
                stop.wait(0.5)
        except VpodError as exc:
            fail(f"setting up the pod failed: {exc}")
        finally:
            for child in reversed(children):
                child.stop()
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        if echo:
            print("vpod stopped", flush=True)
