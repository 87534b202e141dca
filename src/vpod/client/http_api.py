"""What the HTTP clients share: one site of a controller's HTTP APIs, its transport.

:class:`~.rest.RestClient` and :class:`~.cloud.CloudClient` (and their asyncio
twins) are a table of calls (:mod:`.api_methods`) on an :class:`HttpApi`,
as the gRPC clients are on a :class:`~.grpc_api.GrpcApi`: the site says
where the API is, who calls it and what to say when it cannot be reached;
the blocking twin (:class:`BlockingHttpApi`) runs the calls on ``httpx.Client``,
the asyncio one (:class:`AsyncHttpApi`) on ``httpx.AsyncClient``.
"""

from __future__ import annotations

from .api_methods import Async, Blocking
from .http_transport import AsyncHttpTransport, HttpSite, HttpTransport


class HttpApi:
    """One HTTP API of a controller at ``site``."""

    def __init__(self, site: HttpSite) -> None:
        self._site = site
        self._connect(site)

    def _connect(self, site: HttpSite) -> None:
        raise NotImplementedError  # the blocking or the asyncio twin opens its transport


class BlockingHttpApi(HttpApi, Blocking):
    """Over blocking HTTP (``httpx``)."""

    def _connect(self, site: HttpSite) -> None:
        self._transport = HttpTransport(site)


class AsyncHttpApi(HttpApi, Async):
    """Over ``httpx.AsyncClient``."""

    def _connect(self, site: HttpSite) -> None:
        self._transport = AsyncHttpTransport(site)
