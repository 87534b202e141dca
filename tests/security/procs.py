"""Real processes for the security tests: ``vipu-server`` and ``vipu-agent`` on loopback.

Every server runs on ports chosen by the kernel (``--port 0`` ...) and says
where it listens in its ready line; every agent process emulates a few
machines on 127.0.0.1 and registers with the server's admin endpoint. The
tests then talk to them as any client would: generated gRPC stubs, httpx,
and the real ``vipu``/``vipu-admin`` console scripts.
"""

from __future__ import annotations

import os
import re
import resource
import signal
import subprocess
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import grpc
from click.testing import CliRunner, Result

from vpod.launch.server_main import main as vipu_server
from vpod.wire import admin_pb2 as apb
from vpod.wire import admin_pb2_grpc as apb_grpc

BIN = Path(sys.executable).parent
READY_TIMEOUT_S = 90.0
CALL_TIMEOUT_S = 30.0
"""A safety net for a hung call, not a performance threshold."""

Metadata = tuple[tuple[str, str], ...]


def credentials(user_id: str, key: str) -> Metadata:
    """The gRPC metadata naming a caller (as the CLIs send it)."""
    return (("vipu-user-id", user_id), ("vipu-access-key", key))


def run_tool(
    tool: str, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run a console script of this environment to completion."""
    return subprocess.run(
        [str(BIN / tool), *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
        check=False,
    )


def vipu_server_in_process(*args: str) -> Result:
    """``vipu-server ARGS`` run in this process: for what exits before serving (fast)."""
    return CliRunner().invoke(vipu_server, list(args), catch_exceptions=False)


class _ReadyLine:
    """Reads a child's stdout in a thread until a line starting with ``prefix`` appears."""

    def __init__(self, proc: subprocess.Popen[str], prefix: str) -> None:
        self.lines: list[str] = []
        self._prefix = prefix
        self._found = threading.Event()
        threading.Thread(target=self._pump, args=(proc,), daemon=True).start()

    def _pump(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            self.lines.append(line)
            if line.startswith(self._prefix):
                self._found.set()
        self._found.set()

    def wait(self) -> str | None:
        self._found.wait(READY_TIMEOUT_S)
        return next((x.strip() for x in self.lines if x.startswith(self._prefix)), None)


def _stop(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@dataclass
class Server:
    """A running ``vipu-server``."""

    data_dir: Path
    proc: subprocess.Popen[str]
    ready_line: str
    log: Path

    def _port(self, label: str) -> int:
        match = re.search(label + r" \S*?:(\d+)", self.ready_line)
        assert match, f"no {label} in {self.ready_line!r}"
        return int(match[1])

    @property
    def user_target(self) -> str:
        return f"127.0.0.1:{self._port('user API')}"

    @property
    def admin_target(self) -> str:
        return f"127.0.0.1:{self._port('admin API')}"

    @property
    def http_port(self) -> int:
        return self._port("HTTP")

    def stop(self) -> int:
        _stop(self.proc)
        return self.proc.returncode


def start_server(data_dir: Path, *args: str, nofile: int | None = None) -> Server:
    """``vipu-server --data-dir DIR --port 0 ... ARGS``, once its ready line is out; with
    ``nofile``, under that limit on open files."""

    def limit_files() -> None:
        if nofile is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))

    log = data_dir / "server.log"
    data_dir.mkdir(parents=True, exist_ok=True)
    with log.open("a") as err:
        proc = subprocess.Popen(
            [
                str(BIN / "vipu-server"),
                "--data-dir",
                str(data_dir),
                "--port",
                "0",
                "--admin-port",
                "0",
                "--http-port",
                "0",
                "--agent-timeout",
                "5",
                *args,
            ],
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
            start_new_session=True,
            preexec_fn=limit_files,
        )
    line = _ReadyLine(proc, "vipu-server ready:").wait()
    if line is None:
        _stop(proc)
        raise AssertionError(f"vipu-server did not start:\n{log.read_text()[-3000:]}")
    return Server(data_dir=data_dir, proc=proc, ready_line=line, log=log)


@dataclass
class Agents:
    """A ``vipu-agent`` process emulating several machines on 127.0.0.1."""

    proc: subprocess.Popen[str]
    ids: list[str] = field(default_factory=list)

    def stop(self) -> None:
        _stop(self.proc)


def issue_agent_token(admin: apb_grpc.AdminServiceStub, metadata: Metadata) -> str:
    """A new agent registration token (what a --secure controller asks agents for)."""
    reply = admin.CreateAgentToken(
        apb.CreateAgentTokenRequest(label="tests"), metadata=metadata, timeout=CALL_TIMEOUT_S
    )
    return str(reply.token)


def start_agents(
    register: str,
    machines: int,
    log: Path,
    *,
    prefix: str = "ag",
    extra: Sequence[str] = (),
    token: str = "",
) -> Agents:
    """``vipu-agent`` registering with ``register``; ``token`` goes in VIPU_AGENT_TOKEN."""
    env = {**os.environ, "VIPU_AGENT_TOKEN": token}
    with log.open("a") as err:
        proc = subprocess.Popen(
            [
                str(BIN / "vipu-agent"),
                "--machines",
                str(machines),
                "--id-prefix",
                prefix,
                "--single-address",
                "127.0.0.1",
                "--agent-port",
                "0",
                "--ipuof-server-port",
                "0",
                "--ipuof-rdma-port",
                "0",
                "--no-rdma-listen",
                "--register",
                register,
                "--log-level",
                "info",
                *extra,
            ],
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
            start_new_session=True,
            env=env,
        )
    if _ReadyLine(proc, "vipu-agent ready:").wait() is None:
        _stop(proc)
        raise AssertionError(f"vipu-agent did not start:\n{log.read_text()[-3000:]}")
    return Agents(proc=proc, ids=[f"{prefix}{i}" for i in range(1, machines + 1)])


def wait_for_agents(
    admin: apb_grpc.AdminServiceStub, metadata: Metadata, ids: Sequence[str]
) -> None:
    """Until every agent of ``ids`` has registered (they do so in the background)."""
    pause = threading.Event()
    for _ in range(int(READY_TIMEOUT_S * 10)):
        listed = admin.ListAgents(
            apb.ListAgentsRequest(), metadata=metadata, timeout=CALL_TIMEOUT_S
        )
        if set(ids) <= {a.id for a in listed.agents}:
            return
        pause.wait(0.1)
    raise AssertionError(f"agents {sorted(ids)} did not register")


def secure_channel(target: str, tls_dir: Path, *, client_cert: bool = True) -> grpc.Channel:
    """A TLS channel trusting ``tls_dir/ca.crt``, with its client pair unless told not to."""
    return grpc.secure_channel(
        target,
        grpc.ssl_channel_credentials(
            root_certificates=(tls_dir / "ca.crt").read_bytes(),
            private_key=(tls_dir / "client.key").read_bytes() if client_cert else None,
            certificate_chain=(tls_dir / "client.crt").read_bytes() if client_cert else None,
        ),
    )


def access_key_of(init_output: str) -> str:
    """The key ``vipu-server --init --secure`` printed (``access key: ...``)."""
    match = re.search(r"^access key: (\S+)$", init_output, re.M)
    assert match, f"no access key in {init_output!r}"
    return match[1]
