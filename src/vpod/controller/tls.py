"""TLS for the controller's three endpoints: the material, and the server side of it.

``vipu-server --tls-init`` writes a small private PKI into ``DATA_DIR/tls``:

- ``ca.crt``/``ca.key``: a certificate authority made for this controller;
- ``server.crt``/``server.key``: the endpoints' certificate, signed by the CA,
  valid for ``localhost``, ``127.0.0.1``, the listen host and any
  ``--tls-san`` names or addresses;
- ``client.crt``/``client.key``: a client certificate signed by the CA, for
  the CLIs (``tls-cert``/``tls-key`` in ``vipu-cli.hcl``) and agents
  (``vipu-agent --tls-cert/--tls-key``) when the server asks for one.

Keys are ECDSA P-256 (small, fast, and every TLS stack here speaks them),
written with mode 0600. ``vipu-server --tls`` then serves the user and
admin gRPC APIs and the HTTP API over TLS from those files (or from the
files named by ``--tls-cert/--tls-key/--tls-ca``); with
``--tls-client-auth`` every endpoint also requires a client certificate
signed by the CA. A site with its own PKI skips ``--tls-init`` and names its
files instead.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import ssl
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

TLS_DIR = "tls"
CA_DAYS = 3650
LEAF_DAYS = 825
"""The longest leaf lifetime common TLS clients accept."""
DEFAULT_SANS = ("localhost", "127.0.0.1")
_UNSPECIFIED = {"0.0.0.0", "::", ""}


class TlsSetupError(Exception):
    """TLS material is missing, unreadable or inconsistent; the message says what to do."""


class _TlsFile:
    """One file of :class:`TlsFiles`, by its name in the directory."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __get__(self, files: TlsFiles, owner: type[TlsFiles]) -> Path:
        return files.directory / self.name


@dataclass(frozen=True)
class TlsFiles:
    """Where ``--tls-init`` writes (and ``--tls`` reads) the six files."""

    directory: Path

    ca_cert = _TlsFile("ca.crt")
    ca_key = _TlsFile("ca.key")
    server_cert = _TlsFile("server.crt")
    server_key = _TlsFile("server.key")
    client_cert = _TlsFile("client.crt")
    client_key = _TlsFile("client.key")

    @classmethod
    def in_data_dir(cls, data_dir: Path) -> TlsFiles:
        return cls(data_dir / TLS_DIR)

    def all(self) -> tuple[Path, ...]:
        return (
            self.ca_cert,
            self.ca_key,
            self.server_cert,
            self.server_key,
            self.client_cert,
            self.client_key,
        )

    def complete(self) -> bool:
        return all(p.exists() for p in self.all())


@dataclass(frozen=True)
class ServerTls:
    """How the endpoints serve TLS: certificate, key, and the CA that signs clients."""

    cert: Path
    key: Path
    ca: Path | None = None
    require_client_auth: bool = False

    @classmethod
    def from_data_dir(cls, data_dir: Path, *, require_client_auth: bool = False) -> ServerTls:
        files = TlsFiles.in_data_dir(data_dir)
        return cls(files.server_cert, files.server_key, files.ca_cert, require_client_auth)

    def check(self) -> None:
        """TlsSetupError unless every file needed can be read and the pair loads."""
        if self.require_client_auth and self.ca is None:
            raise TlsSetupError(
                "--tls-client-auth needs the CA that signs client certificates: give --tls-ca"
            )
        for path, what in ((self.cert, "certificate"), (self.key, "key"), (self.ca, "CA")):
            if path is not None and not path.is_file():
                raise TlsSetupError(
                    f"TLS {what} {path} does not exist: run `vipu-server --tls-init` (same"
                    " --data-dir) or name your own files with --tls-cert/--tls-key/--tls-ca"
                )
        try:
            context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            context.load_cert_chain(self.cert, self.key)
            if self.ca is not None:
                context.load_verify_locations(self.ca)
        except (ssl.SSLError, OSError, ValueError) as exc:
            raise TlsSetupError(
                f"cannot use TLS files {self.cert} and {self.key}: {exc}; check that the key"
                " belongs to the certificate and both are PEM"
            ) from None

    def grpc_credentials(self) -> grpc.ServerCredentials:
        ca = self.ca.read_bytes() if self.ca is not None else None
        return grpc.ssl_server_credentials(
            [(self.key.read_bytes(), self.cert.read_bytes())],
            root_certificates=ca,
            require_client_auth=self.require_client_auth,
        )

    def uvicorn_options(self) -> dict[str, Any]:
        """Keyword arguments for ``uvicorn.Config`` serving HTTPS the same way."""
        options: dict[str, Any] = {"ssl_certfile": str(self.cert), "ssl_keyfile": str(self.key)}
        if self.ca is not None:
            options["ssl_ca_certs"] = str(self.ca)
        options["ssl_cert_reqs"] = ssl.CERT_REQUIRED if self.require_client_auth else ssl.CERT_NONE
        return options


