"""gRPC channels, credentials and the one translation of gRPC failures, sync and asyncio.

A call is described once, as an :class:`Rpc` (method path, request, reply
type, how to read the reply); :class:`GrpcTransport` runs it on a blocking
channel and :class:`AsyncGrpcTransport` on a ``grpc.aio`` channel. Both send
the configured credentials as metadata (``vipu-user-id``,
``vipu-access-key``) under the endpoint's deadline, and both turn a
``grpc.RpcError`` into the :mod:`.errors` tree through :func:`diagnose`.

A server can itself answer ``UNAVAILABLE`` (its agents are unreachable);
that is :class:`~.errors.Unavailable` with the server's sentence. gRPC's core
answers ``UNAVAILABLE`` too when it cannot connect; those are told apart by
the text core puts in the details, and become :class:`~.errors.Unreachable`
or :class:`~.errors.TlsError` naming the endpoint and what to check.

A call the server refused before running it (a refused HTTP/2 stream, a
server at its limit of concurrent calls) is sent again with jittered
backoff when it may be repeated (:mod:`.retry`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

import grpc
import grpc.aio
from google.protobuf import message_factory
from google.protobuf.descriptor import ServiceDescriptor
from google.protobuf.message import Message

from .config import Endpoint
from .errors import (
    ConfigError,
    DeadlineExceeded,
    InvalidArgument,
    TlsError,
    Unauthenticated,
    Unreachable,
    VpodError,
    WrongEndpoint,
    error_of_code,
    one_line,
)
from .retry import DEFAULT_RETRY, RetryPolicy, refused

USER_ID_METADATA = "vipu-user-id"
ACCESS_KEY_METADATA = "vipu-access-key"
READY_PROBE_S = 2.0
"""After a deadline, how long to wait for a connection before calling the endpoint unreachable."""
TLS_HINT = "check tls-ca, tls-cert and tls-key"
DEFAULT_HINT = "api-host/api-port in vipu-cli.hcl or VIPU_CLI_API_HOST/VIPU_CLI_API_PORT"
DEFAULT_CREDENTIALS_HINT = (
    "set api-user-id and api-access-key in vipu-cli.hcl, or VIPU_CLI_API_USER_ID and"
    " VIPU_CLI_API_ACCESS_KEY"
)

T = TypeVar("T")

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


@dataclass(frozen=True)
class Rpc(Generic[T]):
    """One unary call: ``/package.Service/Method``, its request, reply type and reader."""

    path: str
    request: Message
    reply_type: type[Message]
    parse: Callable[[Any], T]
    idempotent: bool = True
    """May be sent twice: a refusal of the server is retried (see :mod:`.retry`)."""


def nothing(_reply: Message) -> None:
    """The reader of a call whose reply carries nothing the caller needs (a removal, a reset)."""
    return


class Service:
    """A gRPC service of the wire protos, describing its unary calls by method name: the
    path and the reply type come from the service's own declaration."""

    def __init__(self, descriptor: ServiceDescriptor) -> None:
        self.descriptor = descriptor

    def call(
        self, method: str, request: Message, parse: Callable[[Any], T], *, idempotent: bool = True
    ) -> Rpc[T]:
        declared = self.descriptor.methods_by_name[method]
        if request.DESCRIPTOR is not declared.input_type:
            raise TypeError(f"{method} takes a {declared.input_type.full_name}")
        reply_type = message_factory.GetMessageClass(declared.output_type)
        path = f"/{self.descriptor.full_name}/{method}"
        return Rpc(path, request, reply_type, parse, idempotent)


