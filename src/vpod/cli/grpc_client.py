"""Calling the controller: channels, credentials and one translation of gRPC errors.

The CLIs call :meth:`Connection.call` and never see a ``grpc.RpcError``:
every failure becomes a :class:`CliError` whose message is one line a person
can act on and whose exit code follows docs/cli.md "Exit status":

- ``INVALID_ARGUMENT`` from the server: exit 2, like a usage error, since the
  fix is in the command line;
- any other status from the server: exit 1 with the server's sentence;
- the controller cannot be reached (refused, unresolvable, TLS handshake,
  no answer before the deadline): exit 1 with "cannot reach the V-IPU
  controller at HOST:PORT: ...; is it running? (check ...)".

A server can itself answer ``UNAVAILABLE`` (agents unreachable); that
sentence is shown as it is. The two are told apart by the text gRPC's core
puts in the details of its own connection failures.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import grpc
from google.protobuf.message import Message

from .config import Endpoint

USER_ID_METADATA = "vipu-user-id"
ACCESS_KEY_METADATA = "vipu-access-key"

EXIT_FAILURE = 1
EXIT_USAGE = 2

Reply = TypeVar("Reply", bound=Message)

_TLS_FAILURES: tuple[tuple[str, str], ...] = (
    ("WRONG_VERSION_NUMBER", "the controller does not use TLS (unset tls-ca)"),
    ("CERTIFICATE_VERIFY_FAILED", "the controller's certificate is not signed by tls-ca"),
    ("handshake failed", "the TLS handshake failed"),
)
_CLOSED = ("Socket closed", "Connection reset", "Broken pipe")
_NETWORK_FAILURES: tuple[tuple[str, str], ...] = (
    ("Connection refused", "connection refused"),
    ("DNS resolution failed", "cannot resolve the host name"),
    ("errors resolving", "cannot resolve the host name"),
    ("address lookup failed", "cannot resolve the host name"),
    ("Name or service not known", "cannot resolve the host name"),
    ("empty address list", "cannot resolve the host name"),
    ("No route to host", "no route to host"),
    ("Network is unreachable", "network is unreachable"),
    ("failed to connect to all addresses", "cannot connect"),
)
"""Fragments of gRPC core's own UNAVAILABLE details, most specific first, and what to say."""
TLS_HINT = "check tls-ca, tls-cert and tls-key"
READY_PROBE_S = 2.0
"""After a deadline, how long to wait for a connection before calling the controller unreachable."""


class CliError(Exception):
    """A failure the CLI reports as one line on stderr, with its exit status."""

    def __init__(self, message: str, exit_code: int = EXIT_FAILURE) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def one_line(text: str) -> str:
    """Collapse whitespace so a message from anywhere prints as one line."""
    return " ".join(text.split())


def _read(path: str, key: str) -> bytes:
    try:
        return Path(path).expanduser().read_bytes()
    except OSError as exc:
        raise CliError(f"cannot read {key} file {path}: {exc.strerror}", EXIT_USAGE) from None


def open_channel(endpoint: Endpoint) -> grpc.Channel:
    """A channel to ``endpoint``: TLS when ``tls-ca`` is set (mutual with cert and key)."""
    if not endpoint.secure:
        return grpc.insecure_channel(endpoint.target)
    if bool(endpoint.tls_cert) != bool(endpoint.tls_key):
        raise CliError(
            "mutual TLS needs both tls-cert and tls-key: set both or neither", EXIT_USAGE
        )
    credentials = grpc.ssl_channel_credentials(
        root_certificates=_read(endpoint.tls_ca, "tls-ca"),
        private_key=_read(endpoint.tls_key, "tls-key") if endpoint.tls_key else None,
        certificate_chain=_read(endpoint.tls_cert, "tls-cert") if endpoint.tls_cert else None,
    )
    options: list[tuple[str, Any]] = []
    if endpoint.tls_server_name:
        options.append(("grpc.ssl_target_name_override", endpoint.tls_server_name))
    return grpc.secure_channel(endpoint.target, credentials, options=options)


