"""Running the cloud inside the controller's process, as a ``ServerExtension``.

The controller cannot import the cloud (layers point down), so the command
line hands it a factory::

    cloud = CloudServer(load_settings(data_dir))
    await serve(settings, extensions=[cloud], ready=lambda running: cloud.listening(running))

``serve`` calls the factory with the controller it built, adds the cloud's
routes to its HTTP API, starts the cloud's task runner once the APIs listen
and stops it before they close. :meth:`CloudServer.listening` tells the cloud
where the V-IPU user API listens (its port may be chosen only then), which
is what every vPOD's ``vipu-cli.hcl`` points at.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from fastapi import APIRouter
from starlette.datastructures import State

from vpod.controller.app import Controller
from vpod.controller.server import RunningServer

from .api import cloud_router
from .app import Cloud, build_cloud
from .gpu_metrics import dcgm_renderer
from .settings import CloudSettings

log = logging.getLogger("vpod.cloud")


def _dialable(host: str) -> str:
    """An address servers can dial for a controller listening on ``host``."""
    return "127.0.0.1" if host in ("", "0.0.0.0", "::") else host


class CloudExtension:
    def __init__(self, cloud: Cloud) -> None:
        self.cloud = cloud
        gpu_hosts = cloud.gpu_hosts
        self._dcgm = dcgm_renderer(gpu_hosts.telemetry, gpu_hosts.driver_versions)

    async def render_metrics(self) -> bytes:
        """The per-GPU ``DCGM_FI_DEV_*`` series (:mod:`.gpu_metrics`) for ``/metrics``."""
        return self._dcgm()

    def http_router(self) -> APIRouter | None:
        return cloud_router(self.cloud)

    def keep_http_state(self, state: State) -> None:
        state.cloud = self.cloud  # where the routes find it (``cloud_of``)

    async def start(self) -> None:
        refused = self.cloud.ctx.compute.refusal()
        if refused is not None:
            log.warning("tenants' servers will be refused: %s", refused)
        await self.cloud.start()

    async def stop(self) -> None:
        await self.cloud.stop()


class CloudServer:
    """The extension factory for :func:`vpod.controller.server.serve`, and its handle."""

    def __init__(self, settings: CloudSettings, **overrides: Any) -> None:
        self.settings = settings
        self._overrides = overrides
        self.cloud: Cloud | None = None

    def __call__(self, controller: Controller) -> CloudExtension:
        self.cloud = build_cloud(controller, self.settings, **self._overrides)
        host = self.settings.user_api_host or _dialable(controller.settings.host)
        if controller.settings.user_port:
            self.cloud.ctx.vipu.user_api_listening(
                host, controller.settings.user_port, controller.settings.http_port
            )
        return CloudExtension(self.cloud)

    def listening(self, running: RunningServer) -> None:
        """Call from ``serve``'s ready callback: the user API's actual port is known."""
        if self.cloud is not None:
            host = self.settings.user_api_host or _dialable(running.controller.settings.host)
            self.cloud.ctx.vipu.user_api_listening(host, running.user_port, running.http_port)


ExtensionFactory = Callable[[Controller], CloudExtension]