@dataclass(frozen=True)
class Diagnosis:
    """Where a connection points and what to tell a person who must fix it."""

    endpoint: Endpoint
    hint: str = DEFAULT_HINT
    """Where the endpoint came from: named when the controller cannot be reached."""
    credentials_hint: str = DEFAULT_CREDENTIALS_HINT
    """How to give credentials: named when the server wants them and none were sent."""

    def unreachable(self, reason: str) -> Unreachable:
        target = self.endpoint.target
        return Unreachable(
            f"cannot reach the V-IPU controller at {target}: {reason};"
            f" is it running? (check {self.hint})",
            endpoint=target,
        )

    def tls(self, reason: str, hint: str) -> TlsError:
        target = self.endpoint.target
        return TlsError(
            f"cannot reach the V-IPU controller at {target}: {reason}; {hint}", endpoint=target
        )

    def connection_failure(self, details: str) -> VpodError | None:
        """The error for gRPC core's own connection failure, or None for a server's status."""
        text = details.lower()
        for fragment, reason in _TLS_FAILURES:
            if fragment.lower() in text:
                return self.tls(reason, TLS_HINT)
        if any(fragment.lower() in text for fragment in _CLOSED):
            hint = (
                "if it wants a client certificate, set tls-cert and tls-key"
                if self.endpoint.secure
                else "if it uses TLS, set tls-ca"
            )
            return self.tls("the controller closed the connection", hint)
        for fragment, reason in _NETWORK_FAILURES:
            if fragment.lower() in text:
                return self.unreachable(reason)
        return None

    def slow(self) -> DeadlineExceeded:
        """The deadline passed on a controller that accepts connections."""
        target = self.endpoint.target
        return DeadlineExceeded(
            f"the V-IPU controller at {target} did not answer within {self.timeout}:"
            " raise --timeout, or look at the controller's log",
            endpoint=target,
        )

    @property
    def timeout(self) -> str:
        return f"{self.endpoint.timeout_s:g} s"

    def translate(self, code: grpc.StatusCode, raw_details: str) -> VpodError | None:
        """The error for a failed call, or None for DEADLINE_EXCEEDED (the caller probes)."""
        details = one_line(raw_details)
        target = self.endpoint.target
        if code is grpc.StatusCode.UNAVAILABLE:
            failure = self.connection_failure(details)
            if failure is not None:
                return failure
        if code is grpc.StatusCode.DEADLINE_EXCEEDED:
            return None
        if code is grpc.StatusCode.UNIMPLEMENTED:
            return WrongEndpoint(
                f"the server at {target} does not serve this call: it is not"
                f" the V-IPU endpoint this command needs (check {self.hint})",
                endpoint=target,
            )
        if code is grpc.StatusCode.INVALID_ARGUMENT:
            return InvalidArgument(details or "the controller refused the request", endpoint=target)
        if code is grpc.StatusCode.UNAUTHENTICATED and not self.endpoint.user_id:
            return Unauthenticated(
                f"{details or 'the controller wants credentials'} ({self.credentials_hint})",
                endpoint=target,
            )
        message = details or f"the controller answered {code.name} without a reason"
        return error_of_code(code.name, message, endpoint=target)


def _pauses(rpc: Rpc[Any], retry: RetryPolicy, endpoint: Endpoint) -> Iterator[float]:
    """The backoff of one call: none for a call that must not be sent twice."""
    return retry.pauses(endpoint.timeout_s) if rpc.idempotent else iter(())


def _retry_after(code: grpc.StatusCode, details: str, pauses: Iterator[float]) -> float | None:
    """The pause before sending a refused call again; None: do not retry."""
    if not refused(code, details):
        return None
    return next(pauses, None)


def _read(path: str, key: str) -> bytes:
    try:
        return Path(path).expanduser().read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read {key} file {path}: {exc.strerror}") from None


def _credentials(endpoint: Endpoint) -> tuple[grpc.ChannelCredentials, list[tuple[str, Any]]]:
    if bool(endpoint.tls_cert) != bool(endpoint.tls_key):
        raise ConfigError("mutual TLS needs both tls-cert and tls-key: set both or neither")
    credentials = grpc.ssl_channel_credentials(
        root_certificates=_read(endpoint.tls_ca, "tls-ca"),
        private_key=_read(endpoint.tls_key, "tls-key") if endpoint.tls_key else None,
        certificate_chain=_read(endpoint.tls_cert, "tls-cert") if endpoint.tls_cert else None,
    )
    options: list[tuple[str, Any]] = []
    if endpoint.tls_server_name:
        options.append(("grpc.ssl_target_name_override", endpoint.tls_server_name))
    return credentials, options


def open_channel(endpoint: Endpoint) -> grpc.Channel:
    """A blocking channel to ``endpoint``: TLS when ``tls-ca`` is set (mutual with cert and key)."""
    if not endpoint.secure:
        return grpc.insecure_channel(endpoint.target)
    credentials, options = _credentials(endpoint)
    return grpc.secure_channel(endpoint.target, credentials, options=options)


def open_aio_channel(endpoint: Endpoint) -> grpc.aio.Channel:
    """The asyncio twin of :func:`open_channel`."""
    if not endpoint.secure:
        return grpc.aio.insecure_channel(endpoint.target)
    credentials, options = _credentials(endpoint)
    return grpc.aio.secure_channel(endpoint.target, credentials, options=options)


