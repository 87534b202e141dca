"""Prometheus metrics of one controller: requests served, and the state it manages.

One :class:`ControllerMetrics` per controller, holding its own
``CollectorRegistry`` (never the process-global one, so two controllers in
one process, as in tests, do not mix their numbers). It has three parts:

- request metrics, fed by the transports: :meth:`ControllerMetrics.observe_http`
  (the HTTP middleware) and :meth:`ControllerMetrics.observe_rpc` (the gRPC
  servers, directly or through :meth:`ControllerMetrics.grpc_interceptor`);
- state gauges (partitions by state, agents by reachability, IPUs used and
  free per cluster), computed from the store when scraped: call
  :meth:`ControllerMetrics.refresh_state` and then :meth:`ControllerMetrics.render`.
  The gauges come from one :class:`StateSnapshot` swapped in whole, so a
  scrape never sees half of one refresh and half of another;
- ``vpod_state_up``: 1 when the last refresh could read the store, else 0
  (the request metrics are still served when the store is down).

Metric names::

    vpod_http_requests_total{method,route,status}        counter
    vpod_http_request_duration_seconds{method,route}     histogram
    vpod_grpc_requests_total{service,method,code}        counter
    vpod_grpc_request_duration_seconds{service,method}   histogram
    vpod_partitions{cluster,ready_state,operation_state} gauge
    vpod_agents{state}                                   gauge  (reachable|unreachable|unknown)
    vpod_ipus{cluster,state}                             gauge  (used: in a partition | free)
    vpod_ipus_allocated{cluster}                         gauge  (in an allocation)
    vpod_state_up                                        gauge

and the per-IPU telemetry series of :mod:`.telemetry` (``vpod_ipu_*``, one
series per IPU, labelled like NVIDIA's DCGM exporter), rendered at most every
0.5 s from the heartbeats' cache: :meth:`ControllerMetrics.render_telemetry`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from typing import Any

import grpc
from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.registry import Collector

from . import errors
from .status import StateSnapshot, state_snapshot
from .telemetry import TelemetryExporter

StateReader = Callable[[], Awaitable[StateSnapshot]]
"""Reads the managed state for the gauges (:meth:`.status.ControllerStatus.state`)."""

log = logging.getLogger("vpod.metrics")

LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
"""Seconds; control-plane calls range from a cached read (~1 ms) to a multi-agent create."""

CONTENT_TYPE = CONTENT_TYPE_LATEST
"""What ``/metrics`` answers with (the Prometheus text format)."""


class _StateCollector(Collector):
    """Yields the gauges of the latest snapshot; knows nothing about where it came from."""

    def __init__(self) -> None:
        self.snapshot = StateSnapshot()
        self.up = False

    def collect(self) -> Iterator[Metric]:
        snap = self.snapshot
        partitions = GaugeMetricFamily(
            "vpod_partitions",
            "Partitions by cluster, ready state and operation state.",
            labels=["cluster", "ready_state", "operation_state"],
        )
        for (cluster, ready, operation), count in sorted(snap.partitions.items()):
            partitions.add_metric([cluster, ready, operation], count)
        agents = GaugeMetricFamily(
            "vpod_agents", "Registered agents by reachability.", labels=["state"]
        )
        for state, count in sorted(snap.agents.items()):
            agents.add_metric([state], count)
        ipus = GaugeMetricFamily(
            "vpod_ipus",
            "IPUs per cluster: used (held by a partition) or free.",
            labels=["cluster", "state"],
        )
        for cluster, count in sorted(snap.ipus_used.items()):
            ipus.add_metric([cluster, "used"], count)
        for cluster, count in sorted(snap.ipus_free.items()):
            ipus.add_metric([cluster, "free"], count)
        allocated = GaugeMetricFamily(
            "vpod_ipus_allocated",
            "IPUs per cluster that belong to an allocation.",
            labels=["cluster"],
        )
        for cluster, count in sorted(snap.ipus_allocated.items()):
            allocated.add_metric([cluster], count)
        up = GaugeMetricFamily(
            "vpod_state_up", "1 when the last scrape could read the controller's store, else 0."
        )
        up.add_metric([], 1 if self.up else 0)
        yield from (partitions, agents, ipus, allocated, up)


# -- the request metrics and the whole ------------------------------------------------------


class _ServedRequests:
    """The requests one protocol served: ``PREFIX_requests_total`` by ``labels`` and outcome,
    and ``PREFIX_request_duration_seconds`` by ``labels``."""

    def __init__(
        self,
        registry: CollectorRegistry,
        prefix: str,
        labels: tuple[str, str],
        outcome: str,
        helps: tuple[str, str],
    ) -> None:
        counted, timed = helps
        self._count = Counter(f"{prefix}_requests", counted, [*labels, outcome], registry=registry)
        self._latency = Histogram(
            f"{prefix}_request_duration_seconds",
            timed,
            list(labels),
            buckets=LATENCY_BUCKETS,
            registry=registry,
        )

    def observe(self, labels: tuple[str, str], outcome: str, seconds: float) -> None:
        self._count.labels(*labels, outcome).inc()
        self._latency.labels(*labels).observe(seconds)


def split_rpc_method(full_method: str) -> tuple[str, str]:
    """``/virmgrpc.UserService/GetVersion`` -> (``virmgrpc.UserService``, ``GetVersion``)."""
    service, _, method = full_method.lstrip("/").partition("/")
    return (service, method) if method else ("", service)


class ControllerMetrics:
    """The metrics of one controller, in a registry of their own."""

    def __init__(
        self,
        read_state: StateReader | None = None,
        *,
        telemetry: TelemetryExporter | None = None,
        more: Sequence[Callable[[], Awaitable[bytes]]] = (),
        registry: CollectorRegistry | None = None,
        timer: Callable[[], float] = time.perf_counter,
    ) -> None:
        self._read_state = read_state
        self.telemetry = telemetry
        self._more = tuple(more)
        """Series of server extensions (the cloud's per-GPU ``DCGM_FI_DEV_*``)."""
        self.registry = registry or CollectorRegistry(auto_describe=True)
        self.timer = timer
        self._http = _ServedRequests(
            self.registry,
            "vpod_http",
            ("method", "route"),
            "status",
            (
                "HTTP requests served, by route template and status.",
                "Time to serve an HTTP request.",
            ),
        )
        self._rpc = _ServedRequests(
            self.registry,
            "vpod_grpc",
            ("service", "method"),
            "code",
            ("gRPC calls served, by method and status code.", "Time to serve a gRPC call."),
        )
        self._state = _StateCollector()
        self.registry.register(self._state)

    # -- feeding

    def observe_http(self, method: str, route: str, status: int, seconds: float) -> None:
        """Count one HTTP request; ``route`` is the template (``/api/v1/partitions/{id}``)."""
        self._http.observe((method, route), str(status), seconds)

    def observe_rpc(self, full_method: str, code: grpc.StatusCode | str, seconds: float) -> None:
        """Count one gRPC call: ``full_method`` as gRPC names it, ``code`` its status."""
        service, method = split_rpc_method(full_method)
        code_name = code.name if isinstance(code, grpc.StatusCode) else str(code)
        self._rpc.observe((service, method), code_name, seconds)

    def grpc_interceptor(self) -> grpc.aio.ServerInterceptor:
        """An interceptor for ``grpc.aio.server(interceptors=[...])`` counting unary calls."""
        return _RpcMetricsInterceptor(self)

    # -- scraping

    async def refresh_state(self) -> bool:
        """Recompute the state gauges from the store; False (``vpod_state_up`` 0) if it fails."""
        if self._read_state is None:
            return False
        try:
            snapshot = await self._read_state()
        except errors.ServiceError as exc:
            log.warning("metrics: cannot read the controller's state: %s", exc)
            self._state.up = False
            return False
        self._state.snapshot = snapshot
        self._state.up = True
        return True

    def render(self) -> bytes:
        """Every metric in the Prometheus text format (:data:`CONTENT_TYPE`)."""
        return generate_latest(self.registry)

    async def render_telemetry(self) -> bytes:
        """The per-IPU ``vpod_ipu_*`` series (cached for a second), and the extensions' own
        series, in the same format."""
        text = await self.telemetry.render() if self.telemetry is not None else b""
        for render in self._more:
            text += await render()
        return text


# -- gRPC ---------------------------------------------------------------------------------


class _RpcMetricsInterceptor(grpc.aio.ServerInterceptor):  # type: ignore[misc]
    """Times every unary-unary call and counts it by the status code it ended with."""

    def __init__(self, metrics: ControllerMetrics) -> None:
        self._metrics = metrics

    async def intercept_service(
        self,
        continuation: Callable[[Any], Awaitable[Any]],
        handler_call_details: Any,
    ) -> Any:
        handler = await continuation(handler_call_details)
        if handler is None or handler.unary_unary is None:
            return handler
        inner = handler.unary_unary
        method: str = handler_call_details.method
        metrics = self._metrics

        async def timed(request: Any, context: Any) -> Any:
            start = metrics.timer()
            code: grpc.StatusCode = grpc.StatusCode.OK
            try:
                return await inner(request, context)
            except BaseException:
                code = context.code() or grpc.StatusCode.UNKNOWN
                raise
            finally:
                if code is grpc.StatusCode.OK:
                    code = context.code() or grpc.StatusCode.OK
                metrics.observe_rpc(method, code, metrics.timer() - start)

        return grpc.unary_unary_rpc_method_handler(
            timed,
            request_deserializer=handler.request_deserializer,
            response_serializer=handler.response_serializer,
        )


__all__ = [
    "CONTENT_TYPE",
    "ControllerMetrics",
    "StateReader",
    "StateSnapshot",
    "split_rpc_method",
    "state_snapshot",
]
