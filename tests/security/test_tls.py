"""TLS and mutual TLS end to end: vipu-server --tls-init, --tls, --tls-client-auth.

A controller serving with --tls-client-auth answers only clients holding a
certificate signed by its CA, on all three endpoints: the CLIs (tls-ca,
tls-cert, tls-key in vipu-cli.hcl), agents registering (vipu-agent
--tls-*), and HTTPS clients. Without a certificate, or without TLS, the
connection is refused.
"""

from __future__ import annotations

import ssl
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import grpc
import httpx
import pytest

from vpod.wire import admin_pb2 as apb
from vpod.wire import admin_pb2_grpc as apb_grpc

from .procs import (
    CALL_TIMEOUT_S,
    Agents,
    Server,
    access_key_of,
    credentials,
    issue_agent_token,
    run_tool,
    secure_channel,
    start_agents,
    start_server,
    vipu_server_in_process,
    wait_for_agents,
)

pytestmark = pytest.mark.e2e

T = CALL_TIMEOUT_S


@dataclass
class MtlsPod:
    server: Server
    agents: Agents
    tls: Path
    admin_key: str

    def config(self, *, tls_keys: tuple[str, ...] = ("tls-ca", "tls-cert", "tls-key")) -> Path:
        """A vipu-cli.hcl for the admin with the ports in use and the TLS keys asked for."""
        files = {"tls-ca": "ca.crt", "tls-cert": "client.crt", "tls-key": "client.key"}
        path = self.server.data_dir / f"admin-{len(tls_keys)}.hcl"
        lines = [
            'api-host="127.0.0.1"',
            f"api-port={self.server.user_target.rsplit(':', 1)[1]}",
            f"admin-api-port={self.server.admin_target.rsplit(':', 1)[1]}",
            'api-user-id="admin"',
            f'api-access-key="{self.admin_key}"',
            *(f'{key}="{self.tls / files[key]}"' for key in tls_keys),
        ]
        path.write_text("\n".join(lines) + "\n")
        return path

    def https(self, *, client_cert: bool) -> httpx.Client:
        context = ssl.create_default_context(cafile=str(self.tls / "ca.crt"))
        if client_cert:
            context.load_cert_chain(self.tls / "client.crt", self.tls / "client.key")
        return httpx.Client(
            base_url=f"https://127.0.0.1:{self.server.http_port}", verify=context, timeout=T
        )


@pytest.fixture(scope="module")
def mtls(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MtlsPod]:
    """A secure controller requiring client certificates, and one agent registered over mTLS."""
    data_dir = tmp_path_factory.mktemp("mtls")
    init = vipu_server_in_process(
        "--tls-init", "--init", "--secure", "--tls-client-auth", "--data-dir", str(data_dir)
    )
    assert init.exit_code == 0, init.stderr
    tls = data_dir / "tls"
    server = start_server(data_dir, "--secure", "--tls-client-auth")
    pem = ["--tls-ca", tls / "ca.crt", "--tls-cert", tls / "client.crt"]
    admin_key = access_key_of(init.stdout)
    with secure_channel(server.admin_target, tls) as channel:
        token = issue_agent_token(
            apb_grpc.AdminServiceStub(channel), credentials("admin", admin_key)
        )
    agents = start_agents(
        server.admin_target,
        1,
        data_dir / "agents.log",
        prefix="tls",
        extra=[*map(str, pem), "--tls-key", str(tls / "client.key")],
        token=token,
    )
    pod = MtlsPod(server=server, agents=agents, tls=tls, admin_key=admin_key)
    try:
        with secure_channel(server.admin_target, tls) as channel:
            admin = apb_grpc.AdminServiceStub(channel)
            wait_for_agents(admin, credentials("admin", pod.admin_key), agents.ids)
        yield pod
    finally:
        agents.stop()
        server.stop()


def test_init_wrote_an_admin_config_naming_the_certificates(mtls: MtlsPod) -> None:
    text = (mtls.server.data_dir / "admin.vipu-cli.hcl").read_text()
    for name in ("ca.crt", "client.crt", "client.key"):
        assert str((mtls.tls / name).resolve()) in text


def test_the_clis_work_over_mutual_tls(mtls: MtlsPod) -> None:
    """vipu-admin sees the agent that registered with its client certificate; vipu works too."""
    config = str(mtls.config())
    agents = run_tool("vipu-admin", "--config", config, "list", "agents")
    assert agents.returncode == 0, agents.stderr
    assert "tls1" in agents.stdout
    partitions = run_tool("vipu", "--config", config, "list", "partitions")
    assert partitions.returncode == 0, partitions.stderr


