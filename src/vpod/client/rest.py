"""Clients of the REST API: :class:`RestClient` (blocking) and :class:`AsyncRestClient`.

The REST API (``/api/v1``, port 8080 by default) serves what the user and
admin gRPC APIs serve, as JSON; these clients return the same records as
:class:`~.user.UserClient` and :class:`~.admin.AdminClient` (read by
:mod:`.rest_records`) and raise the same :mod:`.errors`. Credentials go in
the ``X-Vipu-User-Id`` and ``X-Vipu-Access-Key`` headers.

    >>> from vpod.client import RestClient
    >>> with RestClient.from_config(url="http://127.0.0.1:8080") as rest:
    ...     rest.create_partition("p1", 4).ready_state
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Mapping
from dataclasses import dataclass, field
from types import ModuleType
from typing import ClassVar, Self

from vpod.wire.field_copy import copy_all_fields

from . import fabric
from . import rest_calls as calls
from .admin import AdminMethods
from .api_methods import api_call
from .config import load_settings, user_endpoint
from .http_api import AsyncHttpApi, BlockingHttpApi, HttpApi
from .http_transport import DEFAULT_TIMEOUT_S, HttpSite
from .records import Version
from .user import UserMethods

DEFAULT_HTTP_PORT = 8080
USER_HEADER = "X-Vipu-User-Id"
KEY_HEADER = "X-Vipu-Access-Key"


@dataclass(frozen=True)
class RestSettings:
    """Where the REST API is and who calls it."""

    url: str
    """``http://host:8080`` (``https://`` when the controller serves TLS)."""
    user_id: str = ""
    access_key: str = field(default="", repr=False)
    tls_ca: str = ""
    tls_cert: str = ""
    tls_key: str = ""
    timeout_s: float = DEFAULT_TIMEOUT_S

    def site(self) -> HttpSite:
        headers = {}
        if self.user_id:
            headers[USER_HEADER] = self.user_id
        if self.access_key:
            headers[KEY_HEADER] = self.access_key
        return HttpSite(
            base_url=self.url,
            prefix=calls.API_PREFIX,
            headers=headers,
            timeout_s=self.timeout_s,
            ca_file=self.tls_ca,
            cert=(self.tls_cert, self.tls_key) if self.tls_cert and self.tls_key else None,
            name="the REST API",
            hint="is the V-IPU controller running there (its HTTP port, 8080 by default)?",
        )


def rest_settings(
    url: str | None = None,
    config: str | None = None,
    env: Mapping[str, str] | None = None,
    **overrides: str | int | float | None,
) -> RestSettings:
    """Credentials and TLS as ``vipu`` reads them; ``url`` defaults to the API host, port 8080."""
    options = {key.replace("_", "-"): value for key, value in overrides.items()}
    endpoint = user_endpoint(load_settings(options, env=env, config_path=config))
    scheme = "https" if endpoint.secure else "http"
    host = f"[{endpoint.host}]" if ":" in endpoint.host else endpoint.host
    # who calls, TLS and the timeout as the gRPC endpoint has them: the fields of that name
    return copy_all_fields(
        RestSettings, endpoint, url=url or f"{scheme}://{host}:{DEFAULT_HTTP_PORT}"
    )


class _RestApi(HttpApi, UserMethods, AdminMethods):
    """The REST API's methods, the same for the blocking client and its asyncio twin: the
    user and admin APIs' (over REST) and its own."""

    rest_builders: ClassVar[ModuleType] = calls
    """Where the shared declarations' REST builders are (:class:`~.api_methods.api_call`)."""

    def __init__(self, settings: RestSettings) -> None:
        self.settings = settings
        super().__init__(settings.site())

    @classmethod
    def from_config(
        cls,
        config: str | None = None,
        *,
        url: str | None = None,
        env: Mapping[str, str] | None = None,
        **overrides: str | int | float | None,
    ) -> Self:
        return cls(rest_settings(url, config, env, **overrides))

    # beyond the methods it shares with the gRPC clients
    create_partition = api_call(calls.create_partition)
    ipuof_files = api_call(calls.ipuof_files)
    ipuof_file = api_call(calls.ipuof_file)
    list_partition_infos = api_call(calls.list_partition_infos)
    list_all_ipu_attributes = api_call(calls.list_all_ipu_attributes)

    # the whole fabric
    whoami = api_call(fabric.whoami)
    pod_map = api_call(fabric.pod_map)
    fragmentation = api_call(fabric.fragmentation)


class RestClient(_RestApi, BlockingHttpApi):
    """The REST API of one controller, over blocking HTTP (``httpx``)."""

    def version(self) -> Version:
        return Version(self._transport.invoke(calls.version()), self.settings.url)

    def changes(self) -> Iterator[fabric.Change]:
        """The admin change stream, as it happens (blocks; stop iterating to close it)."""
        return fabric.follow_changes(self._site)


class AsyncRestClient(_RestApi, AsyncHttpApi):
    """The REST API over ``httpx.AsyncClient``; the same methods as :class:`RestClient`."""

    async def version(self) -> Version:
        return Version(await self._transport.invoke(calls.version()), self.settings.url)

    def changes(self) -> AsyncIterator[fabric.Change]:
        """The admin change stream, as it happens; stop iterating to close it."""
        return fabric.follow_changes_async(self._site)
