"""Deterministic serial numbers and chip ids for emulated machines.

A real machine's serials are burnt in; an emulated one derives them from a
seed and its agent id, so the same pod comes back with the same identities
after a restart and two pods with different seeds never share a chip id.
The formats imitate ``gc-info``: board serial ``0131.0002.8204521``, chip id
``0x`` and 16 hex digits.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from vpod.domain.catalog import IPUS_PER_MACHINE


@dataclass(frozen=True, slots=True)
class DerivedIpu:
    device_id: int
    serial: str
    chip_id: str


@dataclass(frozen=True, slots=True)
class DerivedIdentity:
    """The burnt-in identity of one emulated machine."""

    serial: str
    ipus: tuple[DerivedIpu, ...]


def _digest(*parts: str) -> int:
    text = "\x1f".join(parts).encode()
    return int.from_bytes(hashlib.blake2b(text, digest_size=16).digest(), "big")


def _board_serial(value: int) -> str:
    batch, lot, unit = value % 10_000, (value >> 16) % 10_000, (value >> 32) % 10_000_000
    return f"{batch:04d}.{lot:04d}.{unit:07d}"


def derive_identity(seed: str, agent_id: str) -> DerivedIdentity:
    """Serials and chip ids of machine ``agent_id`` in the pod named by ``seed``."""
    serial = _board_serial(_digest(seed, agent_id, "board"))
    ipus = tuple(
        DerivedIpu(
            device_id=device_id,
            serial=_board_serial(_digest(seed, agent_id, "ipu", str(device_id))),
            chip_id=f"0x{_digest(seed, agent_id, 'chip', str(device_id)) & (2**64 - 1):016x}",
        )
        for device_id in range(IPUS_PER_MACHINE)
    )
    return DerivedIdentity(serial=serial, ipus=ipus)
