"""The direct SSH ports' relay between a client's TCP connection and a server's sshd.

A real process stands in for sshd (a shell that answers or dies the way sshd
does) and a real loopback connection for the client: what the relay passes
on, and what it says when sshd ends before answering.
"""

from __future__ import annotations

import asyncio
import logging

import pytest

from vpod.cloud.drivers.sessions import ProcessSession
from vpod.cloud.ssh_direct import relay


async def _relay_to(script: str, send: bytes) -> tuple[int, bytes]:
    """Relay one loopback connection to ``sh -c script``; the client sends ``send``, then
    reads to the end. Returns what the relay counted and what the client received."""
    served: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        session = await ProcessSession.start(["sh", "-c", script], tty=False)
        try:
            counted = await relay(reader, writer, session, what="direct SSH port 1")
        finally:
            await session.end()
            writer.close()
        served.set_result(counted)  # after the clean-up: the test's loop may close next

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(send)
        await writer.drain()
        writer.write_eof()
        received = await asyncio.wait_for(reader.read(), 30)
        writer.close()
        return await asyncio.wait_for(served, 30), received
    finally:
        server.close()


def _relay_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    """The relay's warnings only: asyncio may add its own about the child process (in a
    busy test worker another test's leftover ``Popen`` can reap a reused pid first)."""
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == "vpod.cloud.ssh" and r.levelno >= logging.WARNING
    ]


def test_what_sshd_writes_reaches_the_client_and_nothing_is_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="vpod.cloud.ssh")
    sent, received = asyncio.run(
        _relay_to("echo SSH-2.0-OpenSSH_9.2; cat; echo chatter >&2", b"client hello\n")
    )
    assert received == b"SSH-2.0-OpenSSH_9.2\nclient hello\n"
    assert sent == len(received)
    assert not _relay_warnings(caplog)


def test_an_sshd_that_ends_before_answering_is_logged_with_its_last_words(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="vpod.cloud.ssh")
    lines = "; ".join(f"echo 'line {i}' >&2" for i in range(8))
    sent, received = asyncio.run(
        _relay_to(f"{lines}; echo 'sshd: no hostkeys available -- exiting.' >&2; exit 1", b"")
    )
    assert (sent, received) == (0, b"")
    warnings = _relay_warnings(caplog)
    assert len(warnings) == 1
    assert warnings[0].startswith("direct SSH port 1: the server's sshd ended before answering")
    assert warnings[0].endswith("sshd: no hostkeys available -- exiting.")
    assert "line 0" not in warnings[0]  # only the last lines: the reason is at the end


def test_a_silent_sshd_that_ends_is_logged_as_saying_nothing(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="vpod.cloud.ssh")
    assert asyncio.run(_relay_to("exit 255", b"")) == (0, b"")
    assert _relay_warnings(caplog) == [
        "direct SSH port 1: the server's sshd ended before answering: it wrote nothing on stderr"
    ]
