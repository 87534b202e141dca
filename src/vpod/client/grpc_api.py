"""What the gRPC clients share: one endpoint of ``vipu-cli.hcl``'s settings, its transport.

:class:`~.user.UserClient` and :class:`~.admin.AdminClient` (and their asyncio
twins) are a table of calls (:mod:`.api_methods`) on a :class:`GrpcApi`: it
reads the settings as the CLIs do, names the endpoint when it cannot be
reached, and opens a blocking (:class:`BlockingGrpcApi`) or a ``grpc.aio``
(:class:`AsyncGrpcApi`) transport.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar, Self

from . import user_calls
from .api_methods import Async, Blocking
from .config import Endpoint, Settings, load_settings
from .grpc_transport import DEFAULT_CREDENTIALS_HINT, AsyncGrpcTransport, Diagnosis, GrpcTransport
from .records import Version
from .retry import DEFAULT_RETRY, RetryPolicy


class GrpcApi:
    """One gRPC API of a controller at ``endpoint``."""

    default_hint: ClassVar[str]
    """Where to set the endpoint, said when it cannot be reached."""

    def __init__(
        self,
        endpoint: Endpoint,
        *,
        hint: str | None = None,
        credentials_hint: str = DEFAULT_CREDENTIALS_HINT,
        retry: RetryPolicy = DEFAULT_RETRY,
    ) -> None:
        """``hint``: where to set the endpoint (default: this API's settings)."""
        self.endpoint = endpoint
        self._connect(Diagnosis(endpoint, hint or self.default_hint, credentials_hint), retry)

    @staticmethod
    def endpoint_in(settings: Settings) -> Endpoint:
        """This API's endpoint in the settings."""
        raise NotImplementedError

    def _connect(self, diagnosis: Diagnosis, retry: RetryPolicy) -> None:
        raise NotImplementedError  # the blocking or the asyncio twin opens its transport

    @classmethod
    def from_config(
        cls,
        config: str | None = None,
        *,
        env: Mapping[str, str] | None = None,
        **overrides: str | int | float | None,
    ) -> Self:
        """Settings as ``vipu`` and ``vipu-admin`` read them: ``overrides`` (``api_host=...``,
        ``admin_api_port=...``), env, config file."""
        options = {key.replace("_", "-"): value for key, value in overrides.items()}
        return cls(cls.endpoint_in(load_settings(options, env=env, config_path=config)))


class BlockingGrpcApi(GrpcApi, Blocking):
    """Over a blocking channel."""

    def _connect(self, diagnosis: Diagnosis, retry: RetryPolicy) -> None:
        self._transport = GrpcTransport(diagnosis, retry)

    def version(self) -> Version:
        """The controller's version."""
        return Version(self._transport.invoke(user_calls.version()), self.endpoint.target)


class AsyncGrpcApi(GrpcApi, Async):
    """Over a ``grpc.aio`` channel, opened inside the event loop on first use."""

    def _connect(self, diagnosis: Diagnosis, retry: RetryPolicy) -> None:
        self._transport = AsyncGrpcTransport(diagnosis, retry)

    async def version(self) -> Version:
        """The controller's version."""
        return Version(await self._transport.invoke(user_calls.version()), self.endpoint.target)
