"""The console's pages, assets and session endpoints.

- ``/``: to the console of whoever is logged in, else to ``/login``;
- ``/login``, ``/admin/...`` (operators), ``/tenant/...`` (a cloud project),
  ``/user/...`` (a V-IPU user): one page shell; the scripts under
  ``/web/static`` draw each view from the public REST API;
- ``GET/POST/DELETE /web/session``: who is logged in (with the CSRF
  token), log in, log out.

The server refuses a page that is not for the session's kind (403) before
any script runs: a tenant never gets an operator's page, even by URL, and
the API refuses the data anyway.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import quote

from fastapi import APIRouter, Request
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, ConfigDict, Field

from .login_throttle import LoginThrottle
from .middleware import header, same_origin
from .redirects import same_site_path
from .sessions import Credentials, Session, SessionStore, cookie_of, cookie_value

if TYPE_CHECKING:
    import httpx

STATIC = Path(__file__).with_name("static")
PAGE_HEADERS = {
    # Scripts only from the controller itself (no inline script, nothing from elsewhere);
    # styles may be inline (the map colours each IPU); no framing (clickjacking).
    "Content-Security-Policy": "default-src 'self'; script-src 'self'; style-src 'self'"
    " 'unsafe-inline'; img-src 'self' data: blob:; connect-src 'self'; frame-ancestors 'none';"
    " base-uri 'none'; form-action 'self'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}
SHELL = STATIC / "index.html"
LOGIN_TIMEOUT_S = 30.0


class LoginBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: Literal["vipu", "cloud", "open"] = Field(
        description="`vipu`: user id and access key; `cloud`: a project token; `open`: none"
        " (controllers without --secure)."
    )
    user_id: str = Field("", max_length=64)
    access_key: str = Field("", max_length=256)
    token: str = Field("", max_length=512)
    next: str = Field(
        "",
        max_length=2048,
        description="Where the page wants to go after login: answered back as ``next`` if it"
        " is a path of this site (read as a browser reads it), else the person's home page.",
    )


def _error(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message, "details": []}}, status)


def _is_operator(session: Session) -> bool:
    return session.kind == "vipu" and bool(session.identity.get("admin"))


def _denied(what: str) -> HTMLResponse:
    page = (
        "<!doctype html><html lang=en><head><meta charset=utf-8><title>Not permitted - vpod"
        "</title><link rel=stylesheet href=/web/static/console.css><link rel=icon"
        " href=/web/static/favicon.svg></head><body><main"
        ' class="denied" role=main><h1>Not permitted</h1>'
        f"<p>This page is for {what}; you are logged in as someone else.</p>"
        '<p><a href="/">Back to your console</a> · <a href="/login">Log in as someone'
        " else</a></p></main></body></html>"
    )
    return HTMLResponse(page, status_code=403, headers=PAGE_HEADERS)


def _home(session: Session | None) -> str:
    if session is None:
        return "/login"
    if session.kind == "cloud":
        return "/tenant/clusters"
    return "/admin/map" if session.identity.get("admin") else "/user/partitions"


async def _ask_api(request: Request, path: str, credentials: Credentials) -> httpx.Response:
    """Call the controller's own API in-process, as a script holding ``credentials`` would."""
    # Imported at the first login, not at start-up: every controller serves the console.
    import httpx

    headers = {k.decode(): v.decode() for k, v in credentials.headers()}
    transport = httpx.ASGITransport(app=request.app, client=("127.0.0.1", 0))
    async with httpx.AsyncClient(
        transport=transport, base_url="http://console", timeout=LOGIN_TIMEOUT_S
    ) as api:
        return await api.get(path, headers=headers)


_MODE = "vpod_web_secure"


async def _is_secure(request: Request) -> bool:
    """Whether the API authenticates callers: asked once (a controller's mode is fixed while
    it runs), so opening the login page does not add a refusal to the audit log each time."""
    known: bool | None = getattr(request.app.state, _MODE, None)
    if known is None:
        answer = await _ask_api(request, "/api/v1/whoami", Credentials(kind="vipu"))
        known = answer.status_code != 200 or bool(answer.json().get("secure", True))
        setattr(request.app.state, _MODE, known)
    return known


def _principal_tried(body: LoginBody) -> str:
    """Whose key a login tries: the V-IPU user id, or the cloud token's id (before its dot)."""
    if body.kind == "vipu":
        return f"vipu:{body.user_id.strip()}"
    if body.kind == "cloud":
        return f"cloud-token:{body.token.strip().partition('.')[0]}"
    return ""


