"""Network interfaces named on a command line (``vipu-server -a lo,eth1``) and their addresses.

An entry is an interface name (its IPv4 address is read from the kernel with
the SIOCGIFADDR ioctl) or an IP address given as is.
"""

from __future__ import annotations

import fcntl
import ipaddress
import socket
import struct

_SIOCGIFADDR = 0x8915
_IFNAMSIZ = 16


def interface_names() -> list[str]:
    return [name for _, name in socket.if_nameindex()]


def interface_address(name: str) -> str | None:
    """The IPv4 address of interface ``name``, or None when it has none (or no such one)."""
    if not name or len(name) >= _IFNAMSIZ:
        return None
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        try:
            packed = fcntl.ioctl(sock.fileno(), _SIOCGIFADDR, struct.pack("256s", name.encode()))
        except OSError:
            return None
    return socket.inet_ntoa(packed[20:24])


def resolve_interfaces(entries: list[str]) -> tuple[str, ...]:
    """The addresses of ``entries`` (names or addresses); ValueError saying which is unknown."""
    addresses: list[str] = []
    for entry in entries:
        try:
            addresses.append(str(ipaddress.ip_address(entry)))
            continue
        except ValueError:
            pass
        address = interface_address(entry)
        if address is None:
            known = ", ".join(interface_names()) or "none"
            raise ValueError(
                f"{entry!r} is neither an IP address nor a network interface with an IPv4"
                f" address (interfaces here: {known})"
            )
        addresses.append(address)
    return tuple(addresses)
