"""A shell process of a server, relayed: its output as chunks, its input, its terminal.

:class:`ProcessSession` runs one command line (bwrap's, or a plain shell in
the unsafe mode) either on pipes (a command: stdout and stderr apart, stdin
until the caller closes it) or on a pseudo-terminal of its own (an
interactive shell: the terminal is the process's controlling terminal, so
job control and Ctrl-C work, and its size follows the caller's window).

:class:`LiveSessions` remembers the sessions of each server, so that what
takes a server's mounts away (detaching a volume, shelving, deleting)
first ends the shells that still hold them.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import pty
import shutil
import struct
import termios
from collections.abc import Callable, Mapping, Sequence

STDOUT, STDERR = 1, 2
_CHUNK = 65536


class ProcessSession:
    """One started process and the ends of its input and output."""

    def __init__(self, process: asyncio.subprocess.Process, master: int | None) -> None:
        self._process = process
        self._master = master
        self._output: asyncio.Queue[tuple[int, bytes] | None] = asyncio.Queue(maxsize=64)
        self._pumps: list[asyncio.Task[None]] = []
        if master is not None:
            self._pumps.append(asyncio.create_task(self._pump_terminal(master)))
        else:
            assert process.stdout is not None
            assert process.stderr is not None
            self._pumps.append(asyncio.create_task(self._pump(STDOUT, process.stdout)))
            self._pumps.append(asyncio.create_task(self._pump(STDERR, process.stderr)))
        self._open_pumps = len(self._pumps)
        self.on_end: Callable[[], None] | None = None
        """Called once when the session ends (the driver forgets it)."""

    @classmethod
    async def start(
        cls,
        argv: Sequence[str],
        *,
        tty: bool,
        rows: int = 24,
        cols: int = 80,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        pass_fds: Sequence[int] = (),
    ) -> ProcessSession:
        if not tty:
            process = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=dict(env) if env is not None else None,
                cwd=cwd,
                pass_fds=tuple(pass_fds),
                start_new_session=True,
            )
            return cls(process, None)
        master, slave = pty.openpty()
        try:
            _set_size(master, rows, cols)
            setsid = shutil.which("setsid") or "setsid"
            # setsid --ctty: a session of its own whose controlling terminal is the pty
            process = await asyncio.create_subprocess_exec(
                setsid, "--ctty", *argv,
                stdin=slave, stdout=slave, stderr=slave,
                env=dict(env) if env is not None else None,
                cwd=cwd, pass_fds=tuple(pass_fds),
            )  # fmt: skip
        except BaseException:
            os.close(master)
            raise
        finally:
            os.close(slave)
        os.set_blocking(master, False)
        return cls(process, master)

    async def _pump(self, stream: int, reader: asyncio.StreamReader) -> None:
        try:
            while chunk := await reader.read(_CHUNK):
                await self._output.put((stream, chunk))
        finally:
            await self._pump_done()

    async def _pump_terminal(self, master: int) -> None:
        loop = asyncio.get_running_loop()
        readable = asyncio.Event()
        loop.add_reader(master, readable.set)
        try:
            while True:
                await readable.wait()
                readable.clear()
                try:
                    chunk = os.read(master, _CHUNK)
                except BlockingIOError:
                    continue
                except OSError:  # EIO: every process of the terminal ended
                    break
                if not chunk:
                    break
                await self._output.put((STDOUT, chunk))
        finally:
            loop.remove_reader(master)
            await self._pump_done()

    async def _pump_done(self) -> None:
        self._open_pumps -= 1
        if self._open_pumps == 0:
            await self._output.put(None)

    async def read(self) -> tuple[int, bytes] | None:
        """The next chunk of output (stream 1 or 2, bytes); ``None`` once it all ended."""
        return await self._output.get()

    async def write(self, data: bytes) -> None:
        if self._master is not None:
            view = memoryview(data)
            while view:
                try:
                    view = view[os.write(self._master, view) :]
                except BlockingIOError:
                    await asyncio.sleep(0.01)
                except OSError:
                    return  # the terminal is gone
            return
        stdin = self._process.stdin
        if stdin is not None and not stdin.is_closing():
            with contextlib.suppress(ConnectionError):
                stdin.write(data)
                await stdin.drain()

    async def close_input(self) -> None:
        stdin = self._process.stdin
        if self._master is None and stdin is not None and not stdin.is_closing():
            stdin.close()

    def resize(self, rows: int, cols: int) -> None:
        if self._master is not None:
            with contextlib.suppress(OSError):
                _set_size(self._master, rows, cols)

    async def wait(self) -> int:
        """The exit status (a signal's as 128 + its number, as shells report it)."""
        code = await self._process.wait()
        return 128 - code if code < 0 else code

    async def end(self) -> None:
        """Kill the process (bwrap takes the whole sandbox with it) and let go of it all."""
        forget, self.on_end = self.on_end, None
        if forget is not None:
            forget()
        if self._process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self._process.kill()
            await self._process.wait()
        for pump in self._pumps:
            pump.cancel()
        await asyncio.gather(*self._pumps, return_exceptions=True)
        if self._master is not None:
            os.close(self._master)
            self._master = None


def _set_size(fd: int, rows: int, cols: int) -> None:
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


class LiveSessions:
    """The open sessions of each server of one driver."""

    def __init__(self) -> None:
        self._by_server: dict[str, set[ProcessSession]] = {}

    def count(self, server_id: str) -> int:
        return len(self._by_server.get(server_id, ()))

    def add(self, server_id: str, session: ProcessSession) -> None:
        self._by_server.setdefault(server_id, set()).add(session)

    def discard(self, server_id: str, session: ProcessSession) -> None:
        self._by_server.get(server_id, set()).discard(session)

    async def end_all(self, server_id: str) -> None:
        for session in list(self._by_server.pop(server_id, ())):
            await session.end()


SESSIONS: dict[str, LiveSessions] = {}
"""Live sessions by cloud directory: the compute and volume drivers of one cloud share them
(detaching a volume ends the shells that mount it)."""


def sessions_of(base: str) -> LiveSessions:
    return SESSIONS.setdefault(base, LiveSessions())


__all__ = ["STDERR", "STDOUT", "LiveSessions", "ProcessSession", "sessions_of"]
