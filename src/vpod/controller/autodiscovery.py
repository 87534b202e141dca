"""Agent autodiscovery listeners (``vipu-server -a/--autodiscovery-listen-interfaces``).

Agents announce themselves with ``RegisterAgent`` (the agent registration
service). The admin endpoint serves it; ``-a`` names further network
interfaces (or addresses) on which the controller listens for those
announcements alone, on the admin port: agents on a management network can
find the controller there while the admin API itself stays on its own
address. Each listener serves the registration service and nothing else (an
admin call there is UNIMPLEMENTED), with the same TLS as the other endpoints.
An address the admin endpoint already covers (the same one, or an admin
endpoint on every address) gets no second listener.
"""

from __future__ import annotations

from collections.abc import Sequence

import grpc

from vpod.wire import admin_pb2_grpc as apb_grpc

from .grpc_listen import add_port

UNSPECIFIED = ("0.0.0.0", "::", "")


def listen_addresses(addresses: Sequence[str], admin_host: str) -> list[str]:
    """The addresses that need a listener of their own (in order, once each)."""
    if admin_host in UNSPECIFIED:
        return []
    wanted: list[str] = []
    for address in addresses:
        if address != admin_host and address not in wanted:
            wanted.append(address)
    return wanted


def autodiscovery_server(
    addresses: Sequence[str],
    port: int,
    registration: apb_grpc.AgentRegistrationServiceServicer,
    *,
    options: Sequence[tuple[str, int]],
    credentials: grpc.ServerCredentials | None,
) -> grpc.aio.Server:
    """A server answering RegisterAgent on every ``address:port`` (OSError naming one that
    cannot be bound)."""
    server = grpc.aio.server(options=list(options))
    apb_grpc.add_AgentRegistrationServiceServicer_to_server(registration, server)
    for address in addresses:
        target = f"[{address}]:{port}" if ":" in address else f"{address}:{port}"
        add_port(server, target, credentials, what="agent autodiscovery")
    return server
