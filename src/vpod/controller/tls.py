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

Making the material is :mod:`.tls_material` (it needs ``cryptography``, which
serving from existing files does not: every controller imports this module).
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc

TLS_DIR = "tls"


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
