"""``vpod cluster ssh``: a server's shell, relayed by the controller (docs/cloud.md).

With ``-- COMMAND...`` the words are joined by spaces and run by the
server's shell, as ssh does; its standard input is ours, its output and
error go to ours, and its exit status is ``vpod``'s. Without a command and
on a terminal: an interactive shell on a terminal of its own (raw mode
here, window size followed); without a terminal, the shell reads commands
from our standard input.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sys
import termios
import threading
import tty
from collections.abc import Iterator
from typing import TYPE_CHECKING, NoReturn

if TYPE_CHECKING:
    from vpod.client import CloudClient
    from vpod.client.cloud_shell import ShellConnection


def run_ssh(client: CloudClient, cluster: str, server: int, command: tuple[str, ...]) -> NoReturn:
    line = " ".join(command) if command else None
    interactive = line is None and os.isatty(0) and os.isatty(1)
    size = shutil.get_terminal_size()
    connection = client.open_shell(
        cluster,
        server,
        command=line,
        tty=interactive,
        rows=size.lines,
        cols=size.columns,
        term=os.environ.get("TERM", "xterm") if interactive else "dumb",
        lang=os.environ.get("LANG", ""),
    )
    with connection, _raw_terminal(interactive):
        if interactive:
            signal.signal(signal.SIGWINCH, lambda *_: _follow_size(connection))
        threading.Thread(
            target=_forward_input, args=(connection, not interactive), daemon=True
        ).start()
        code = _print_output(connection)
    sys.stdout.flush()
    os._exit(code)  # the input thread may be blocked reading: end at once


def _follow_size(connection: ShellConnection) -> None:
    size = shutil.get_terminal_size()
    connection.resize(size.lines, size.columns)


def _print_output(connection: ShellConnection) -> int:
    from vpod.client.cloud_shell import ShellExit  # loaded with the connection already

    while True:
        received = connection.receive()
        if isinstance(received, ShellExit):
            return received.code
        target = 2 if received.stream == 2 else 1
        view = memoryview(received.data)
        while view:
            view = view[os.write(target, view) :]


def _forward_input(connection: ShellConnection, close_at_end: bool) -> None:
    with contextlib.suppress(Exception):  # the shell ended: nothing more to send
        while data := os.read(0, 65536):
            connection.send_input(data)
        if close_at_end:
            connection.close_input()


@contextlib.contextmanager
def _raw_terminal(active: bool) -> Iterator[None]:
    """Our terminal in raw mode while the remote one interprets the keys."""
    if not active:
        yield
        return
    saved = termios.tcgetattr(0)
    tty.setraw(0, termios.TCSANOW)  # keep what was typed ahead (TCSAFLUSH would drop it)
    try:
        yield
    finally:
        termios.tcsetattr(0, termios.TCSADRAIN, saved)


__all__ = ["run_ssh"]
