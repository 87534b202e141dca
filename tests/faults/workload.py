"""Concurrent creates and removes through the user API, with a ledger of what each call said.

Each worker thread owns the partitions it creates (ids ``PREFIX-wN-M``) and
removes only its own, picking at random between creating a partition of a
random size and removing one it holds. The :class:`Ledger` records, per
partition id, what the controller answered:

- ``created``: CreatePartition returned OK;
- ``removed``: RemovePartition returned OK;
- ``unknown``: a call whose outcome the client cannot know (the controller
  died or the connection broke mid-call: UNAVAILABLE, CANCELLED, UNKNOWN,
  DEADLINE_EXCEEDED);
- every other status code is a definite refusal, counted by rpc and code.

:meth:`Ledger.lost_or_invented` then compares the ledger with the store: a
partition created and not removed must still exist, a removed one must not,
and nothing may exist that no successful (or unknown) create made.
"""

from __future__ import annotations

import random
import threading
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import partial

import grpc

from .live import UserClient, rpc_code

UNKNOWN_OUTCOME = frozenset(
    {
        grpc.StatusCode.UNAVAILABLE,
        grpc.StatusCode.CANCELLED,
        grpc.StatusCode.UNKNOWN,
        grpc.StatusCode.DEADLINE_EXCEEDED,
    }
)


@dataclass
class Ledger:
    created: set[str] = field(default_factory=set)
    removed: set[str] = field(default_factory=set)
    unknown: set[str] = field(default_factory=set)
    codes: Counter[tuple[str, str]] = field(default_factory=Counter)
    """(rpc, status code name) -> calls; OK included."""
    messages: dict[tuple[str, str], str] = field(default_factory=dict)
    """One example message per (rpc, code) that was not OK."""
    failures: list[tuple[str, str, str]] = field(default_factory=list)
    """Every call that was not OK: (rpc, code name, message)."""
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def ops(self) -> int:
        return sum(self.codes.values())

    def count(self, rpc: str, code: grpc.StatusCode) -> int:
        return self.codes[(rpc, code.name)]

    def note(self, rpc: str, pid: str, code: grpc.StatusCode, message: str) -> None:
        with self._lock:
            self.codes[(rpc, code.name)] += 1
            if code is not grpc.StatusCode.OK:
                self.messages.setdefault((rpc, code.name), message)
                self.failures.append((rpc, code.name, message))
            if code is grpc.StatusCode.OK:
                (self.created if rpc == "create" else self.removed).add(pid)
                self.unknown.discard(pid)
            elif code in UNKNOWN_OUTCOME:
                self.unknown.add(pid)

    def lost_or_invented(self, existing: Iterable[str], prefix: str) -> list[str]:
        """Partitions the ledger says must exist but do not, and the reverse."""
        present = {p for p in existing if p.startswith(prefix)}
        problems: list[str] = []
        for pid in sorted(self.created - self.removed - self.unknown - present):
            problems.append(f"{pid} was created (OK) and never removed, but is gone")
        for pid in sorted((self.removed - self.unknown) & present):
            problems.append(f"{pid} was removed (OK) but still exists")
        for pid in sorted(present - self.created - self.unknown):
            problems.append(f"{pid} exists although no create of it succeeded")
        return problems

    def settle(self, existing: Iterable[str], prefix: str) -> None:
        """After a check: unknown outcomes become what the store says."""
        present = {p for p in existing if p.startswith(prefix)}
        for pid in list(self.unknown):
            if pid in present:
                self.created.add(pid)
                self.removed.discard(pid)
            else:
                self.removed.add(pid)
        self.unknown.clear()

    def table(self) -> str:
        return ", ".join(f"{rpc} {code}: {n}" for (rpc, code), n in sorted(self.codes.items()))


@dataclass
class Workload:
    """Workers creating and removing partitions of random ``sizes`` through ``clients``."""

    clients: Sequence[UserClient]
    sizes: Sequence[int]
    prefix: str
    seed: int = 0
    keep: int = 4
    """A worker removes once it holds this many partitions (and at random before)."""
    call_timeout_s: float = 60.0
    stop_on_unknown: bool = False
    """A worker stops at its first call of unknown outcome (the controller is gone)."""
    ledger: Ledger = field(default_factory=Ledger)
    _held: dict[int, list[str]] = field(default_factory=dict)
    _serial: dict[int, int] = field(default_factory=dict)

    def run(self, workers: int, ops_per_worker: int, stop: threading.Event | None = None) -> None:
        """Run ``workers`` threads of at most ``ops_per_worker`` calls each; returns when done
        (or soon after ``stop`` is set)."""
        stop = stop or threading.Event()
        threads = [
            threading.Thread(target=self._work, args=(n, ops_per_worker, stop), daemon=True)
            for n in range(workers)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    def _work(self, index: int, ops: int, stop: threading.Event) -> None:
        rng = random.Random(f"{self.seed}-{index}")
        held = self._held.setdefault(index, [])
        for _ in range(ops):
            if stop.is_set():
                return
            client = rng.choice(self.clients)
            if held and (len(held) >= self.keep or rng.random() < 0.5):
                pid = held.pop(rng.randrange(len(held)))
                code, message = rpc_code(partial(client.remove, pid, timeout=self.call_timeout_s))
                self.ledger.note("remove", pid, code, message)
                if code is not grpc.StatusCode.OK and code not in UNKNOWN_OUTCOME:
                    held.append(pid)  # refused (e.g. busy): still ours, try again later
                if code in UNKNOWN_OUTCOME and self.stop_on_unknown:
                    return
            else:
                serial = self._serial.get(index, 0)
                self._serial[index] = serial + 1
                pid = f"{self.prefix}-w{index}-{serial}"
                size = rng.choice(self.sizes)
                create = partial(client.create, pid, size, timeout=self.call_timeout_s)
                code, message = rpc_code(create)
                self.ledger.note("create", pid, code, message)
                if code is grpc.StatusCode.OK or code in UNKNOWN_OUTCOME:
                    held.append(pid)
                if code in UNKNOWN_OUTCOME and self.stop_on_unknown:
                    return

    def forget_unknown(self, existing: Iterable[str]) -> None:
        """Drop from the workers' hands the partitions the store says are gone."""
        present = set(existing)
        for held in self._held.values():
            held[:] = [p for p in held if p in present]
