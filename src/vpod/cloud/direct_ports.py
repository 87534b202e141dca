"""Direct SSH ports (pure): the operator's host port range and which ports to hand out.

With ``ssh_direct_ports = "20000-20999"`` in the cloud settings every server
gets a port of that range on the controller's host, forwarded to its sshd
(``ssh_direct.py``); ``vpod cluster ssh-config --direct`` writes ``Port``
where the tunnel writes ``ProxyCommand``. The store records which server
holds which port (so a port survives restarts and suspend/resume and no two
servers share one); this module only reads the setting and chooses.
"""

from __future__ import annotations

from dataclasses import dataclass

from .model import errors

LOWEST_PORT = 1024
"""Below it ports are privileged: a controller running as root could shadow a system service."""
HIGHEST_PORT = 65535


@dataclass(frozen=True)
class PortRange:
    first: int
    last: int

    @property
    def size(self) -> int:
        return self.last - self.first + 1

    def __contains__(self, port: object) -> bool:
        return isinstance(port, int) and self.first <= port <= self.last

    def __str__(self) -> str:
        return f"{self.first}-{self.last}"


def parse_port_range(text: str, *, source: str = "ssh_direct_ports") -> PortRange | None:
    """``"20000-20999"`` (or one port, ``"20000"``); empty: the option is off (None)."""
    cleaned = text.strip()
    if not cleaned:
        return None
    first_text, dash, last_text = cleaned.partition("-")
    try:
        first = int(first_text)
        last = int(last_text) if dash else first
    except ValueError:
        raise errors.InvalidArgument(
            f"{source}: {text[:40]!r} is not a port range: give FIRST-LAST, such as 20000-20999"
        ) from None
    if not LOWEST_PORT <= first <= last <= HIGHEST_PORT:
        raise errors.InvalidArgument(
            f"{source}: {text[:40]!r} is not a port range of {LOWEST_PORT}-{HIGHEST_PORT} with"
            " FIRST <= LAST, such as 20000-20999"
        )
    return PortRange(first, last)


def exhausted(ports: PortRange, free: int, needed: int, what: str) -> errors.NoCapacity:
    """The refusal when ``what`` needs more direct ports than the range has free."""
    return errors.NoCapacity(
        f"{what} needs {needed} direct SSH port(s) but the host's range {ports} has"
        f" {free} free: delete clusters you no longer need, or ask the operator to widen"
        " ssh_direct_ports"
    )


__all__ = [
    "HIGHEST_PORT",
    "LOWEST_PORT",
    "PortRange",
    "exhausted",
    "parse_port_range",
]
