"""The console's sessions over real HTTP: cookie flags, credentials passed on, CSRF refused.

The console is served by the same app as the API (the extension vipu-server
installs), in front of a live secure controller.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from vpod.controller.caller import SYSTEM
from vpod.web import WebConsole
from vpod.web.login_throttle import FREE_FAILURES

from ..rest.live import CALL_TIMEOUT_S, LivePod, start_pod, stop_pod


@pytest.fixture(scope="module")
def console(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LivePod, str]]:
    """A secure pod whose HTTP app also serves the console; yields it and the console's URL."""
    pod = start_pod(tmp_path_factory.mktemp("web"), secure=True)
    try:
        web = WebConsole()(pod.controller)
        router = web.http_router()
        assert router is not None
        pod.app.include_router(router)
        url = pod.serve_app(web.wrap_http(pod.app))  # type: ignore[arg-type]
        yield pod, url
    finally:
        stop_pod(pod)


def _browser(url: str) -> httpx.Client:
    return httpx.Client(base_url=url, timeout=CALL_TIMEOUT_S, follow_redirects=False)


def _log_in(client: httpx.Client, body: dict[str, str]) -> httpx.Response:
    return client.post("/web/session", json=body)


def test_login_sets_a_strict_http_only_cookie_and_hides_the_key(
    console: tuple[LivePod, str],
) -> None:
    pod, url = console
    with _browser(url) as browser:
        answer = _log_in(browser, {"kind": "vipu", "user_id": "root", "access_key": pod.admin_key})
        assert answer.status_code == 200, answer.text
        cookie = answer.headers["set-cookie"]
        assert "HttpOnly" in cookie
        assert "SameSite=Strict" in cookie
        assert "Path=/" in cookie
        assert "Secure" not in cookie  # plain HTTP here; under TLS the flag is set
        session = answer.json()
        assert session["identity"] == {
            "user_id": "root",
            "admin": True,
            "allocation_ids": None,
            "secure": True,
        }
        assert session["home"] == "/admin/map"
        assert pod.admin_key not in answer.text
        assert browser.get("/api/v1/admin/pod-map").status_code == 200
        assert browser.get("/admin/map").status_code == 200


def test_wrong_credentials_are_refused_and_make_no_session(console: tuple[LivePod, str]) -> None:
    _, url = console
    with _browser(url) as browser:
        answer = _log_in(browser, {"kind": "vipu", "user_id": "root", "access_key": "wrong"})
        assert answer.status_code == 401
        assert "set-cookie" not in answer.headers
        assert "wrong access key" in answer.json()["error"]["message"]
        assert _log_in(browser, {"kind": "open"}).status_code == 401  # secure: no open entry
        assert browser.get("/web/session").json()["secure"] is True
        assert browser.get("/admin/map").headers["location"] == "/login?next=/admin/map"
        assert browser.get("/api/v1/admin/pod-map").status_code == 401


def test_a_change_without_the_csrf_token_is_refused(console: tuple[LivePod, str]) -> None:
    pod, url = console
    with _browser(url) as browser:
        session = _log_in(
            browser, {"kind": "vipu", "user_id": "root", "access_key": pod.admin_key}
        ).json()
        body = {"id": "csrf-p", "size": 1, "allocation_id": "alloc-a"}
        forged = browser.post("/api/v1/partitions", json=body)
        assert forged.status_code == 403
        assert "X-CSRF-Token" in forged.json()["error"]["message"]
        wrong = browser.post("/api/v1/partitions", json=body, headers={"X-CSRF-Token": "guess"})
        assert wrong.status_code == 403
        cross_site = browser.post(
            "/api/v1/partitions",
            json=body,
            headers={"X-CSRF-Token": session["csrf"], "Origin": "http://evil.example"},
        )
        assert cross_site.status_code == 403
        made = browser.post(
            "/api/v1/partitions", json=body, headers={"X-CSRF-Token": session["csrf"]}
        )
        assert made.status_code == 201, made.text
        removed = browser.delete(
            "/api/v1/partitions/csrf-p", headers={"X-CSRF-Token": session["csrf"]}
        )
        assert removed.status_code == 204


def test_a_plain_user_gets_the_user_console_and_no_admin_pages(
    console: tuple[LivePod, str],
) -> None:
    pod, url = console
    key = pod.run(pod.controller.inventory.create_user(SYSTEM, "webby", ["alloc-b"])).access_key
    with _browser(url) as browser:
        session = _log_in(browser, {"kind": "vipu", "user_id": "webby", "access_key": key}).json()
        assert session["home"] == "/user/partitions"
        assert browser.get("/admin/map").status_code == 403
        assert browser.get("/tenant/clusters").status_code == 403
        assert browser.get("/api/v1/admin/pod-map").status_code == 403
        assert browser.get("/user/partitions").status_code == 200


