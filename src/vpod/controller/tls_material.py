"""Writing the controller's TLS material (``vipu-server --tls-init``): see :mod:`.tls`.

Apart from :mod:`.tls` because it needs ``cryptography`` (a tenth of a
second to import) and only ``--tls-init`` makes certificates; serving reads
the files with :mod:`ssl` and gRPC.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
from collections.abc import Iterable, Sequence
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from .tls import TlsFiles, TlsSetupError

CA_DAYS = 3650
LEAF_DAYS = 825
"""The longest leaf lifetime common TLS clients accept."""
DEFAULT_SANS = ("localhost", "127.0.0.1")
_UNSPECIFIED = {"0.0.0.0", "::", ""}


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