def test_a_cli_without_a_client_certificate_is_refused(mtls: MtlsPod) -> None:
    config = str(mtls.config(tls_keys=("tls-ca",)))
    done = run_tool("vipu-admin", "--config", config, "list", "agents")
    assert done.returncode == 1
    assert "set tls-cert and tls-key" in done.stderr


def test_a_cli_without_tls_is_refused(mtls: MtlsPod) -> None:
    done = run_tool("vipu", "--config", str(mtls.config(tls_keys=())), "list", "partitions")
    assert done.returncode == 1
    assert "if it uses TLS, set tls-ca" in done.stderr


def test_registration_without_a_client_certificate_is_refused(mtls: MtlsPod) -> None:
    """Agent registration needs no access key, so the certificate is what keeps strangers out."""
    request = apb.RegisterAgentRequest(agent_id="rogue", host="127.0.0.1", port=1)
    with secure_channel(mtls.server.admin_target, mtls.tls, client_cert=False) as channel:
        stub = apb_grpc.AgentRegistrationServiceStub(channel)
        with pytest.raises(grpc.RpcError) as caught:
            stub.RegisterAgent(request, timeout=T)
    assert caught.value.code() is grpc.StatusCode.UNAVAILABLE


def test_https_needs_the_client_certificate(mtls: MtlsPod) -> None:
    with mtls.https(client_cert=True) as http:
        assert http.get("/healthz").status_code == 200
        reply = http.get("/api/v1/admin/users", headers={"X-Vipu-User-Id": "admin"})
        assert reply.status_code == 401, "TLS does not replace the access key"
    with mtls.https(client_cert=False) as http, pytest.raises(httpx.TransportError):
        http.get("/healthz")
    with (
        httpx.Client(base_url=f"http://127.0.0.1:{mtls.server.http_port}", timeout=T) as plain,
        pytest.raises(httpx.TransportError),
    ):
        plain.get("/healthz")


def test_the_audit_log_names_the_client_certificate(mtls: MtlsPod) -> None:
    md = credentials("admin", mtls.admin_key)
    with secure_channel(mtls.server.admin_target, mtls.tls) as channel:
        admin = apb_grpc.AdminServiceStub(channel)
        admin.CreateUser(apb.CreateUserRequest(user_id="dave"), metadata=md, timeout=T)
        listed = admin.ListEvents(
            apb.ListEventsRequest(action="create_user", target="dave"), metadata=md, timeout=T
        )
    (event,) = listed.events
    assert event.source.startswith("grpc:ipv4:127.0.0.1:")
    assert event.source.endswith(" cn=vipu-client")


def test_tls_without_client_auth_from_named_files(
    mtls: MtlsPod, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """--tls-cert/--tls-key name the files; clients then need only the CA."""
    server = start_server(
        tmp_path_factory.mktemp("tls-only"),
        "--tls-cert",
        str(mtls.tls / "server.crt"),
        "--tls-key",
        str(mtls.tls / "server.key"),
    )
    try:
        port = server.user_target.rsplit(":", 1)[1]
        args = ("-H", "127.0.0.1", "--api-port", port, "list", "partitions")
        with_ca = run_tool("vipu", *args, env={"VIPU_CLI_TLS_CA": str(mtls.tls / "ca.crt")})
        without = run_tool("vipu", *args)
        context = ssl.create_default_context(cafile=str(mtls.tls / "ca.crt"))
        with httpx.Client(verify=context, timeout=T) as http:
            health = http.get(f"https://127.0.0.1:{server.http_port}/healthz")
    finally:
        server.stop()
    assert with_ca.returncode == 0, with_ca.stderr
    assert without.returncode == 1
    assert "set tls-ca" in without.stderr
    assert health.status_code == 200


def test_tls_init_does_not_replace_existing_material(mtls: MtlsPod) -> None:
    done = vipu_server_in_process("--tls-init", "--data-dir", str(mtls.server.data_dir))
    assert done.exit_code == 1
    assert "holds TLS material already" in done.stderr


def test_serving_tls_without_the_files_says_how_to_make_them(tmp_path: Path) -> None:
    done = vipu_server_in_process("--tls", "--data-dir", str(tmp_path))
    assert done.exit_code == 2
    assert "run `vipu-server --tls-init`" in done.stderr.strip().splitlines()[-1]
