"""Run a controller: the user gRPC API, the admin gRPC API and the HTTP API in one process.

One asyncio loop serves all three; background work (heartbeats) runs on the
same loop. :func:`serve` returns when asked to stop, after every endpoint
has closed. With a :class:`~.tls.ServerTls` all three serve TLS from the same
files, and with ``require_client_auth`` all three demand a client
certificate signed by its CA (see docs/security.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import grpc
import uvicorn
from fastapi import APIRouter
from google.protobuf.descriptor import ServiceDescriptor
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection
from starlette.datastructures import State
from starlette.types import ASGIApp

from vpod.wire import admin_pb2, keys_pb2, virmgrpc_pb2
from vpod.wire.field_copy import copy_fields

from .agent_grpc import GrpcAgentGateway
from .app import Controller, build_controller
from .autodiscovery import autodiscovery_server, listen_addresses
from .grpc_listen import add_port
from .listener_limits import listener_limits
from .metrics import ControllerMetrics
from .settings import Settings
from .telemetry import TelemetryExporter
from .tls import ServerTls
from .transports.admin_grpc import AdminServicer, RegistrationServicer, add_admin_api
from .transports.auth import GrpcAuthenticator
from .transports.http_guard import RateLimitedWarning, guarded_h11, quiet_accept_errors
from .transports.http_health import Readiness
from .transports.keys_grpc import PartitionKeyServicer, add_partition_key_api
from .transports.rest import create_http_app
from .transports.user_allocations import add_user_allocations
from .transports.user_grpc import UserServicer, add_user_api, add_version_api

log = logging.getLogger("vpod.server")

USER_API = "user gRPC API"
ADMIN_API = "admin gRPC API"


class ServerExtension(Protocol):
    """Something served in the controller's process by a layer above it (the cloud layer).

    The controller cannot import those layers; the command line that starts
    the server builds extensions and hands them in.
    """

    def http_router(self) -> APIRouter | None:
        """Routes to add to the HTTP API (None: none)."""

    async def start(self) -> None:
        """Start background work (called once the APIs listen)."""

    async def stop(self) -> None:
        """Stop background work (called before the APIs close)."""


@runtime_checkable
class WrapsHttp(Protocol):
    """An extension that also wraps the whole HTTP application (the web console's sessions)."""

    def wrap_http(self, app: ASGIApp) -> ASGIApp:
        """The application to serve instead of ``app`` (which it calls)."""


@runtime_checkable
class KeepsHttpState(Protocol):
    """An extension whose routes find what they serve in the HTTP application's state (the
    cloud): bound once, where a router-wide dependency would make FastAPI build each route
    again and resolve it on every request."""

    def keep_http_state(self, state: State) -> None:
        """Put what the routes need into ``state``."""


@runtime_checkable
class ExportsMetrics(Protocol):
    """An extension with series of its own for ``/metrics`` (the cloud's per-GPU series)."""

    async def render_metrics(self) -> bytes:
        """Its series in the Prometheus text format."""


ExtensionFactory = Callable[[Controller], ServerExtension]


@dataclass
class RunningServer:
    controller: Controller
    user_port: int
    admin_port: int
    http_port: int
    _stop: asyncio.Event = field(default_factory=asyncio.Event)

    def stop(self) -> None:
        self._stop.set()


USER_SERVICES = (
    virmgrpc_pb2.DESCRIPTOR.services_by_name["UserService"],
    virmgrpc_pb2.DESCRIPTOR.services_by_name["VersionService"],
    keys_pb2.DESCRIPTOR.services_by_name["PartitionKeyService"],
)
ADMIN_SERVICES = (
    virmgrpc_pb2.DESCRIPTOR.services_by_name["VersionService"],
    admin_pb2.DESCRIPTOR.services_by_name["AdminService"],
    admin_pb2.DESCRIPTOR.services_by_name["AgentRegistrationService"],
)
"""What each endpoint serves, as server reflection (``grpcurl list``) names it."""


def _serve_reflection(server: grpc.aio.Server, services: Sequence[ServiceDescriptor]) -> None:
    names = tuple(service.full_name for service in services)
    reflection.enable_server_reflection((*names, reflection.SERVICE_NAME), server)


def _bind(
    server: grpc.aio.Server,
    host: str,
    port: int,
    what: str,
    credentials: grpc.ServerCredentials | None = None,
) -> int:
    return add_port(
        server,
        f"{host}:{port}",
        credentials,
        what=f"the {what}",
        advice="; choose another with the matching --*-port option",
    )


async def serve(
    settings: Settings,
    *,
    ready: Callable[[RunningServer], Awaitable[None] | None] | None = None,
    stop: asyncio.Event | None = None,
    extensions: Sequence[ExtensionFactory] = (),
    tls: ServerTls | None = None,
) -> None:
    """Serve until ``stop`` is set (or the task is cancelled); over TLS when ``tls`` is given."""
    credentials = tls.grpc_credentials() if tls is not None else None
    limits = listener_limits(settings.max_connections)
    refusals = RateLimitedWarning()
    quiet_accept_errors(asyncio.get_running_loop(), refusals)
    grpc_options = limits.grpc_options()
    gateway = GrpcAgentGateway()
    controller = build_controller(settings, gateway)
    extras = [make(controller) for make in extensions]
    auth = GrpcAuthenticator(controller.auth)

    metrics = ControllerMetrics(
        controller.status.state,
        telemetry=TelemetryExporter(controller.telemetry),
        more=[e.render_metrics for e in extras if isinstance(e, ExportsMetrics)],
    )
    readiness = Readiness([USER_API, ADMIN_API])
    interceptors = [metrics.grpc_interceptor()]
    user_server = grpc.aio.server(options=grpc_options, interceptors=interceptors)
    # The servicers name the use-cases they call as the controller does.
    user_api = copy_fields(UserServicer, controller, auth=auth)
    add_user_api(user_server, controller.settings, user_api)
    add_partition_key_api(user_server, PartitionKeyServicer(controller.partition_keys, auth))
    health_servicer = health.aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, user_server)
    _serve_reflection(user_server, USER_SERVICES)
    user_port = _bind(user_server, settings.host, settings.user_port, "user API", credentials)

    admin_server = grpc.aio.server(options=grpc_options, interceptors=interceptors)
    admin_api = copy_fields(AdminServicer, controller, authenticator=controller.auth, auth=auth)
    registration = RegistrationServicer(controller.fleet, controller.agent_tokens)
    add_admin_api(admin_server, admin_api, registration)
    add_user_allocations(user_server, admin_api)  # `vipu list allocations` on the user port
    add_version_api(admin_server, controller.settings)
    _serve_reflection(admin_server, ADMIN_SERVICES)
    admin_port = _bind(
        admin_server, settings.admin_host, settings.admin_port, "admin API", credentials
    )
    discovery_addresses = listen_addresses(settings.autodiscovery_addresses, settings.admin_host)
    discovery_server = autodiscovery_server(
        discovery_addresses,
        admin_port,
        registration,
        options=grpc_options,
        credentials=credentials,
    )

    http_app = create_http_app(controller, readiness=readiness, metrics=metrics)
    for extra in extras:
        router = extra.http_router()
        if router is not None:
            http_app.include_router(router)
        if isinstance(extra, KeepsHttpState):
            extra.keep_http_state(http_app.state)
    served_app: ASGIApp = http_app
    for extra in extras:
        if isinstance(extra, WrapsHttp):
            served_app = extra.wrap_http(served_app)
    http_config = uvicorn.Config(
        served_app,
        host=settings.http_host,
        port=settings.http_port,
        log_level="warning",
        lifespan="off",
        http=guarded_h11(limits.http, refusals),
        timeout_keep_alive=int(limits.http.keep_alive_s),
        # a client holding a connection (a shell, an event stream) never holds a stop forever
        timeout_graceful_shutdown=HTTP_STOP_GRACE_S,
        **(tls.uvicorn_options() if tls is not None else {}),
    )
    http_server = uvicorn.Server(http_config)
    leader = controller.leader

    await user_server.start()
    readiness.started(USER_API)
    await admin_server.start()
    await discovery_server.start()
    readiness.started(ADMIN_API)
    http_task = asyncio.create_task(http_server.serve(), name="http")
    while not http_server.started:
        if http_task.done():
            await user_server.stop(0)
            await admin_server.stop(0)
            await discovery_server.stop(0)
            http_task.result()
            raise OSError(
                f"cannot listen for the HTTP API on {settings.http_host}:{settings.http_port}"
            )
        await asyncio.sleep(0.02)
    http_port = http_server.servers[0].sockets[0].getsockname()[1]
    await health_servicer.set("", health_pb2.HealthCheckResponse.SERVING)
    monitor_task = asyncio.create_task(leader.run(), name="leader")
    for extra in extras:
        await extra.start()
    stop_event = stop if stop is not None else asyncio.Event()
    running = RunningServer(controller, user_port, admin_port, http_port, stop_event)
    _warn_about_exposure(settings, tls)
    if ready is not None:
        result = ready(running)
        if result is not None:
            await result
    try:
        await stop_event.wait()
    finally:
        for extra in reversed(extras):
            await extra.stop()
        monitor_task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await monitor_task
        readiness.stopped(USER_API)
        readiness.stopped(ADMIN_API)
        await controller.changes.close()  # open event streams end, so HTTP can stop
        http_server.should_exit = True
        await user_server.stop(grace=2)
        await admin_server.stop(grace=2)
        await discovery_server.stop(grace=2)
        with contextlib.suppress(asyncio.CancelledError):
            await http_task
        await gateway.close()
        controller.close()


HTTP_STOP_GRACE_S = 10
"""How long a stopping controller lets open HTTP requests and WebSockets finish."""


def _warn_about_exposure(settings: Settings, tls: ServerTls | None) -> None:
    """Say at start what this configuration leaves open (docs/security.md explains each)."""
    if not settings.secure:
        log.warning(
            "running without --secure: every caller may use every allocation and the admin API"
        )
    elif tls is None:
        log.warning(
            "running with --secure but without --tls: access keys cross the network in clear"
        )
    if not settings.secure:
        log.info(
            "agent registration on the admin endpoint is not authenticated: serve with"
            " --secure to admit only agents holding a registration token"
        )