def test_logout_ends_the_session(console: tuple[LivePod, str]) -> None:
    pod, url = console
    with _browser(url) as browser:
        session = _log_in(
            browser, {"kind": "vipu", "user_id": "root", "access_key": pod.admin_key}
        ).json()
        assert (
            browser.delete("/web/session", headers={"X-CSRF-Token": session["csrf"]}).status_code
            == 204
        )
        assert browser.get("/web/session").status_code == 401
        assert browser.get("/api/v1/admin/pod-map").status_code == 401


def test_scripts_with_their_own_credentials_are_not_touched(console: tuple[LivePod, str]) -> None:
    """A request that brings credentials keeps them, even beside a session cookie."""
    pod, url = console
    with _browser(url) as browser:
        _log_in(browser, {"kind": "vipu", "user_id": "root", "access_key": pod.admin_key})
        answer = browser.get("/api/v1/whoami", headers={"Authorization": "Bearer root:nope"})
        assert answer.status_code == 401


def test_login_from_another_site_is_refused(console: tuple[LivePod, str]) -> None:
    pod, url = console
    with _browser(url) as browser:
        answer = browser.post(
            "/web/session",
            json={"kind": "vipu", "user_id": "root", "access_key": pod.admin_key},
            headers={"Origin": "http://evil.example"},
        )
        assert answer.status_code == 403


def test_pages_and_assets_are_served_without_any_cdn(console: tuple[LivePod, str]) -> None:
    _, url = console
    with _browser(url) as browser:
        assert browser.get("/").headers["location"] == "/login"
        shell = browser.get("/login")
        assert shell.status_code == 200
        assert "https://" not in shell.text
        policy = shell.headers["content-security-policy"]
        assert "script-src 'self'" in policy
        assert "frame-ancestors 'none'" in policy
        assert shell.headers["x-content-type-options"] == "nosniff"
        for asset in ("console.css", "js/main.js", "js/map.js", "js/tenant.js", "favicon.svg"):
            served = browser.get(f"/web/static/{asset}")
            assert served.status_code == 200, asset
            assert "https://" not in served.text, asset
        assert browser.get("/web/static/../pages.py").status_code == 404


def _from(url: str, source: str) -> httpx.Client:
    """A browser on another loopback address: another source to the console."""
    transport = httpx.HTTPTransport(local_address=source)
    return httpx.Client(
        base_url=url, timeout=CALL_TIMEOUT_S, follow_redirects=False, transport=transport
    )


def test_wrong_keys_back_off_their_source_and_never_delay_anyone_else(
    console: tuple[LivePod, str],
) -> None:
    pod, url = console
    statuses = []
    with _from(url, "127.0.0.3") as guesser:
        for n in range(FREE_FAILURES + 3):
            body = {"kind": "vipu", "user_id": f"guess-{n}", "access_key": "wrong"}
            statuses.append(_log_in(guesser, body).status_code)
        assert statuses[:FREE_FAILURES] == [401] * FREE_FAILURES
        assert 429 in statuses[FREE_FAILURES:]
        refused = _log_in(guesser, {"kind": "vipu", "user_id": "root", "access_key": "x"})
        assert refused.status_code == 429
        assert int(refused.headers["Retry-After"]) >= 1
        assert "try again in" in refused.json()["error"]["message"]
    with _from(url, "127.0.0.4") as operator:
        answer = _log_in(operator, {"kind": "vipu", "user_id": "root", "access_key": pod.admin_key})
        assert answer.status_code == 200, answer.text


def test_the_login_answers_where_to_go_only_within_the_site(console: tuple[LivePod, str]) -> None:
    pod, url = console
    root = {"kind": "vipu", "user_id": "root", "access_key": pod.admin_key}

    def next_of(target: str) -> str:
        with _browser(url) as browser:  # a fresh browser: no session yet
            answer = _log_in(browser, root | {"next": target})
            assert answer.status_code == 200, answer.text
            return str(answer.json()["next"])

    for target in ("/\\evil.example", "/\t/evil.example", "//evil.example", "https://x.y/"):
        assert next_of(target) == "/admin/map"
    assert next_of("/admin/agents?x=1") == "/admin/agents?x=1"