def metadata(endpoint: Endpoint) -> tuple[tuple[str, str], ...]:
    """The credentials, sent only when configured."""
    pairs = []
    if endpoint.user_id:
        pairs.append((USER_ID_METADATA, endpoint.user_id))
    if endpoint.access_key:
        pairs.append((ACCESS_KEY_METADATA, endpoint.access_key))
    return tuple(pairs)


class GrpcTransport:
    """One endpoint over a blocking channel, opened on first use."""

    def __init__(self, diagnosis: Diagnosis, retry: RetryPolicy = DEFAULT_RETRY) -> None:
        self.diagnosis = diagnosis
        self.retry = retry
        self._channel: grpc.Channel | None = None
        self._methods: dict[str, Any] = {}

    @property
    def endpoint(self) -> Endpoint:
        return self.diagnosis.endpoint

    @property
    def channel(self) -> grpc.Channel:
        if self._channel is None:
            self._channel = open_channel(self.endpoint)
        return self._channel

    def invoke(self, rpc: Rpc[T]) -> T:
        """Run ``rpc`` with the deadline and credentials; raise a `VpodError` on failure."""
        method = _stub(self._methods, self.channel, rpc)
        pauses = _pauses(rpc, self.retry, self.endpoint)
        while True:
            try:
                reply = method(
                    rpc.request, timeout=self.endpoint.timeout_s, metadata=metadata(self.endpoint)
                )
            except grpc.RpcError as exc:
                pause = _retry_after(exc.code(), exc.details() or "", pauses)
                if pause is None:
                    raise self.translate(exc) from None
                time.sleep(pause)
                continue
            return rpc.parse(reply)

    def translate(self, exc: grpc.RpcError) -> VpodError:
        error = self.diagnosis.translate(exc.code(), exc.details() or "")
        if error is not None:
            return error
        try:  # a live controller connects at once; give a slow network a little longer
            grpc.channel_ready_future(self.channel).result(timeout=READY_PROBE_S)
        except grpc.FutureTimeoutError:
            return self.diagnosis.unreachable(f"no connection within {self.diagnosis.timeout}")
        return self.diagnosis.slow()

    def close(self) -> None:
        if self._channel is not None:
            self._channel.close()
            self._channel = None
            self._methods.clear()


def _stub(methods: dict[str, Any], channel: Any, rpc: Rpc[Any]) -> Any:
    """The channel's callable for ``rpc``'s method, made once per method path."""
    method = methods.get(rpc.path)
    if method is None:
        method = methods[rpc.path] = channel.unary_unary(
            rpc.path,
            request_serializer=type(rpc.request).SerializeToString,
            response_deserializer=rpc.reply_type.FromString,
        )
    return method


class AsyncGrpcTransport:
    """One endpoint over a ``grpc.aio`` channel, opened on first use (inside the event loop)."""

    def __init__(self, diagnosis: Diagnosis, retry: RetryPolicy = DEFAULT_RETRY) -> None:
        self.diagnosis = diagnosis
        self.retry = retry
        self._channel: grpc.aio.Channel | None = None
        self._methods: dict[str, Any] = {}

    @property
    def endpoint(self) -> Endpoint:
        return self.diagnosis.endpoint

    @property
    def channel(self) -> grpc.aio.Channel:
        if self._channel is None:
            self._channel = open_aio_channel(self.endpoint)
        return self._channel

    async def invoke(self, rpc: Rpc[T]) -> T:
        """Run ``rpc`` with the deadline and credentials; raise a `VpodError` on failure."""
        method = _stub(self._methods, self.channel, rpc)
        pauses = _pauses(rpc, self.retry, self.endpoint)
        while True:
            try:
                reply = await method(
                    rpc.request, timeout=self.endpoint.timeout_s, metadata=metadata(self.endpoint)
                )
            except grpc.aio.AioRpcError as exc:
                pause = _retry_after(exc.code(), exc.details() or "", pauses)
                if pause is None:
                    raise await self.translate(exc) from None
                await asyncio.sleep(pause)
                continue
            return rpc.parse(reply)

    async def translate(self, exc: grpc.aio.AioRpcError) -> VpodError:
        error = self.diagnosis.translate(exc.code(), exc.details() or "")
        if error is not None:
            return error
        try:
            await asyncio.wait_for(self.channel.channel_ready(), READY_PROBE_S)
        except TimeoutError:
            return self.diagnosis.unreachable(f"no connection within {self.diagnosis.timeout}")
        return self.diagnosis.slow()

    async def close(self) -> None:
        if self._channel is not None:
            await self._channel.close()
            self._channel = None
            self._methods.clear()
