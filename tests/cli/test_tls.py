"""TLS: with tls-ca the CLIs use a secure channel; with tls-cert/tls-key, mutual TLS."""

from __future__ import annotations

import datetime
import ipaddress
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import grpc
import pytest
from click.testing import CliRunner, Result
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tests.cli.fake_controller import FakeState, RunningFake, serve
from vpod.cli.vipu_main import cli as vipu_cli


@dataclass
class Pem:
    key: bytes
    cert: bytes


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def issue_certificate(common: str, issuer: Pem | None, *, ca: bool = False) -> Pem:
    """An EC key and a certificate for it, signed by ``issuer`` (self-signed when None)."""
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    signer_key = key if issuer is None else serialization.load_pem_private_key(issuer.key, None)
    issuer_name = (
        _name(common) if issuer is None else x509.load_pem_x509_certificate(issuer.cert).subject
    )
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(common))
        .issuer_name(issuer_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if not ca:
        builder = builder.add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
    assert isinstance(signer_key, ec.EllipticCurvePrivateKey)
    cert = builder.sign(signer_key, hashes.SHA256())
    return Pem(
        key=key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ),
        cert=cert.public_bytes(serialization.Encoding.PEM),
    )


@dataclass
class Pki:
    ca: Path
    server: Pem
    ca_pem: Pem
    client_cert: Path
    client_key: Path


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    root = tmp_path_factory.mktemp("pki")
    ca = issue_certificate("vpod test CA", None, ca=True)
    server = issue_certificate("controller", ca)
    client = issue_certificate("alice", ca)
    (root / "ca.pem").write_bytes(ca.cert)
    (root / "client.pem").write_bytes(client.cert)
    (root / "client.key").write_bytes(client.key)
    return Pki(root / "ca.pem", server, ca, root / "client.pem", root / "client.key")


@pytest.fixture(params=[False, True], ids=["tls", "mutual-tls"])
def secure_fake(request: pytest.FixtureRequest, pki: Pki) -> Iterator[tuple[RunningFake, bool]]:
    mutual: bool = request.param
    credentials = grpc.ssl_server_credentials(
        [(pki.server.key, pki.server.cert)],
        root_certificates=pki.ca_pem.cert if mutual else None,
        require_client_auth=mutual,
    )
    with serve(FakeState(), server_credentials=credentials) as running:
        yield running, mutual


def run(port: int, env: dict[str, str]) -> Result:
    base = {"VIPU_CLI_API_HOST": "127.0.0.1", "VIPU_CLI_API_PORT": str(port)}
    return CliRunner().invoke(vipu_cli, ["--server-version"], env={**base, **env}, prog_name="vipu")


def test_secure_channel_with_the_ca(secure_fake: tuple[RunningFake, bool], pki: Pki) -> None:
    """tls-ca (plus tls-cert/tls-key when the server asks for a client certificate) connects."""
    fake, mutual = secure_fake
    env = {"VIPU_CLI_TLS_CA": str(pki.ca)}
    if mutual:
        env |= {"VIPU_CLI_TLS_CERT": str(pki.client_cert), "VIPU_CLI_TLS_KEY": str(pki.client_key)}
    result = run(fake.user_port, env)
    assert result.exit_code == 0, result.stderr
    assert result.stdout.startswith("version: 1.18.0\n")


def test_plain_client_cannot_reach_a_tls_controller(
    secure_fake: tuple[RunningFake, bool],
) -> None:
    """Without tls-ca the CLI speaks plaintext; the error suggests setting tls-ca."""
    fake, _ = secure_fake
    result = run(fake.user_port, {})
    assert result.exit_code == 1
    assert result.stderr == (
        f"vipu: error: cannot reach the V-IPU controller at 127.0.0.1:{fake.user_port}:"
        " the controller closed the connection; if it uses TLS, set tls-ca\n"
    )


def test_certificate_from_another_ca_is_named(
    secure_fake: tuple[RunningFake, bool], tmp_path: Path
) -> None:
    """A tls-ca that did not sign the controller's certificate: said so, exit 1."""
    fake, _ = secure_fake
    other = tmp_path / "other-ca.pem"
    other.write_bytes(issue_certificate("another CA", None, ca=True).cert)
    result = run(fake.user_port, {"VIPU_CLI_TLS_CA": str(other)})
    assert result.exit_code == 1
    assert "the controller's certificate is not signed by tls-ca" in result.stderr


def test_missing_client_certificate_is_suggested(pki: Pki) -> None:
    """A controller that wants a client certificate: the error says to set tls-cert/tls-key."""
    credentials = grpc.ssl_server_credentials(
        [(pki.server.key, pki.server.cert)],
        root_certificates=pki.ca_pem.cert,
        require_client_auth=True,
    )
    with serve(FakeState(), server_credentials=credentials) as fake:
        result = run(fake.user_port, {"VIPU_CLI_TLS_CA": str(pki.ca)})
    assert result.exit_code == 1
    assert result.stderr.endswith("if it wants a client certificate, set tls-cert and tls-key\n")


def test_tls_client_against_a_plaintext_controller(pki: Pki) -> None:
    """tls-ca set but the controller speaks plaintext: told to unset tls-ca."""
    with serve(FakeState()) as fake:
        result = run(fake.user_port, {"VIPU_CLI_TLS_CA": str(pki.ca)})
    assert result.exit_code == 1
    assert "the controller does not use TLS (unset tls-ca)" in result.stderr


def test_mutual_tls_needs_cert_and_key_together(pki: Pki) -> None:
    """tls-cert without tls-key is a usage error, found before connecting."""
    result = run(1, {"VIPU_CLI_TLS_CA": str(pki.ca), "VIPU_CLI_TLS_CERT": str(pki.client_cert)})
    assert result.exit_code == 2
    assert result.stderr == (
        "vipu: error: mutual TLS needs both tls-cert and tls-key: set both or neither\n"
    )