# -- making the material ---------------------------------------------------------------------


def subject_alt_names(hosts: Iterable[str]) -> list[x509.GeneralName]:
    """Names a server certificate is valid for: defaults first, no duplicates, no ``0.0.0.0``."""
    names: list[x509.GeneralName] = []
    seen: set[str] = set()
    for raw in (*DEFAULT_SANS, *hosts):
        host = raw.strip().strip("[]")
        if host in _UNSPECIFIED or host.lower() in seen:
            continue
        seen.add(host.lower())
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    return names


def write_tls_material(
    files: TlsFiles, *, hosts: Sequence[str], now: datetime.datetime | None = None
) -> list[Path]:
    """Write a CA, a server and a client certificate into ``files.directory``; return the paths.

    Refuses (TlsSetupError) when some of the files exist: replacing a CA
    silently would lock out every client that trusts the old one.
    """
    existing = [p for p in files.all() if p.exists()]
    if existing:
        raise TlsSetupError(
            f"{files.directory} holds TLS material already ({existing[0].name} ...): keep it,"
            " or move the directory away to make new certificates"
        )
    files.directory.mkdir(parents=True, exist_ok=True)
    start = (now or datetime.datetime.now(datetime.UTC)) - datetime.timedelta(minutes=5)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = _name("vpod controller CA")
    ca_cert = (
        _builder(ca_name, ca_name, ca_key, start, CA_DAYS)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(_key_usage(key_cert_sign=True, crl_sign=True), critical=True)
        .add_extension(
            x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    server_key, server_cert = _leaf(
        "vpod controller",
        ca_cert,
        ca_key,
        start,
        ExtendedKeyUsageOID.SERVER_AUTH,
        subject_alt_names(hosts),
    )
    client_key, client_cert = _leaf(
        "vipu-client", ca_cert, ca_key, start, ExtendedKeyUsageOID.CLIENT_AUTH, []
    )
    _write_cert(files.ca_cert, ca_cert)
    _write_key(files.ca_key, ca_key)
    _write_cert(files.server_cert, server_cert)
    _write_key(files.server_key, server_key)
    _write_cert(files.client_cert, client_cert)
    _write_key(files.client_key, client_key)
    return list(files.all())


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def _builder(
    subject: x509.Name,
    issuer: x509.Name,
    key: ec.EllipticCurvePrivateKey,
    start: datetime.datetime,
    days: int,
) -> x509.CertificateBuilder:
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(start + datetime.timedelta(days=days))
    )


_KEY_USAGES = (
    "digital_signature",
    "content_commitment",
    "key_encipherment",
    "data_encipherment",
    "key_agreement",
    "key_cert_sign",
    "crl_sign",
    "encipher_only",
    "decipher_only",
)


def _key_usage(**granted: bool) -> x509.KeyUsage:
    """What a key may do: only what is named (a CA signs certificates, a leaf agrees keys)."""
    return x509.KeyUsage(**(dict.fromkeys(_KEY_USAGES, False) | granted))


def _leaf(
    common: str,
    ca_cert: x509.Certificate,
    ca_key: ec.EllipticCurvePrivateKey,
    start: datetime.datetime,
    usage: x509.ObjectIdentifier,
    sans: list[x509.GeneralName],
) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    key = ec.generate_private_key(ec.SECP256R1())
    builder = (
        _builder(_name(common), ca_cert.subject, key, start, LEAF_DAYS)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_key_usage(digital_signature=True, key_agreement=True), critical=True)
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
            critical=False,
        )
    )
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    return key, builder.sign(ca_key, hashes.SHA256())


def _write_cert(path: Path, cert: x509.Certificate) -> None:
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))


def _write_key(path: Path, key: ec.EllipticCurvePrivateKey) -> None:
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "wb") as handle:
        handle.write(pem)
