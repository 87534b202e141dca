"""A real controller with real emulated agents, served over real HTTP on loopback.

Everything asynchronous (the agents' gRPC servers, the controller, uvicorn)
runs on one event loop in a background thread, so tests are plain
synchronous functions that talk HTTP with ``httpx.Client`` (and schemathesis
can call the server like any client would). The HTTP socket is bound before
uvicorn starts, so a test can connect at once: the kernel queues the
connection until uvicorn accepts it, and nothing has to wait or poll.
"""

from __future__ import annotations

import asyncio
import secrets
import socket
import threading
from collections.abc import Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import httpx
import uvicorn
from fastapi import FastAPI

from vpod.agent.addressing import AddressMode, AddressPlan
from vpod.agent.fleet import AgentFleet, FleetSettings
from vpod.controller.agent_grpc import GrpcAgentGateway
from vpod.controller.app import Controller, build_controller
from vpod.controller.caller import SYSTEM
from vpod.controller.settings import Settings
from vpod.controller.transports.rest import create_http_app

T = TypeVar("T")

CALL_TIMEOUT_S = 120.0
"""A safety net for a hung call, not a performance threshold."""


class LoopThread:
    """An asyncio event loop running in a daemon thread."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="live-pod", daemon=True)
        self._thread.start()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(CALL_TIMEOUT_S)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(CALL_TIMEOUT_S)
        self.loop.close()


@dataclass
class Served:
    """One HTTP app served by uvicorn on a pre-bound loopback socket."""

    url: str
    server: uvicorn.Server
    task: asyncio.Task[None]


async def serve(app: FastAPI) -> Served:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    port = sock.getsockname()[1]
    server = uvicorn.Server(
        uvicorn.Config(app, lifespan="off", log_level="warning", access_log=False)
    )
    task = asyncio.create_task(server.serve(sockets=[sock]))
    return Served(url=f"http://127.0.0.1:{port}", server=server, task=task)


async def stop_serving(served: Served) -> None:
    served.server.should_exit = True
    await served.task


@dataclass
class LivePod:
    """A controller over ``machines`` emulated Bow-2000 machines ``ag1``.. and its HTTP API.

    The first four agents form cluster ``pod`` with allocations ``alloc-a``
    (machines 0-1) and ``alloc-b`` (machines 2-3); the others are free for
    tests of the admin endpoints.
    """

    loop: LoopThread
    fleet: AgentFleet
    controller: Controller
    app: FastAPI
    url: str
    admin_key: str = ""
    """In secure mode: the access key of user ``root`` (an admin)."""
    metrics_token: str = ""
    """The scrape token /metrics accepts under --secure (``--metrics-token-file``)."""
    _served: list[Served] = field(default_factory=list)
    _gateway: GrpcAgentGateway | None = None

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run a coroutine on the pod's event loop (to reach the service layer directly)."""
        return self.loop.run(coro)

    def client(self, **headers: str) -> httpx.Client:
        return httpx.Client(base_url=self.url, headers=headers, timeout=CALL_TIMEOUT_S)

    def serve_app(self, app: FastAPI) -> str:
        """Serve another app (same loop) for the pod's lifetime; returns its URL."""
        served = self.run(serve(app))
        self._served.append(served)
        return served.url

    def agent_address(self, agent_id: str) -> tuple[str, int]:
        host = self.fleet.host(agent_id)
        return host.host, host.port


async def _start(loop: LoopThread, data_dir: Path, machines: int, secure: bool) -> LivePod:
    plan = AddressPlan(
        mode=AddressMode.PER_MACHINE,
        base_host="127.0.0.1",
        agent_port=0,
        server_port=0,
        rdma_port=0,
    )
    fleet = AgentFleet(
        FleetSettings(machines=machines, plan=plan, stop_grace=0, fault_injection=True)
    )
    await fleet.start()
    gateway = GrpcAgentGateway()
    token_file = data_dir / "metrics.token"
    token_file.write_text(secrets.token_urlsafe(24) + "\n")
    settings = Settings(
        data_dir=data_dir, secure=secure, agent_timeout_s=5.0, metrics_token_file=token_file
    )
    controller = build_controller(settings, gateway)
    inventory = controller.inventory
    for host in fleet.hosts:
        await inventory.create_agent(SYSTEM, host.agent_id, host.host, host.port, key=host.key)
    await inventory.create_cluster(SYSTEM, "pod", [h.agent_id for h in fleet.hosts[:4]])
    await inventory.create_allocation(SYSTEM, "alloc-a", "pod", agent_ids=["ag1", "ag2"])
    await inventory.create_allocation(SYSTEM, "alloc-b", "pod", agent_ids=["ag3", "ag4"])
    admin_key = ""
    if secure:
        admin_key = (await inventory.create_user(SYSTEM, "root", [], admin=True)).access_key
    app = create_http_app(controller)
    served = await serve(app)
    return LivePod(
        loop=loop,
        fleet=fleet,
        controller=controller,
        app=app,
        url=served.url,
        admin_key=admin_key,
        metrics_token=token_file.read_text().strip(),
        _served=[served],
        _gateway=gateway,
    )


def start_pod(data_dir: Path, *, machines: int = 6, secure: bool = False) -> LivePod:
    loop = LoopThread()
    try:
        return loop.run(_start(loop, data_dir, machines, secure))
    except BaseException:
        loop.close()
        raise


async def _stop(pod: LivePod) -> None:
    for served in pod._served:
        await stop_serving(served)
    if pod._gateway is not None:
        await pod._gateway.close()
    pod.controller.close()
    await pod.fleet.stop()


def stop_pod(pod: LivePod) -> None:
    try:
        pod.run(_stop(pod))
    finally:
        pod.loop.close()
