"""Fixtures for the HTTP API tests: live pods (see :mod:`tests.rest.live`).

``pod`` is shared by a module (starting agents and a controller costs about
a second); tests that change state use their own ids and clean up after
themselves. ``secure_pod`` runs the controller with ``--secure``.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from .live import LivePod, start_pod, stop_pod


@pytest.fixture(scope="module")
def pod(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LivePod]:
    """Six emulated machines; cluster ``pod`` of ag1-ag4; allocations alloc-a, alloc-b."""
    live = start_pod(tmp_path_factory.mktemp("pod"))
    try:
        yield live
    finally:
        stop_pod(live)


@pytest.fixture(scope="module")
def secure_pod(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LivePod]:
    """The same pod with ``--secure``; user ``root`` is an admin (key in ``admin_key``)."""
    live = start_pod(tmp_path_factory.mktemp("secure"), secure=True)
    try:
        yield live
    finally:
        stop_pod(live)


@pytest.fixture
def http(pod: LivePod) -> Iterator[httpx.Client]:
    with pod.client() as client:
        yield client
