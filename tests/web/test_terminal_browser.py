"""A terminal in the browser: a tenant types into a real shell on its server, in Chromium.

A real controller (secure, with the cloud and the web console, over four
emulated Bow-2000s, on loopback) serves the console; the tenant logs in
with its project's token, creates a vPOD through the API, asks the
API for the cluster's console address (`GET .../console`, as `vpod cluster
console` prints it), opens it, types a command into the xterm.js terminal
and sees its output; the clusters page's Shell button opens a panel with
the terminal's link and the servers' SSH host keys, with no JavaScript
error. The terminal's WebSocket carries the session's credentials only for
a page of the same site holding the session's CSRF token: the same cookie
without it is refused.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from tests.cloud.live import start_cloud, stop_cloud
from vpod.cloud.drivers.sandbox import sandbox_problem

from .browser import chromium, console_errors, wait_in_page

pytestmark = [
    pytest.mark.system,
    pytest.mark.slow,
    pytest.mark.skipif(
        sandbox_problem() is not None, reason=f"no sandbox on this host: {sandbox_problem()}"
    ),
]
FLAVOR = "g2a-ai-fast-v1pod-4"
VPOD = str(Path(sys.executable).with_name("vpod"))
SCREEN = (
    "const t = window.vpodTerminal; if (!t) return null; const b = t.buffer.active;"
    " const lines = []; for (let i = 0; i < b.length; i++) {"
    " lines.push(b.getLine(i).translateToString(true)); } return lines.join('\\n')"
)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """(console URL base, token): a running vPOD `termpod` of project `term`."""
    live = start_cloud(tmp_path_factory.mktemp("term"), web=True)
    try:
        token = live.project("term")
        with live.client(token) as http:
            task = http.post("/clusters", json={"name": "termpod", "flavor": FLAVOR}).json()
            assert live.wait(task["id"])["state"] == "FINISHED"
            yield live.url, token
            live.wait(http.delete("/clusters/termpod").json()["id"])
    finally:
        stop_cloud(live)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    driver = chromium()
    yield driver
    driver.quit()


def _log_in(browser: Any, url: str, token: str) -> None:
    browser.get(url + "/login")
    browser.delete_all_cookies()
    browser.get(url + "/login")
    form = wait_in_page(browser, "return document.querySelector('#login-cloud')", 30)
    form.find_element("name", "token").send_keys(token)
    form.find_element("css selector", "button").click()
    wait_in_page(browser, "return location.pathname === '/tenant/clusters'", 30)


def test_typing_into_the_browser_terminal_runs_a_command_and_shows_its_output(
    browser: Any, cluster: tuple[str, str]
) -> None:
    url, token = cluster
    _log_in(browser, url, token)
    printed = subprocess.run(
        [VPOD, "cluster", "console", "termpod", "--json"],
        env={"VPOD_URL": url, "VPOD_TOKEN": token},
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert printed.returncode == 0, printed.stderr
    console = json.loads(printed.stdout)
    assert console["type"] == "web-terminal"
    assert console["url"].startswith(url + "/tenant/terminal?")
    browser.get(console["url"])
    wait_in_page(browser, "return document.querySelector('#terminal[data-state=open]')", 60)
    wait_in_page(browser, "return document.querySelector('.xterm-helper-textarea')", 30)
    typed = browser.find_element("css selector", ".xterm-helper-textarea")
    typed.send_keys("echo $((6 * 7))-typed-here; hostname\n")
    screen = wait_in_page(
        browser,
        f"const s = (() => {{ {SCREEN} }})(); return s && s.includes('42-typed-here') && s",
        60,
    )
    assert "termpod-poplar-1" in screen  # the shell runs on the server, not the host
    typed.send_keys("exit 5\n")
    status = wait_in_page(
        browser, "const b = document.querySelector('#terminal[data-state=ended]');"
        " return b && document.getElementById('terminal-status').textContent", 30,
    )  # fmt: skip
    assert "exit status 5" in status
    assert console_errors(browser) == []


def test_the_shell_button_opens_the_terminal_link_and_host_keys_without_errors(
    browser: Any, cluster: tuple[str, str]
) -> None:
    url, token = cluster
    _log_in(browser, url, token)
    button = wait_in_page(
        browser,
        "const row = document.querySelector('[data-cluster=\"termpod\"]');"
        " return row && [...row.querySelectorAll('button')].find(b => b.textContent === 'Shell')",
        60,
    )
    button.click()
    link = wait_in_page(browser, "return document.getElementById('open-terminal')", 30)
    assert "/tenant/terminal?" in link.get_attribute("href")
    panel = browser.find_element("id", "panel").text
    assert "SHA256:" in panel
    assert console_errors(browser) == []


def test_the_terminals_websocket_needs_the_sessions_csrf_token(
    browser: Any, cluster: tuple[str, str]
) -> None:
    url, token = cluster
    _log_in(browser, url, token)
    cookies = "; ".join(f"{c['name']}={c['value']}" for c in browser.get_cookies())
    csrf = httpx.get(url + "/web/session", headers={"Cookie": cookies}).json()["csrf"]
    path = (
        "ws://127.0.0.1:"
        + url.rsplit(":", 1)[1]
        + "/api/cloud/v1/clusters/termpod/shell/connect?server=1"
    )
    headers = {"Cookie": cookies, "Origin": url}
    with pytest.raises(InvalidStatus) as refused:
        connect(path, additional_headers=headers, open_timeout=30).close()
    assert refused.value.response.status_code == 401
    with pytest.raises(InvalidStatus):  # the right token from another site's page
        connect(
            f"{path}&csrf={csrf}",
            additional_headers={**headers, "Origin": "http://evil.example"},
            open_timeout=30,
        ).close()
    with connect(f"{path}&csrf={csrf}", additional_headers=headers, open_timeout=30) as ws:
        ws.send(json.dumps({"command": "echo via-cookie", "tty": False}))
        received = b""
        while isinstance(message := ws.recv(timeout=60), bytes):
            received += message[1:]
        assert b"via-cookie" in received
        assert json.loads(message) == {"exit": 0}