def web_routes(sessions: SessionStore, throttle: LoginThrottle | None = None) -> APIRouter:
    throttle = throttle if throttle is not None else LoginThrottle()
    router = APIRouter(include_in_schema=False)

    def session_of(request: Request) -> Session | None:
        return sessions.get(cookie_of(request.headers.get("cookie", "")))

    def shell() -> FileResponse:
        return FileResponse(SHELL, media_type="text/html", headers=PAGE_HEADERS)

    @router.get("/")
    async def home(request: Request) -> Response:
        return RedirectResponse(_home(session_of(request)), status_code=303)

    @router.get("/login")
    async def login_page() -> Response:
        return shell()

    def page(
        request: Request, wanted: str, admits: Callable[[Session], bool], who: str
    ) -> Response:
        """The console for those ``admits`` lets in (``who``); without a session, the login
        page, which leads on to ``wanted``."""
        session = session_of(request)
        if session is None:
            return RedirectResponse(f"/login?next={wanted}", status_code=303)
        if not admits(session):
            return _denied(who)
        return shell()

    @router.get("/admin/{rest:path}")
    async def admin_page(request: Request, rest: str) -> Response:
        return page(request, f"/admin/{rest}", _is_operator, "the pod's operators")

    @router.get("/tenant/{rest:path}")
    async def tenant_page(request: Request, rest: str) -> Response:
        wanted = f"/tenant/{rest}" + (f"?{request.url.query}" if request.url.query else "")
        return page(
            request,
            quote(wanted, safe="/"),
            lambda s: s.kind == "cloud",
            "a cloud project's members",
        )

    @router.get("/user/{rest:path}")
    async def user_page(request: Request, rest: str) -> Response:
        return page(request, f"/user/{rest}", lambda s: s.kind == "vipu", "V-IPU users")

    assets = StaticFiles(directory=STATIC)

    @router.get("/web/static/{path:path}")
    async def static(request: Request, path: str) -> Response:
        served = await assets.get_response(path, request.scope)
        served.headers.setdefault("Cache-Control", "no-cache")
        served.headers["X-Content-Type-Options"] = "nosniff"
        return served

    @router.get("/web/session")
    async def current(request: Request) -> Response:
        session = session_of(request)
        if session is None:
            secure = await _is_secure(request)
            return JSONResponse(
                {
                    "error": {"code": "UNAUTHENTICATED", "message": "not logged in", "details": []},
                    "secure": secure,
                },
                status_code=401,
            )
        return JSONResponse(session.public() | {"home": _home(session)})

    @router.post("/web/session")
    async def login(request: Request, body: LoginBody) -> Response:
        if not same_origin(request.scope) or "json" not in (
            header(request.scope, b"content-type") or ""
        ):
            return _error(403, "PERMISSION_DENIED", "log in from the console's own page")
        source = request.client.host if request.client is not None else ""
        principal = _principal_tried(body)
        wait = throttle.retry_after(source, principal)
        if wait > 0:
            answer = _error(
                429,
                "RESOURCE_EXHAUSTED",
                f"too many wrong logins: try again in {wait} s",
            )
            answer.headers["Retry-After"] = str(wait)
            return answer
        created = await _log_in(request, body)
        if isinstance(created, JSONResponse):
            if created.status_code in (401, 403):
                throttle.failed(source, principal)
            return created
        throttle.succeeded(source, principal)
        session = sessions.create(*created)
        home = _home(session)
        answer = JSONResponse(
            session.public() | {"home": home, "next": same_site_path(body.next) or home}
        )
        answer.headers["set-cookie"] = cookie_value(session, secure=request.url.scheme == "https")
        return answer

    @router.delete("/web/session")
    async def logout(request: Request) -> Response:
        session = session_of(request)
        if session is not None:
            sessions.end(session.id)
        answer = Response(status_code=204)
        answer.headers["set-cookie"] = cookie_value(None, secure=request.url.scheme == "https")
        return answer

    return router


async def _log_in(
    request: Request, body: LoginBody
) -> tuple[Credentials, dict[str, Any]] | JSONResponse:
    """Check the credentials against the API; what the session keeps, or the refusal."""
    if body.kind == "cloud":
        credentials = Credentials(kind="cloud", token=body.token.strip())
        answer = await _ask_api(request, "/api/cloud/v1/project", credentials)
        if answer.status_code != 200:
            return _refusal(answer, "cloud project token")
        project = answer.json()
        identity = {
            "project_id": project["id"],
            "name": project.get("name", project["id"]),
            "secure": await _is_secure(request),
        }
        return credentials, identity
    if body.kind == "open":
        credentials = Credentials(kind="vipu")
    else:
        credentials = Credentials(
            kind="vipu", user_id=body.user_id.strip(), access_key=body.access_key.strip()
        )
        if not credentials.user_id or not credentials.access_key:
            return _error(400, "INVALID_ARGUMENT", "give a user id and its access key")
    answer = await _ask_api(request, "/api/v1/whoami", credentials)
    if answer.status_code != 200:
        return _refusal(answer, "user id and access key")
    return credentials, answer.json()


def _refusal(answer: httpx.Response, what: str) -> JSONResponse:
    try:
        message = answer.json()["error"]["message"]
    except (ValueError, KeyError, TypeError):
        message = f"the {what} was refused"
    status = answer.status_code if answer.status_code in (400, 401, 403) else 401
    code = {400: "INVALID_ARGUMENT", 403: "PERMISSION_DENIED"}.get(status, "UNAUTHENTICATED")
    return _error(status, code, message)
