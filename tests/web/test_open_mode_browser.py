"""A controller without --secure: the console says so on every page and needs no credentials."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from vpod.web import WebConsole

from ..rest.live import LivePod, start_pod, stop_pod
from .browser import chromium, console_errors, screenshot, wait_in_page

pytestmark = [pytest.mark.system, pytest.mark.e2e]


@pytest.fixture(scope="module")
def open_console(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LivePod, str]]:
    pod = start_pod(tmp_path_factory.mktemp("open-web"))
    try:
        web = WebConsole()(pod.controller)
        router = web.http_router()
        assert router is not None
        pod.app.include_router(router)
        yield pod, pod.serve_app(web.wrap_http(pod.app))  # type: ignore[arg-type]
    finally:
        stop_pod(pod)


@pytest.fixture(scope="module")
def browser(open_console: tuple[LivePod, str]) -> Iterator[Any]:
    driver = chromium()
    yield driver
    driver.quit()


def _banner(browser: Any) -> str:
    return str(
        wait_in_page(
            browser,
            "const b = document.getElementById('banner'); return !b.hidden && b.textContent",
            15,
        )
    )


def test_open_mode_is_announced_on_every_page(
    open_console: tuple[LivePod, str], browser: Any
) -> None:
    _, url = open_console
    browser.get(url + "/login")
    assert "Open mode" in _banner(browser)
    assert "--secure" in _banner(browser)
    wait_in_page(browser, "return document.querySelector('#login-open button')", 15).click()
    wait_in_page(browser, "return document.body.dataset.mapReady", 30)
    assert browser.current_url.endswith("/admin/map")
    cells = browser.execute_script("return document.querySelectorAll('#map .ipu').length")
    assert cells == 16
    screenshot(browser, "open-mode-map")
    for page in ("agents", "clusters", "allocations", "users", "events"):
        browser.get(f"{url}/admin/{page}")
        assert "Open mode" in _banner(browser)
        wait_in_page(browser, "return document.querySelector('main h1')", 15)
    assert console_errors(browser) == []
