"""A real Chromium (Debian's ``chromium`` + ``chromedriver``) driven by Selenium.

:func:`chromium` gives a headless browser or skips the test with the reason
(``scripts/test`` installs both packages when it runs as root).
Screenshots go to ``test-artifacts/screenshots/`` (ignored by git), named
after the page they show.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts" / "screenshots"
CHROMIUM_CANDIDATES = ("/usr/bin/chromium", "/usr/bin/chromium-browser")
DRIVER_CANDIDATES = ("/usr/bin/chromedriver",)

WAIT_JS = """
const [script, timeoutMs, done] = arguments;
const test = new Function(script);
const started = performance.now();
(function check() {
  let value = null;
  try { value = test(); } catch (error) { value = null; }
  if (value) done({value, waited: performance.now() - started});
  else if (performance.now() - started > timeoutMs) done(null);
  else setTimeout(check, 5);
})();
"""


def _first(paths: tuple[str, ...], name: str) -> str | None:
    for path in paths:
        if Path(path).exists():
            return path
    return shutil.which(name)


def chromium(width: int = 1400, height: int = 1000) -> Any:
    """A headless Chromium under WebDriver, or ``pytest.skip`` saying what is missing."""
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.options import Options
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        pytest.skip("selenium is not installed: scripts/bootstrap installs the dev dependencies")
    binary = _first(CHROMIUM_CANDIDATES, "chromium")
    driver = _first(DRIVER_CANDIDATES, "chromedriver")
    if binary is None or driver is None:
        pytest.skip(
            "Debian's chromium and chromium-driver are not installed (scripts/test installs"
            " them when run as root)"
        )
    options = Options()
    options.binary_location = binary
    for argument in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--disable-gpu",
        f"--window-size={width},{height}",
    ):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    browser = webdriver.Chrome(options=options, service=Service(driver))
    browser.set_script_timeout(60)
    return browser


def screenshot(browser: Any, name: str) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    browser.save_screenshot(str(path))
    return path


def wait_in_page(browser: Any, condition_js: str, timeout_s: float) -> Any:
    """Wait inside the page until ``condition_js`` (a function body) returns something truthy;
    returns it, or fails after ``timeout_s``."""
    # The driver's own script timeout must outlast the wait, or it fails first and says only
    # "script timeout".
    browser.set_script_timeout(timeout_s + 30)
    found = browser.execute_async_script(WAIT_JS, condition_js, timeout_s * 1000)
    assert found is not None, (
        f"the page never satisfied, in {timeout_s} s: {condition_js}\n{page_state(browser)}"
    )
    return found["value"]


def page_state(browser: Any) -> str:
    """Where the page is and what it shows, for a failure message."""
    shown = browser.execute_script(
        "const m = document.querySelector('main') || document.body;"
        " return m ? m.innerText.slice(0, 1500) : ''"
    )
    logged = [e["message"] for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    return f"at {browser.current_url}, showing:\n{shown}\nerrors logged: {logged or 'none'}"


def eventually(check: Callable[[], Any], timeout_s: float, what: str) -> Any:
    deadline = time.monotonic() + timeout_s
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout_s} s")
        time.sleep(0.05)


def console_errors(browser: Any) -> list[str]:
    """Script errors the page logged (failed requests the page expects, like a 401, aside)."""
    return [
        entry["message"]
        for entry in browser.get_log("browser")
        if entry["level"] == "SEVERE" and entry.get("source") != "network"
    ]
