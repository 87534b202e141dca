"""Where each emulated machine listens.

A real pod gives every IPU-Machine its own address, and the spec's ports are
the same on every machine (IPUoF server ports 50052-50055, RDMA ports
7471-7474, by device id). Two ways to emulate that on one host:

``per-machine`` (default)
    Machine *i* gets address ``base + i`` (as an IPv4 integer) and keeps the
    spec's ports. Linux routes all of 127.0.0.0/8 to the loopback interface,
    so ``--address-base 127.1.0.1`` gives 127.1.0.1, 127.1.0.2, ... with no
    setup; a second pod on the same host uses another base (127.2.0.1).

``shared``
    Every machine uses one address (for hosts that only answer on 127.0.0.1,
    such as macOS) and ports are offset: machine *i* has agent port
    ``agent_port + i``, server ports ``server_port + 4i + d`` and RDMA ports
    ``rdma_port + 4i + d``.

A port of 0 means "any free port" for every listener of that kind, which is
what tests use; the ready line and GetIdentity report the ports bound.
"""

from __future__ import annotations

import enum
import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass

from vpod.domain.catalog import IPUS_PER_MACHINE
from vpod.domain.entities import MAX_PORT
from vpod.domain.entities import split_host_port as split_host_port  # HOST:PORT is the domain's

DEFAULT_AGENT_PORT = 8092
"""Decision: the agent's gRPC port, clear of the controller's user (8090) and admin (8091) ports."""
DEFAULT_SERVER_PORT = 50052
DEFAULT_RDMA_PORT = 7471
DEFAULT_ADDRESS_BASE = "127.1.0.1"


class AddressMode(enum.StrEnum):
    PER_MACHINE = "per-machine"
    SHARED = "shared"


@dataclass(frozen=True, slots=True)
class MachineAddress:
    """The listening addresses of one machine; ports may be 0 (any free port)."""

    index: int
    host: str
    agent_port: int
    ipuof_host: str
    server_ports: tuple[int, ...]
    rdma_ports: tuple[int, ...]


def join_host_port(host: str, port: int) -> str:
    """``host:port``, with brackets around an IPv6 host."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


@dataclass(frozen=True, slots=True)
class AddressPlan:
    """How machine indexes map to addresses and ports."""

    mode: AddressMode = AddressMode.PER_MACHINE
    base_host: str = DEFAULT_ADDRESS_BASE
    agent_port: int = DEFAULT_AGENT_PORT
    server_port: int = DEFAULT_SERVER_PORT
    rdma_port: int = DEFAULT_RDMA_PORT
    ipuof_base_host: str | None = None
    """Where IPUoF listens, when not on the agent's address (same mode rules)."""

    def addresses(self, count: int) -> list[MachineAddress]:
        """Addresses of machines 0..count-1; raises ValueError when the plan cannot hold them."""
        if count < 1:
            raise ValueError(f"an agent process runs at least 1 machine, not {count}")
        self._check_ports(count)
        hosts = self._hosts(self.base_host, count, "--address-base")
        ipuof_hosts = (
            self._hosts(self.ipuof_base_host, count, "--ipuof-address-base")
            if self.ipuof_base_host
            else hosts
        )
        return [self._address(i, hosts[i], ipuof_hosts[i]) for i in range(count)]

    def _address(self, index: int, host: str, ipuof_host: str) -> MachineAddress:
        shared = self.mode is AddressMode.SHARED

        def port(base: int, step: int, offset: int = 0) -> int:
            if base == 0:
                return 0
            return base + (step * index if shared else 0) + offset

        return MachineAddress(
            index=index,
            host=host,
            agent_port=port(self.agent_port, 1),
            ipuof_host=ipuof_host,
            server_ports=tuple(
                port(self.server_port, IPUS_PER_MACHINE, d) for d in range(IPUS_PER_MACHINE)
            ),
            rdma_ports=tuple(
                port(self.rdma_port, IPUS_PER_MACHINE, d) for d in range(IPUS_PER_MACHINE)
            ),
        )

    def _hosts(self, base: str, count: int, option: str) -> list[str]:
        if self.mode is AddressMode.SHARED:
            return [base] * count
        try:
            first = ipaddress.IPv4Address(base)
        except ValueError:
            raise ValueError(
                f"{option} {base!r} is not an IPv4 address: per-machine addresses count up"
                " from an IPv4 base such as 127.1.0.1 (use --single-address for a host name)"
            ) from None
        last_value = int(first) + count - 1
        if last_value > int(ipaddress.IPv4Address("255.255.255.254")):
            raise ValueError(f"{option} {base} leaves no room for {count} machines")
        last = ipaddress.IPv4Address(last_value)
        if first.is_loopback and not last.is_loopback:
            raise ValueError(
                f"{count} machines from {option} {base} would leave 127.0.0.0/8 (last {last}):"
                " choose a lower base"
            )
        return [str(ipaddress.IPv4Address(int(first) + i)) for i in range(count)]

    def _check_ports(self, count: int) -> None:
        shared = self.mode is AddressMode.SHARED
        ranges: list[tuple[str, int, int]] = []
        for name, base, width in (
            ("--agent-port", self.agent_port, 1),
            ("--ipuof-server-port", self.server_port, IPUS_PER_MACHINE),
            ("--ipuof-rdma-port", self.rdma_port, IPUS_PER_MACHINE),
        ):
            if base == 0:
                continue
            if not 0 < base <= MAX_PORT:
                raise ValueError(f"{name} {base} is not a port: use 1..{MAX_PORT} or 0 for any")
            span = width * count if shared else width
            end = base + span - 1
            if end > MAX_PORT:
                raise ValueError(
                    f"{name} {base} leaves no room for {count} machines (needs up to {end}):"
                    " choose a lower base port"
                )
            ranges.append((name, base, end))
        for i, (name, start, end) in enumerate(ranges):
            for other, ostart, oend in ranges[i + 1 :]:
                if start <= oend and ostart <= end:
                    raise ValueError(
                        f"{name} range {start}-{end} overlaps {other} range {ostart}-{oend}:"
                        " move one of them"
                    )


def agent_ids(prefix: str, count: int, first_index: int = 1) -> list[str]:
    """``ag1``, ``ag2``, ... for ``prefix="ag"``."""
    return [f"{prefix}{first_index + i}" for i in range(count)]


def describe(addresses: Sequence[MachineAddress]) -> str:
    """A short phrase for logs: the first and last agent addresses."""
    if not addresses:
        return "no machines"
    first, last = addresses[0], addresses[-1]
    head = join_host_port(first.host, first.agent_port)
    return (
        head if len(addresses) == 1 else f"{head} .. {join_host_port(last.host, last.agent_port)}"
    )
