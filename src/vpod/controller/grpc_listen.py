"""Listening on a gRPC server's address, with an error that says what could not listen."""

from __future__ import annotations

import grpc


def add_port(
    server: grpc.aio.Server,
    target: str,
    credentials: grpc.ServerCredentials | None,
    *,
    what: str,
    advice: str = "",
) -> int:
    """Listen on ``target`` (``HOST:PORT``; TLS with ``credentials``) and return the port;
    OSError naming ``what`` and ``target`` when it cannot (gRPC answers 0 or raises)."""
    try:
        if credentials is None:
            bound = server.add_insecure_port(target)
        else:
            bound = server.add_secure_port(target, credentials)
    except RuntimeError as exc:
        raise OSError(f"cannot listen for {what} on {target}: {exc}") from None
    if bound == 0:
        raise OSError(
            f"cannot listen for {what} on {target}: the port is in use or the address is not"
            f" local{advice}"
        )
    return int(bound)
