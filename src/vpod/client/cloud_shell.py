"""A server's shell through the cloud API's relay (a WebSocket; protocol in docs/cloud.md).

:func:`open_relay` connects with the project's bearer token and sends the
request (a command or a shell, with or without a terminal);
:class:`ShellConnection` then carries input, output, window sizes and the
exit status. Blocking: ``send_*`` may be called from one thread while
another calls :meth:`ShellConnection.receive`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Self, TypedDict, Unpack

from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus
from websockets.sync.client import ClientConnection, connect

from .errors import Unreachable, VpodError, error_of_http
from .http_transport import HttpSite

STDIN, STDOUT, STDERR = 0, 1, 2


@dataclass(frozen=True)
class ShellOutput:
    stream: int
    """1: standard output (everything, with a terminal); 2: standard error."""
    data: bytes


@dataclass(frozen=True)
class ShellExit:
    code: int
    """The exit status of the server's shell (or command)."""


class WebSocketSession:
    """One WebSocket of the cloud API (a relayed shell, an SSH tunnel); close it (or leave its
    ``with``) to hang up."""

    def __init__(self, ws: ClientConnection) -> None:
        self._ws = ws

    def close(self) -> None:
        self._ws.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


class ShellConnection(WebSocketSession):
    """One relayed shell; close it to end the shell."""

    def __init__(self, ws: ClientConnection, endpoint: str) -> None:
        super().__init__(ws)
        self._endpoint = endpoint

    def send_input(self, data: bytes) -> None:
        self._ws.send(bytes([STDIN]) + data)

    def close_input(self) -> None:
        """End of input (a command reading its standard input sees end of file)."""
        self._ws.send(json.dumps({"eof": True}))

    def resize(self, rows: int, cols: int) -> None:
        self._ws.send(json.dumps({"resize": [rows, cols]}))

    def receive(self) -> ShellOutput | ShellExit:
        """The next output, or the exit status (last); :class:`Unreachable` when the relay
        went away without one."""
        while True:
            try:
                message = self._ws.recv()
            except ConnectionClosed as exc:
                raise Unreachable(
                    f"the shell's connection closed without an exit status ({exc})",
                    endpoint=self._endpoint,
                ) from None
            if isinstance(message, bytes):
                if message:
                    return ShellOutput(message[0], message[1:])
                continue
            control: Any = json.loads(message)
            if "exit" in control:
                return ShellExit(int(control["exit"]))
            if "error" in control:
                error = control["error"]
                raise error_of_http(
                    400, str(error.get("code", "")), error["message"], self._endpoint
                )


def websocket_to(site: HttpSite, path: str, what: str) -> ClientConnection:
    """A WebSocket to ``path`` of the site, with its credentials; refusals as the client's
    errors (the HTTP answer's JSON error), an unreachable site as :class:`Unreachable`."""
    base = site.base_url.rstrip("/")
    url = ("wss" + base[5:] if base.startswith("https") else "ws" + base[4:]) + path
    tls = site.tls_context() if base.startswith("https") else None
    try:
        return connect(
            url,
            additional_headers=dict(site.headers),
            ssl=tls,
            open_timeout=site.timeout_s,
            max_size=2**22,
        )
    except InvalidStatus as exc:
        reply = exc.response
        try:
            error = json.loads(reply.body or b"")["error"]
            code, message = str(error.get("code") or ""), str(error["message"])
        except (ValueError, KeyError, TypeError):
            code, message = "", f"{site.name} answered {reply.status_code}"
        raise error_of_http(reply.status_code, code, message, site.base_url) from None
    except (OSError, InvalidHandshake, TimeoutError) as exc:
        raise Unreachable(
            f"cannot reach {site.name}'s {what} at {site.base_url} ({exc}): {site.hint}",
            endpoint=site.base_url,
        ) from None


class ShellRequest(TypedDict, total=False):
    """What to start on the server (unset: the default named)."""

    command: str | None
    """Run by the server's shell; None (default): a login shell."""
    tty: bool
    """With a terminal (default: without)."""
    rows: int
    """The terminal's size: 24 rows by 80 columns by default."""
    cols: int
    term: str
    """``TERM`` (default ``xterm``)."""
    lang: str
    """``LANG`` (default: the server's)."""


def open_relay(
    site: HttpSite, connect_path: str, **request: Unpack[ShellRequest]
) -> ShellConnection:
    """Connect to the relay at ``connect_path`` (from the shell info) and start the shell."""
    ws = websocket_to(site, connect_path, "shell relay")
    first: dict[str, Any] = {
        "command": request.get("command"),
        "tty": request.get("tty", False),
        "rows": request.get("rows", 24),
        "cols": request.get("cols", 80),
        "term": request.get("term", "xterm"),
    }
    if request.get("lang"):
        first["lang"] = request["lang"]
    ws.send(json.dumps(first))
    return ShellConnection(ws, site.base_url)


__all__ = [
    "ShellConnection",
    "ShellExit",
    "ShellOutput",
    "ShellRequest",
    "VpodError",
    "open_relay",
    "websocket_to",
]
