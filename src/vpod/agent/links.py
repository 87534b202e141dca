"""The links of an emulated IPU-Machine and the link tests run over them.

Decision (the emulation needs names, not cable geometry): each IPU owns two
IPU-Link ports, ``ipulink{2d}`` and ``ipulink{2d+1}`` for device d (the
machine's 8 IPU-Links); the machine has two GW-Links, ``gwlink0`` and
``gwlink1``, and one Sync-Link, ``synclink0``. A link fails its test when it
is down, and an IPU-Link also when its IPU is faulted.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from vpod.domain.catalog import IPUS_PER_MACHINE

from .model import Fault, LinkKind, LinkTestKind, LinkTestResult

DEVICE_IDS: tuple[int, ...] = tuple(range(IPUS_PER_MACHINE))
GW_LINKS: tuple[str, ...] = ("gwlink0", "gwlink1")
SYNC_LINKS: tuple[str, ...] = ("synclink0",)


def ipu_links_of(device_id: int) -> tuple[str, str]:
    """The two IPU-Link ports of IPU ``device_id``."""
    return (f"ipulink{2 * device_id}", f"ipulink{2 * device_id + 1}")


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


def run_link_tests(
    agent_id: str,
    tests: Iterable[LinkTestKind],
    ipu_faults: Mapping[int, Fault],
    link_faults: Mapping[str, Fault],
) -> list[LinkTestResult]:
    """Results of the named tests (all when none are named) in :class:`LinkTestKind` order."""
    wanted = set(tests) or set(LinkTestKind)
    return [
        _link_test(agent_id, kind, ipu_faults, link_faults)
        for kind in LinkTestKind
        if kind in wanted
    ]


def _link_failure(
    link: str, ipu_faults: Mapping[int, Fault], link_faults: Mapping[str, Fault]
) -> str:
    """Why ``link`` fails its test, or "" when it passes."""
    fault = link_faults.get(link)
    if fault is not None:
        return fault.describe()
    kind, device_id = LINKS[link]
    if kind is LinkKind.IPU_LINK and device_id is not None and device_id in ipu_faults:
        return f"its IPU is faulted ({ipu_faults[device_id].describe()})"
    return ""


def _ipu_failure(
    device_id: int, ipu_faults: Mapping[int, Fault], link_faults: Mapping[str, Fault]
) -> str:
    fault = ipu_faults.get(device_id)
    if fault is not None:
        return fault.describe()
    down = [link for link in ipu_links_of(device_id) if link in link_faults]
    return f"{', '.join(down)} down" if down else ""


def _link_test(
    agent_id: str,
    test: LinkTestKind,
    ipu_faults: Mapping[int, Fault],
    link_faults: Mapping[str, Fault],
) -> LinkTestResult:
    failures: list[str]
    if test is LinkTestKind.CABLING:
        failures = [f"{link}: no signal on the cable" for link in LINKS if link in link_faults]
        total, noun = len(LINKS), "cables detected"
    elif test is LinkTestKind.TRAFFIC:
        failures = [
            f"IPU {d}: {why}"
            for d in DEVICE_IDS
            if (why := _ipu_failure(d, ipu_faults, link_faults))
        ]
        total, noun = IPUS_PER_MACHINE, "IPUs passed traffic"
    else:
        kind, noun = _TESTED_LINKS[test]
        links = [link for link, (k, _) in LINKS.items() if k is kind]
        failures = [
            f"{link}: {why}"
            for link in links
            if (why := _link_failure(link, ipu_faults, link_faults))
        ]
        total = len(links)
    verdict = "; failed" if failures else ""
    return LinkTestResult(
        test=test,
        passed=not failures,
        summary=f"{test.display_name} test on agent {agent_id}:"
        f" {total - len(failures)} of {total} {noun}{verdict}",
        details=tuple(f"{agent_id} {line}" for line in failures),
    )
