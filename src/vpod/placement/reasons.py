"""Words for ``Rejected`` reasons: where free space is, which IPU or machine is meant.

Reasons name machines by the snapshot's machine names (agent ids in the
controller, ``m<index>`` by default) and IPUs by ``(domain, position)`` as
explicit requests name them, so a person can act on the sentence: pick
another IPU, free a partition, ask for a smaller size.
"""

from __future__ import annotations

from collections.abc import Sequence

from vpod.domain.catalog import IPUS_PER_MACHINE

from .snapshot import FreeBlock, FreeRun, Snapshot

EXAMPLES = 4
"""How many items a reason lists before it says "and N more"."""


def plural(count: int, noun: str) -> str:
    """``1 IPU``, ``2 IPUs``, ``1 IPU-Link domain``."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def listing(items: Sequence[str], limit: int = EXAMPLES) -> str:
    """``a, b and c``; long lists end with ``and N more``."""
    if len(items) > limit:
        return ", ".join(items[:limit]) + f" and {len(items) - limit} more"
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + f" and {items[-1]}"


def machine_range(snapshot: Snapshot, first: int, count: int) -> str:
    """``machine m3`` or ``machines m3-m4``."""
    if count <= 1:
        return f"machine {snapshot.machine_name(first)}"
    return f"machines {snapshot.machine_name(first)}-{snapshot.machine_name(first + count - 1)}"


def slots_place(snapshot: Snapshot, first_slot: int, count: int) -> str:
    """The machines a run of ``count`` slots from ``first_slot`` lies on."""
    first_machine = first_slot // IPUS_PER_MACHINE
    last_machine = (first_slot + count - 1) // IPUS_PER_MACHINE
    return machine_range(snapshot, first_machine, last_machine - first_machine + 1)


def block_text(snapshot: Snapshot, block: FreeBlock | None) -> str:
    """``8 IPUs (machines m3-m4)`` or ``none``."""
    if block is None:
        return "none"
    where = slots_place(snapshot, block.slots.start, block.size)
    return f"{plural(block.size, 'IPU')} ({where})"


def run_text(snapshot: Snapshot, run: FreeRun | None) -> str:
    """``2 machines (m6-m7)`` or ``none``."""
    if run is None:
        return "none"
    first, count = run.machines.start, len(run.machines)
    names = snapshot.machine_name(first)
    if count > 1:
        names += f"-{snapshot.machine_name(first + count - 1)}"
    return f"{plural(count, 'machine')} ({names})"


def ipus_text(snapshot: Snapshot, slots: Sequence[int]) -> str:
    """``IPU (0, 13) on machine m3`` or ``IPUs (0, 8), (0, 9) on machine m2 and (1, 0) on …``.

    IPUs are named by the ``(domain, position)`` pairs explicit requests use,
    grouped by the machine they sit on.
    """
    groups: dict[int, list[str]] = {}
    for slot in slots:
        ref = snapshot.pod.ipu(slot)
        groups.setdefault(ref.machine, []).append(f"({ref.domain}, {ref.position})")
    parts = [
        f"{', '.join(pairs)} on machine {snapshot.machine_name(machine)}"
        for machine, pairs in sorted(groups.items())
    ]
    return f"{'IPU' if len(slots) == 1 else 'IPUs'} {listing(parts)}"
