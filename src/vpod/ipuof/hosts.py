"""Where ``vpod-run`` starts its instances: ``--host`` lists, MPI-style hostfiles, and
poprun's spreading of instances over hosts.

A host is ``[user@]name`` with an optional number of slots (instances it takes):
``--host h1,h2`` or ``--host h1:2,h2:2``; a hostfile has one host per line,
``slots=N`` after it as MPI hostfiles have, ``#`` comments and blank lines.
A host named twice is one host whose slots add up (as Open MPI counts them).

Spreading (:func:`spread`): with no slots anywhere, the instances are divided
evenly, in order (instances 0..I/H-1 on the first host, and so on), so ``I``
must be a multiple of the number of hosts, as poprun requires; with slots,
hosts are filled in order up to their slots (a host without ``slots`` has
one), and they must add up to at least ``I``.

Pure: no I/O but the reading of a hostfile's text by the caller.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

HOST = re.compile(r"(?:[A-Za-z0-9_][A-Za-z0-9._-]*@)?[A-Za-z0-9_:][A-Za-z0-9._:%-]*")
"""``[user@]host``: a name, an IPv4 or IPv6 address; never a leading ``-`` (ssh would read
an option) nor a character a shell or ssh gives meaning to."""
LOCAL_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
MAX_SLOTS = 4096


class HostError(ValueError):
    """A host list or hostfile that cannot be used; the message says what to fix."""


@dataclass(frozen=True, slots=True)
class Host:
    name: str
    slots: int | None = None
    """Instances this host takes; None: not given (an even share)."""


def _checked_name(name: str, where: str) -> str:
    if not HOST.fullmatch(name):
        raise HostError(
            f"{where}: {name!r} is not a host name: give [user@]host (letters, digits, '.', '-',"
            " '_', or an address), not starting with '-'"
        )
    return name


def _checked_slots(text: str, where: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= MAX_SLOTS:
        raise HostError(
            f"{where}: slots must be a whole number from 1 to {MAX_SLOTS}, not {text!r}"
        )
    return int(text)


def parse_host_list(text: str) -> list[Host]:
    """``--host h1,h2`` or ``h1:2,h2:2`` (slots after the last ``:`` of a name that holds no
    other ``:``, so IPv6 addresses stay whole)."""
    hosts = []
    for item in text.split(","):
        item = item.strip()
        if not item:
            raise HostError(f"--host {text!r}: an empty host name; give h1,h2,...")
        name, slots = item, None
        head, sep, tail = item.rpartition(":")
        if sep and ":" not in head and tail.isdigit():
            name, slots = head, _checked_slots(tail, f"--host {item}")
        hosts.append(Host(_checked_name(name, "--host"), slots))
    return merged(hosts)


def parse_hostfile(text: str, source: str) -> list[Host]:
    """Lines ``host [slots=N]``; ``#`` starts a comment. ``source`` names the file in errors."""
    hosts = []
    for number, raw in enumerate(text.splitlines(), start=1):
        words = raw.split("#", 1)[0].split()
        if not words:
            continue
        where = f"{source}, line {number}"
        slots = None
        for word in words[1:]:
            key, sep, value = word.partition("=")
            if not sep or key != "slots":
                raise HostError(
                    f"{where}: {word!r} is not understood: a line is 'host' or 'host slots=N'"
                )
            slots = _checked_slots(value, where)
        hosts.append(Host(_checked_name(words[0], where), slots))
    if not hosts:
        raise HostError(f"{source} names no host: one host per line, 'host [slots=N]'")
    return merged(hosts)


def merged(hosts: Iterable[Host]) -> list[Host]:
    """One entry per host, in the order first named, slots of repeated names added up (a name
    repeated without slots counts one slot per mention)."""
    order: list[str] = []
    mentions: dict[str, list[int | None]] = {}
    for host in hosts:
        if host.name not in mentions:
            order.append(host.name)
            mentions[host.name] = []
        mentions[host.name].append(host.slots)
    result = []
    for name in order:
        given = mentions[name]
        if len(given) == 1:
            result.append(Host(name, given[0]))
        else:
            result.append(Host(name, sum(s or 1 for s in given)))
    return result


def spread(hosts: Sequence[Host], instances: int) -> list[str]:
    """The host of each instance, instance 0 first."""
    if not hosts:
        raise HostError("no host to run on")
    if all(h.slots is None for h in hosts):
        if instances % len(hosts):
            raise HostError(
                f"--num-instances {instances} must be a multiple of the {len(hosts)} hosts"
                " (each host runs as many instances), or give each host its slots"
                " ('host slots=N' in a hostfile, host:N in --host)"
            )
        share = instances // len(hosts)
        return [h.name for h in hosts for _ in range(share)]
    total = sum(h.slots or 1 for h in hosts)
    if total < instances:
        raise HostError(
            f"--num-instances {instances} needs {instances} slots but the hosts have {total}:"
            " give more hosts or more slots"
        )
    placed: list[str] = []
    for host in hosts:
        take = min(host.slots or 1, instances - len(placed))
        placed += [host.name] * take
    return placed


def is_local(name: str, own_names: Iterable[str] = ()) -> bool:
    """Whether ``name`` is this machine, where instances start without ssh: ``localhost``,
    the loopback addresses ``127.0.0.1``/``::1``, or one of ``own_names`` (the host name).
    A name with a user (``user@host``) always goes through ssh."""
    return name in LOCAL_NAMES or name in set(own_names)


__all__ = [
    "Host",
    "HostError",
    "is_local",
    "merged",
    "parse_host_list",
    "parse_hostfile",
    "spread",
]