class Connection:
    """One endpoint of the controller, opened on first use; ``hint`` says where it came from."""

    def __init__(self, endpoint: Endpoint, *, hint: str) -> None:
        self.endpoint = endpoint
        self.hint = hint
        self._channel: grpc.Channel | None = None

    @property
    def channel(self) -> grpc.Channel:
        if self._channel is None:
            self._channel = open_channel(self.endpoint)
        return self._channel

    def stub(self, factory: Callable[[grpc.Channel], Any]) -> Any:
        """A generated stub (``UserServiceStub`` ...) on this connection's channel."""
        return factory(self.channel)

    def metadata(self) -> tuple[tuple[str, str], ...]:
        """The credentials, sent only when configured."""
        pairs = []
        if self.endpoint.user_id:
            pairs.append((USER_ID_METADATA, self.endpoint.user_id))
        if self.endpoint.access_key:
            pairs.append((ACCESS_KEY_METADATA, self.endpoint.access_key))
        return tuple(pairs)

    def call(self, method: Callable[..., Reply], request: Message) -> Reply:
        """Call one unary rpc with the deadline and credentials; raise `CliError` on failure."""
        try:
            return method(request, timeout=self.endpoint.timeout_s, metadata=self.metadata())
        except grpc.RpcError as exc:
            raise self.translate(exc) from None

    def close(self) -> None:
        if self._channel is not None:
            self._channel.close()
            self._channel = None

    # -- errors

    def unreachable(self, reason: str, *, tls_hint: str = "") -> CliError:
        where = f"cannot reach the V-IPU controller at {self.endpoint.target}: {reason}"
        if tls_hint:
            return CliError(f"{where}; {tls_hint}")
        return CliError(f"{where}; is it running? (check {self.hint})")

    def _connection_failure(self, details: str) -> CliError | None:
        """The error for gRPC core's own connection failure, or None for a server's status."""
        text = details.lower()
        for fragment, reason in _TLS_FAILURES:
            if fragment.lower() in text:
                return self.unreachable(reason, tls_hint=TLS_HINT)
        if any(fragment.lower() in text for fragment in _CLOSED):
            hint = (
                "if it wants a client certificate, set tls-cert and tls-key"
                if self.endpoint.secure
                else "if it uses TLS, set tls-ca"
            )
            return self.unreachable("the controller closed the connection", tls_hint=hint)
        for fragment, reason in _NETWORK_FAILURES:
            if fragment.lower() in text:
                return self.unreachable(reason)
        return None

    def translate(self, exc: grpc.RpcError) -> CliError:
        """The one line and exit status for a failed call."""
        code: grpc.StatusCode = exc.code()
        details = one_line(exc.details() or "")
        if code is grpc.StatusCode.UNAVAILABLE:
            failure = self._connection_failure(details)
            if failure is not None:
                return failure
        if code is grpc.StatusCode.DEADLINE_EXCEEDED:
            return self._deadline()
        if code is grpc.StatusCode.INVALID_ARGUMENT:
            return CliError(details or "the controller refused the request", EXIT_USAGE)
        if code is grpc.StatusCode.UNIMPLEMENTED:
            return CliError(
                f"the server at {self.endpoint.target} does not serve this call: it is not"
                f" the V-IPU endpoint this command needs (check {self.hint})"
            )
        if code is grpc.StatusCode.UNAUTHENTICATED and not self.endpoint.user_id:
            return CliError(
                f"{details or 'the controller wants credentials'}"
                " (set --api-user-id and --api-access-key, or use your vipu-cli.hcl)"
            )
        return CliError(details or f"the controller answered {code.name} without a reason")

    def _deadline(self) -> CliError:
        """Deadline passed: a live but slow controller, or one that cannot be reached?"""
        timeout = f"{self.endpoint.timeout_s:g} s"
        try:  # a live controller connects at once; give a slow network a little longer
            grpc.channel_ready_future(self.channel).result(timeout=READY_PROBE_S)
        except grpc.FutureTimeoutError:
            return self.unreachable(f"no connection within {timeout}")
        return CliError(
            f"the V-IPU controller at {self.endpoint.target} did not answer within {timeout}:"
            " raise --timeout, or look at the controller's log"
        )
