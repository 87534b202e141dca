"""The GPU agent's batched samples (``BatchingLink``): the hosts of one process report in one
request, each host gets its own outcome, a short batch still goes out, and a controller
without the batch route gets each host's samples alone.

The controller here is a scripted HTTP answerer (``httpx.MockTransport``): what is under
test is the agent's side of the exchange; the real route is tested against a real
controller and a real agent process in ``tests/cloud/test_gpu_agents.py``."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from vpod.agent.gpu.model import GpuReading, GpuSample
from vpod.agent.gpu.reporter import API, BatchingLink, ControllerLink, Refused

Handler = Callable[[httpx.Request], httpx.Response]


class Controller:
    """Records every request; answers the batch route with ``refuse`` (host -> code)."""

    def __init__(self, *, batch_route: bool = True, refuse: dict[str, str] | None = None):
        self.requests: list[tuple[str, Any]] = []
        self.batch_route = batch_route
        self.refuse = refuse or {}
        self.results_cut = False

    def __call__(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        path = request.url.path.removeprefix(API)
        self.requests.append((path, body))
        if path == "/samples":
            if not self.batch_route:
                return httpx.Response(404, json={"detail": "Not Found"})
            results = [self._result(r["host_id"]) for r in body["reports"]]
            return httpx.Response(
                200, json={"results": results[:-1] if self.results_cut else results}
            )
        return httpx.Response(204)

    def _result(self, host: str) -> dict[str, Any]:
        code = self.refuse.get(host)
        if code is None:
            return {"host_id": host, "accepted": True, "error": None}
        error = {"code": code, "message": f"host {host}: no", "details": []}
        return {"host_id": host, "accepted": False, "error": error}

    @property
    def paths(self) -> list[str]:
        return [path for path, _ in self.requests]


def _link(controller: Controller, hosts: int, window_s: float = 0.2) -> BatchingLink:
    link = ControllerLink("http://ctl", "tok", transport=httpx.MockTransport(controller))
    return BatchingLink(link, hosts, window_s=window_s)


def _samples(index: int = 0) -> list[GpuSample]:
    return [GpuSample(GpuReading(index=index, uuid=f"GPU-{index}", temperature_c=41), True)]


async def _report_all(link: BatchingLink, hosts: list[str]) -> list[BaseException | None]:
    outcomes = await asyncio.gather(
        *(link.report(h, f"boot-{h}", _samples()) for h in hosts), return_exceptions=True
    )
    return [o if isinstance(o, BaseException) else None for o in outcomes]


def test_the_hosts_of_a_process_report_in_one_request_each_with_its_own_outcome() -> None:
    controller = Controller(refuse={"h2": "NOT_FOUND", "h3": "PERMISSION_DENIED"})
    outcomes = asyncio.run(_report_all(_link(controller, 4), ["h1", "h2", "h3", "h4"]))
    assert controller.paths == ["/samples"]
    [(_, body)] = controller.requests
    assert [r["host_id"] for r in body["reports"]] == ["h1", "h2", "h3", "h4"]
    assert body["reports"][0]["boot_id"] == "boot-h1"
    assert body["reports"][0]["samples"][0]["reading"]["temperature_c"] == 41
    assert outcomes[0] is None
    assert outcomes[3] is None
    refused = outcomes[1]
    assert isinstance(refused, Refused)
    assert (refused.status, str(refused)) == (404, "host h2: no")
    denied = outcomes[2]
    assert isinstance(denied, Refused)
    assert denied.status == 403


def test_a_batch_short_of_hosts_goes_out_after_the_window() -> None:
    controller = Controller()

    async def scenario() -> float:
        link = _link(controller, 5, window_s=0.05)
        loop = asyncio.get_running_loop()
        began = loop.time()
        assert await _report_all(link, ["h1", "h2"]) == [None, None]
        return loop.time() - began

    took = asyncio.run(scenario())
    assert controller.paths == ["/samples"]
    assert took >= 0.05


def test_without_the_batch_route_each_host_reports_alone_from_then_on() -> None:
    controller = Controller(batch_route=False)

    async def scenario() -> None:
        link = _link(controller, 2)
        assert await _report_all(link, ["h1", "h2"]) == [None, None]
        assert await _report_all(link, ["h1", "h2"]) == [None, None]

    asyncio.run(scenario())
    assert controller.paths[0] == "/samples"
    assert sorted(controller.paths[1:]) == ["/h1/samples"] * 2 + ["/h2/samples"] * 2
    assert controller.requests[1][1]["boot_id"] in ("boot-h1", "boot-h2")


def test_an_answer_missing_hosts_fails_every_waiting_report_instead_of_hanging() -> None:
    controller = Controller()
    controller.results_cut = True
    outcomes = asyncio.run(
        asyncio.wait_for(_report_all(_link(controller, 2), ["h1", "h2"]), timeout=30)
    )
    assert all(isinstance(o, httpx.HTTPError) for o in outcomes), outcomes
    assert "answered 1 of 2 hosts" in str(outcomes[0])


@pytest.mark.parametrize("status", [401, 400])
def test_a_refusal_of_the_whole_batch_is_every_host_s_refusal(status: int) -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        error = {"code": "INVALID_ARGUMENT", "message": "fix it", "details": []}
        return httpx.Response(status, json={"error": error})

    link = BatchingLink(
        ControllerLink("http://ctl", "tok", transport=httpx.MockTransport(refuse)), 2
    )
    outcomes = asyncio.run(_report_all(link, ["h1", "h2"]))
    for outcome in outcomes:
        assert isinstance(outcome, Refused)
        assert (outcome.status, str(outcome)) == (status, "fix it")
