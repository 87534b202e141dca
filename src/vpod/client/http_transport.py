"""HTTP calls of the REST and cloud APIs, described once, run blocking or on asyncio.

An :class:`HttpCall` is a method, a path under the API's prefix, query
parameters, a JSON body and how to read the reply's JSON;
:class:`HttpTransport` runs it with ``httpx.Client`` and
:class:`AsyncHttpTransport` with ``httpx.AsyncClient``. Error replies carry
``{"error": {"code": "NOT_FOUND", "message": "..."}}`` (docs/rest-api.md);
:func:`error_of_reply` turns them into the :mod:`.errors` tree, and failures
to connect become :class:`~.errors.Unreachable` naming the URL.
"""

from __future__ import annotations

import ssl
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import httpx
from pydantic import ValidationError

from vpod.wire.rest.errors import ErrorResponse

from .errors import (
    ConfigError,
    DeadlineExceeded,
    TlsError,
    Unreachable,
    VpodError,
    error_of_http,
)

T = TypeVar("T")
DEFAULT_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class HttpCall(Generic[T]):
    """One request and how to read its reply (``None`` for an empty reply)."""

    method: str
    path: str
    parse: Callable[[Any], T]
    params: Mapping[str, Any] = field(default_factory=dict)
    body: Any = None

    def request_args(self) -> dict[str, Any]:
        args: dict[str, Any] = {
            "params": {k: _param(v) for k, v in self.params.items() if v is not None}
        }
        if self.body is not None:
            args["json"] = self.body
        elif self.method in ("POST", "PUT", "PATCH"):
            args["json"] = {}
        return args


def _param(value: Any) -> Any:
    if isinstance(value, bool):
        return "true" if value else "false"
    return value


def get(path: str, parse: Callable[[Any], T], **params: Any) -> HttpCall[T]:
    return HttpCall("GET", path, parse, params)


def post(path: str, parse: Callable[[Any], T], body: Any = None, **params: Any) -> HttpCall[T]:
    return HttpCall("POST", path, parse, params, body)


def put(path: str, parse: Callable[[Any], T], body: Any) -> HttpCall[T]:
    return HttpCall("PUT", path, parse, {}, body)


def delete(path: str, parse: Callable[[Any], T], **params: Any) -> HttpCall[T]:
    return HttpCall("DELETE", path, parse, params)


def nothing(_data: Any) -> None:
    return None


@dataclass(frozen=True)
class HttpSite:
    """Where an HTTP API is and how to talk to it."""

    base_url: str
    """Scheme, host and port, e.g. ``http://127.0.0.1:8080``."""
    prefix: str
    """The API's path prefix, e.g. ``/api/v1``."""
    headers: Mapping[str, str] = field(default_factory=dict)
    timeout_s: float = DEFAULT_TIMEOUT_S
    ca_file: str = ""
    """The CA bundle that signs the server's certificate (https); empty: the system's."""
    cert: tuple[str, str] | None = None
    """Client certificate and key files for mutual TLS."""
    name: str = "the API"
    """How messages name the API (``the cloud API``)."""
    hint: str = "is the server running there?"

    def client_args(self) -> dict[str, Any]:
        return {
            "base_url": self.base_url.rstrip("/") + self.prefix,
            "headers": dict(self.headers),
            "timeout": self.timeout_s,
            "verify": self.tls_context(),
        }

    def tls_context(self) -> ssl.SSLContext:
        """The TLS settings of https calls; `ConfigError` when a file cannot be used."""
        try:
            context = ssl.create_default_context(cafile=self.ca_file or None)
            if self.cert is not None:
                context.load_cert_chain(*self.cert)
        except (OSError, ssl.SSLError) as exc:
            files = ", ".join(f for f in (self.ca_file, *(self.cert or ())) if f)
            raise ConfigError(f"cannot use the TLS files {files}: {exc}") from None
        return context


def error_of_reply(site: HttpSite, reply: httpx.Response) -> VpodError:
    """The exception for an error reply: its body's code and message, else its status."""
    try:
        error = ErrorResponse.model_validate_json(reply.content).error
        code, message = error.code, error.message
    except ValidationError:  # not the APIs' error body: a proxy's page, say
        text = reply.text.strip()[:200] or reply.reason_phrase
        code, message = "", f"{site.name} answered {reply.status_code}: {text}"
    return error_of_http(reply.status_code, code, message, site.base_url)


def error_of_exception(site: HttpSite, exc: httpx.HTTPError) -> VpodError:
    """The exception for a request that got no reply."""
    url = site.base_url
    if isinstance(exc, httpx.TimeoutException):
        return DeadlineExceeded(f"{site.name} at {url} did not answer in time: retry", endpoint=url)
    text = str(exc)
    if "SSL" in text or "certificate" in text.lower():
        return TlsError(
            f"cannot reach {site.name} at {url}: TLS failed ({text}); check the CA and"
            " certificates",
            endpoint=url,
        )
    return Unreachable(f"cannot reach {site.name} at {url} ({exc}): {site.hint}", endpoint=url)


def _result(site: HttpSite, call: HttpCall[T], reply: httpx.Response) -> T:
    if reply.status_code >= 400:
        raise error_of_reply(site, reply)
    if reply.status_code == 204 or not reply.content:
        return call.parse(None)
    return call.parse(reply.json())


class HttpTransport:
    """Blocking calls to one HTTP API (``httpx.Client``)."""

    def __init__(self, site: HttpSite) -> None:
        self.site = site
        self._http: httpx.Client | None = None

    def invoke(self, call: HttpCall[T]) -> T:
        if self._http is None:  # on first use: reading TLS files may fail
            self._http = httpx.Client(**self.site.client_args())
        try:
            reply = self._http.request(call.method, call.path, **call.request_args())
        except httpx.HTTPError as exc:
            raise error_of_exception(self.site, exc) from None
        return _result(self.site, call, reply)

    def close(self) -> None:
        if self._http is not None:
            self._http.close()
            self._http = None


class AsyncHttpTransport:
    """The asyncio twin of :class:`HttpTransport` (``httpx.AsyncClient``)."""

    def __init__(self, site: HttpSite) -> None:
        self.site = site
        self._http: httpx.AsyncClient | None = None

    async def invoke(self, call: HttpCall[T]) -> T:
        if self._http is None:
            self._http = httpx.AsyncClient(**self.site.client_args())
        try:
            reply = await self._http.request(call.method, call.path, **call.request_args())
        except httpx.HTTPError as exc:
            raise error_of_exception(self.site, exc) from None
        return _result(self.site, call, reply)

    async def close(self) -> None:
        if self._http is not None:
            await self._http.aclose()
            self._http = None
