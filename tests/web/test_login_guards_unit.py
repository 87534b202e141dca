"""The login's guards without a server: where ``next=`` may lead, and the backoff on wrong
keys (per source and per principal) that never delays anyone else."""

from __future__ import annotations

import pytest

from vpod.web.login_throttle import (
    FREE_FAILURES,
    MAX_PRINCIPAL_WAIT_S,
    MAX_WAIT_S,
    LoginThrottle,
)
from vpod.web.redirects import same_site_path


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize(
    "target",
    [
        "//evil.example",
        "/\\evil.example",
        "\\/evil.example",
        "\\\\evil.example",
        "/\t/evil.example",
        "/\n/evil.example",
        "/\r\n/evil.example",
        "\t//evil.example",
        " //evil.example",
        "\x00//evil.example",
        "\x1f/\\evil.example",
        "/\\\tevil.example",
        "https://evil.example/admin/map",
        "javascript:alert(1)",
        "evil.example",
        "",
        None,
    ],
)
def test_next_that_a_browser_reads_as_another_site_is_refused(target: str | None) -> None:
    assert same_site_path(target) is None


@pytest.mark.parametrize(
    ("target", "path"),
    [
        ("/admin/map", "/admin/map"),
        ("/tenant/clusters?x=1#top", "/tenant/clusters?x=1#top"),
        (" /admin/agents\t", "/admin/agents"),
        ("/admin\\agents", "/admin/agents"),
        ("/ad\tmin/map", "/admin/map"),
    ],
)
def test_next_within_the_site_is_kept_as_the_browser_reads_it(target: str, path: str) -> None:
    assert same_site_path(target) == path


def _fail(throttle: LoginThrottle, times: int, source: str, principal: str) -> None:
    for _ in range(times):
        throttle.failed(source, principal)


def test_wrong_keys_from_one_source_back_off_doubling_up_to_a_cap() -> None:
    clock = FakeClock()
    throttle = LoginThrottle(clock=clock)
    _fail(throttle, FREE_FAILURES, "10.0.0.9", "vipu:guess")
    assert throttle.retry_after("10.0.0.9", "vipu:other") == 0  # the free attempts
    waits = []
    for n in range(12):
        throttle.failed("10.0.0.9", f"vipu:guess-{n}")  # a new principal each time
        waits.append(throttle.retry_after("10.0.0.9", "vipu:anyone"))
    assert waits[:4] == [1, 2, 4, 8]
    assert waits == sorted(waits)
    assert waits[-1] == MAX_WAIT_S
    clock.now += MAX_WAIT_S
    assert throttle.retry_after("10.0.0.9", "vipu:anyone") == 0


def test_guesses_at_one_principal_from_many_sources_back_off_that_principal_only() -> None:
    clock = FakeClock()
    throttle = LoginThrottle(clock=clock)
    for n in range(FREE_FAILURES + 20):
        throttle.failed(f"10.1.0.{n}", "vipu:root")
    assert 0 < throttle.retry_after("10.9.9.9", "vipu:root") <= MAX_PRINCIPAL_WAIT_S
    # someone else, from another source, is never delayed
    assert throttle.retry_after("10.9.9.9", "vipu:ann") == 0
    assert throttle.retry_after("10.1.0.3", "vipu:ann") == 0  # each source failed once


def test_a_correct_login_clears_its_source_and_principal() -> None:
    throttle = LoginThrottle(clock=FakeClock())
    _fail(throttle, FREE_FAILURES + 3, "10.0.0.1", "cloud-token:vpod_a")
    assert throttle.retry_after("10.0.0.1", "cloud-token:vpod_a") > 0
    throttle.succeeded("10.0.0.1", "cloud-token:vpod_a")
    assert throttle.retry_after("10.0.0.1", "cloud-token:vpod_a") == 0
