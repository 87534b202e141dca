"""add_port: a gRPC address that cannot be bound is one OSError naming what could not listen."""

from __future__ import annotations

import asyncio
import socket

import grpc
import pytest

from vpod.controller.grpc_listen import add_port

ADVICE = "; choose another with the matching --*-port option"


def _bind(target: str) -> int:
    async def bind() -> int:
        server = grpc.aio.server()
        return add_port(server, target, None, what="the user API", advice=ADVICE)

    return asyncio.run(bind())


def test_a_free_port_is_bound_and_returned() -> None:
    assert _bind("127.0.0.1:0") > 0


def test_a_port_in_use_names_what_could_not_listen_and_where() -> None:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        with pytest.raises(OSError, match="cannot listen for the user API") as caught:
            _bind(f"127.0.0.1:{port}")
    # gRPC refuses either by raising (its reason follows) or by answering port 0 (ours does).
    assert str(caught.value).startswith(f"cannot listen for the user API on 127.0.0.1:{port}: ")
