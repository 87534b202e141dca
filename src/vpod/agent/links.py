"""The links of an emulated IPU-Machine and the link tests run over them.

Decision (the emulation needs names, not cable geometry): each IPU owns two
IPU-Link ports, ``ipulink{2d}`` and ``ipulink{2d+1}`` for device d (the
machine's 8 IPU-Links); the machine has two GW-Links, ``gwlink0`` and
``gwlink1``, and one Sync-Link, ``synclink0``. A link fails its test when it
is down, and an IPU-Link also when its IPU is faulted.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from vpod.domain.catalog import IPUS_PER_MACHINE

from .model import Fault, LinkKind, LinkTestKind, LinkTestResult

DEVICE_IDS: tuple[int, ...] = tuple(range(IPUS_PER_MACHINE))
GW_LINKS: tuple[str, ...] = ("gwlink0", "gwlink1")
SYNC_LINKS: tuple[str, ...] = ("synclink0",)


def _ipu_link_names(device_id: int) -> tuple[str, str]:
    return (f"ipulink{2 * device_id}", f"ipulink{2 * device_id + 1}")


_IPU_LINKS = tuple(_ipu_link_names(d) for d in DEVICE_IDS)


def ipu_links_of(device_id: int) -> tuple[str, str]:
    """The two IPU-Link ports of IPU ``device_id`` (named once: read on every configure)."""
    if 0 <= device_id < len(_IPU_LINKS):
        return _IPU_LINKS[device_id]
    return _ipu_link_names(device_id)


LINKS: dict[str, tuple[LinkKind, int | None]] = {
    **{link: (LinkKind.IPU_LINK, d) for d in DEVICE_IDS for link in ipu_links_of(d)},
    **dict.fromkeys(GW_LINKS, (LinkKind.GW_LINK, None)),
    **dict.fromkeys(SYNC_LINKS, (LinkKind.SYNC_LINK, None)),
}
"""Every link of a machine: its kind and, for IPU-Links, the IPU it belongs to."""

_TESTED_LINKS: dict[LinkTestKind, tuple[LinkKind, str]] = {
    LinkTestKind.IPU_LINK: (LinkKind.IPU_LINK, "IPU-Links trained"),
    LinkTestKind.GW_LINK: (LinkKind.GW_LINK, "GW-Links trained"),
    LinkTestKind.SYNC_LINK: (LinkKind.SYNC_LINK, "Sync-Links in sync"),
}


@dataclass(frozen=True, slots=True)
class MachineFaults:
    """The faults a machine suffers now, as its link tests see them."""

    ipus: Mapping[int, Fault]
    """By device id."""
    links: Mapping[str, Fault]
    """By link name (:data:`LINKS`)."""

    def link_failure(self, link: str) -> str:
        """Why ``link`` fails its test, or "" when it passes."""
        fault = self.links.get(link)
        if fault is not None:
            return fault.describe()
        kind, device_id = LINKS[link]
        if kind is LinkKind.IPU_LINK and device_id is not None and device_id in self.ipus:
            return f"its IPU is faulted ({self.ipus[device_id].describe()})"
        return ""

    def ipu_failure(self, device_id: int) -> str:
        """Why IPU ``device_id`` fails the traffic test, or "" when it passes."""
        fault = self.ipus.get(device_id)
        if fault is not None:
            return fault.describe()
        down = [link for link in ipu_links_of(device_id) if link in self.links]
        return f"{', '.join(down)} down" if down else ""


def run_link_tests(
    agent_id: str, tests: Iterable[LinkTestKind], faults: MachineFaults
) -> list[LinkTestResult]:
    """Results of the named tests (all when none are named) in :class:`LinkTestKind` order."""
    wanted = set(tests) or set(LinkTestKind)
    return [_link_test(agent_id, kind, faults) for kind in LinkTestKind if kind in wanted]


def _link_test(agent_id: str, test: LinkTestKind, faults: MachineFaults) -> LinkTestResult:
    failures: list[str]
    if test is LinkTestKind.CABLING:
        failures = [f"{link}: no signal on the cable" for link in LINKS if link in faults.links]
        total, noun = len(LINKS), "cables detected"
    elif test is LinkTestKind.TRAFFIC:
        failures = [f"IPU {d}: {why}" for d in DEVICE_IDS if (why := faults.ipu_failure(d))]
        total, noun = IPUS_PER_MACHINE, "IPUs passed traffic"
    else:
        kind, noun = _TESTED_LINKS[test]
        links = [link for link, (k, _) in LINKS.items() if k is kind]
        failures = [f"{link}: {why}" for link in links if (why := faults.link_failure(link))]
        total = len(links)
    verdict = "; failed" if failures else ""
    return LinkTestResult(
        test=test,
        passed=not failures,
        summary=f"{test.display_name} test on agent {agent_id}:"
        f" {total - len(failures)} of {total} {noun}{verdict}",
        details=tuple(f"{agent_id} {line}" for line in failures),
    )
