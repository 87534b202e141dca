"""vipu-server --tls-init's certificates, and the checks --tls makes before serving."""

from __future__ import annotations

import ipaddress
import stat
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID

from vpod.controller.tls import ServerTls, TlsFiles, TlsSetupError
from vpod.controller.tls_material import subject_alt_names, write_tls_material


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> TlsFiles:
    made = TlsFiles(tmp_path_factory.mktemp("tls") / "tls")
    write_tls_material(made, hosts=["10.1.2.3", "ctl.example", "0.0.0.0", "LOCALHOST"])
    return made


def load(path: Path) -> x509.Certificate:
    return x509.load_pem_x509_certificate(path.read_bytes())


def test_server_and_client_certificates_are_signed_by_the_ca(files: TlsFiles) -> None:
    ca = load(files.ca_cert)
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    for leaf, usage in (
        (files.server_cert, ExtendedKeyUsageOID.SERVER_AUTH),
        (files.client_cert, ExtendedKeyUsageOID.CLIENT_AUTH),
    ):
        cert = load(leaf)
        cert.verify_directly_issued_by(ca)
        assert not cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
        assert list(cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value) == [usage]


def test_the_server_certificate_names_localhost_loopback_and_the_hosts_given(
    files: TlsFiles,
) -> None:
    """Defaults first, then the hosts; 0.0.0.0 (no one's address) and repeats left out."""
    names = (
        load(files.server_cert)
        .extensions.get_extension_for_class(x509.SubjectAlternativeName)
        .value
    )
    assert names.get_values_for_type(x509.DNSName) == ["localhost", "ctl.example"]
    assert names.get_values_for_type(x509.IPAddress) == [
        ipaddress.ip_address("127.0.0.1"),
        ipaddress.ip_address("10.1.2.3"),
    ]


def test_private_keys_are_readable_by_their_owner_only(files: TlsFiles) -> None:
    for key in (files.ca_key, files.server_key, files.client_key):
        assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert files.complete()


def test_existing_material_is_never_replaced(files: TlsFiles) -> None:
    before = files.ca_cert.read_bytes()
    with pytest.raises(TlsSetupError, match="holds TLS material already"):
        write_tls_material(files, hosts=[])
    assert files.ca_cert.read_bytes() == before


def test_bracketed_ipv6_is_an_address() -> None:
    names = subject_alt_names(["[::1]", "::"])
    assert x509.IPAddress(ipaddress.ip_address("::1")) in names
    assert len(names) == 3


def test_the_written_files_pass_the_serving_check(files: TlsFiles) -> None:
    tls = ServerTls(files.server_cert, files.server_key, files.ca_cert, require_client_auth=True)
    tls.check()
    options = tls.uvicorn_options()
    assert options["ssl_ca_certs"] == str(files.ca_cert)
    assert options["ssl_cert_reqs"] == 2  # ssl.CERT_REQUIRED


def test_client_auth_without_a_ca_is_refused(files: TlsFiles) -> None:
    with pytest.raises(TlsSetupError, match="give --tls-ca"):
        ServerTls(files.server_cert, files.server_key, None, require_client_auth=True).check()


def test_a_key_that_is_not_the_certificates_is_refused(files: TlsFiles) -> None:
    with pytest.raises(TlsSetupError, match="check that the key belongs to the certificate"):
        ServerTls(files.server_cert, files.client_key).check()


def test_missing_files_name_the_command_that_makes_them(tmp_path: Path) -> None:
    with pytest.raises(TlsSetupError, match="run `vipu-server --tls-init`"):
        ServerTls.from_data_dir(tmp_path).check()
