"""Which registered hosts a cluster's servers go on. Pure: hosts + need -> choice | Rejected.

Hosts are GPU servers and bare-metal Poplar servers that registered with the
cloud (see ``services/hosts.py``). Each host has ``slots``: one per GPU (one
for a Poplar server). A bare-metal server takes every slot of one host; a
GPU VM takes ``gpus_per_server`` slots of a hypervisor. The store enforces
that a slot is held by at most one server (primary key), so two requests
racing for a host cannot both win; placement only has to choose well:

- InfiniBand flavors put every server of a cluster in one fabric: the one
  the cluster already uses (resize), else the fabric with the fewest free
  hosts that still fit the request (best fit keeps big fabrics whole);
- VMs go to the hypervisor with the fewest free slots that still fit;
- ties are broken by host id, so the same input gives the same answer.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from vpod.placement import Rejected

from .flavors import Flavor, HostRole


@dataclass(frozen=True)
class HostView:
    """A registered host and which of its slots are free now."""

    id: str
    role: HostRole
    model: str
    fabric: str | None
    slots: int
    free: tuple[int, ...]
    enabled: bool = True

    @property
    def whole_free(self) -> bool:
        return len(self.free) == self.slots


@dataclass(frozen=True)
class ServerChoice:
    host_id: str
    slots: tuple[int, ...]
    fabric: str | None


def _usable(hosts: Sequence[HostView], flavor: Flavor) -> list[HostView]:
    return [
        h
        for h in hosts
        if h.enabled and h.role is flavor.host_role and h.model == flavor.host_model
    ]


def _slots_needed(flavor: Flavor) -> int:
    return flavor.gpus_per_server if flavor.host_role is HostRole.HYPERVISOR else 0


def _fill(hosts: list[HostView], flavor: Flavor, count: int) -> list[ServerChoice] | None:
    """``count`` servers on ``hosts`` (whole hosts for bare metal, best-fit slots for VMs)."""
    need = _slots_needed(flavor)
    chosen: list[ServerChoice] = []
    if need == 0:
        for host in sorted((h for h in hosts if h.whole_free), key=lambda h: h.id)[:count]:
            chosen.append(ServerChoice(host.id, tuple(range(host.slots)), host.fabric))
        return chosen if len(chosen) == count else None
    free = {h.id: list(h.free) for h in hosts}
    by_id = {h.id: h for h in hosts}
    for _ in range(count):
        fits = [hid for hid, slots in free.items() if len(slots) >= need]
        if not fits:
            return None
        best = min(fits, key=lambda hid: (len(free[hid]), hid))
        taken, free[best] = free[best][:need], free[best][need:]
        chosen.append(ServerChoice(best, tuple(taken), by_id[best].fabric))
    return chosen


def place_servers(
    hosts: Sequence[HostView], flavor: Flavor, count: int, *, fabric: str | None = None
) -> list[ServerChoice] | Rejected:
    """Hosts (and slots) for ``count`` new servers of ``flavor``; ``fabric`` pins IB clusters."""
    usable = _usable(hosts, flavor)
    what = f"{count} server{'s' if count != 1 else ''} of {flavor.name}"
    if not usable:
        return Rejected(
            (
                f"no {flavor.host_role} host of model {flavor.host_model} is registered for"
                f" {flavor.name}: ask the administrator to add some",
            )
        )
    if not flavor.infiniband:
        chosen = _fill(usable, flavor, count)
        if chosen is None:
            return Rejected((f"not enough free {flavor.host_model} hosts for {what}",))
        return chosen
    fabrics: dict[str, list[HostView]] = defaultdict(list)
    for host in usable:
        if host.fabric:
            fabrics[host.fabric].append(host)
    if fabric is not None:
        chosen = _fill(fabrics.get(fabric, []), flavor, count)
        if chosen is None:
            return Rejected(
                (
                    f"InfiniBand fabric {fabric}, where the cluster's servers are, has no room"
                    f" for {what}",
                )
            )
        return chosen
    options = []
    for name, members in fabrics.items():
        chosen = _fill(members, flavor, count)
        if chosen is not None:
            spare = sum(len(h.free) for h in members)
            options.append((spare, name, chosen))
    if not options:
        largest = max((sum(h.whole_free for h in m) for m in fabrics.values()), default=0)
        return Rejected(
            (f"no InfiniBand fabric has room for {what}: the emptiest has {largest} free hosts",)
        )
    return min(options, key=lambda o: (o[0], o[1]))[2]


def capacity(hosts: Sequence[HostView], flavor: Flavor) -> int:
    """How many servers of ``flavor`` could be created now (one at a time)."""
    usable = _usable(hosts, flavor)
    need = _slots_needed(flavor)
    if need == 0:
        return sum(1 for h in usable if h.whole_free)
    return sum(len(h.free) // need for h in usable)
