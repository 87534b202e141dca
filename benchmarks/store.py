"""The store's partition write path: create + remove pairs, baseline against current, one run.

Each pair is what the controller asks of the store to create a partition and
remove it again, timed call by call on SQLite and PostgreSQL. Three variants
share one database per kind and take turns, round after round, so the noise
of a shared machine falls on all of them alike:

* ``baseline``: the store as it was at ``--baseline`` (default: the commit
  before the hot-path work), loaded from git beside the current one, making
  the controller's calls of that time: reserve, audit event, update to
  ACTIVE, find, update to REMOVING, release, audit event (7 transactions);
* ``current``: the current store, same 7 calls;
* ``folded``: the current store with the calls it offers the controller:
  reserve with its audit event, ``update_partition_from`` (no read-back),
  find, ``update_partition_from``, ``release_partition_from`` with its audit
  event (5 transactions, the events committed with their changes);
* ``inline-ckpt`` (SQLite only): ``folded`` on a store that leaves WAL
  checkpoints to SQLite, inside the committing writer, as before; its tail
  latency shows what the background checkpoint thread saves.

Partition sizes cycle through 1, 2, 4, 8 and 16 IPUs of a 64-IPU allocation.
Times are wall-clock per call (the database works outside Python too), in
microseconds; the CPU time of the benchmark's thread per pair is shown too, as
it is what the store costs the controller's process and does not grow when
other processes share the machine. PostgreSQL runs on a private throw-away server started like the
test suite's (``fsync=off``: it measures statements and round trips, not the
disk) unless ``--postgres-url`` names an empty database.

    .venv/bin/python benchmarks/store.py [--pairs 200] [--rounds 5] [--json PATH]
        [--databases sqlite,postgresql] [--baseline REV | --no-baseline]
"""

from __future__ import annotations

import argparse
import importlib
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import ModuleType
from typing import Any

from vpod.domain.entities import Agent, Allocation, Cluster
from vpod.domain.partition_states import OperationState, PartitionState, ReadyState
from vpod.domain.partitions import PartitionSpec
from vpod.domain.routing import IpuLinkRouting, SyncType

REPO = Path(__file__).resolve().parents[1]
BASELINE_REV = "72c72323f5a5dceb3b7395b93e080257836b9540"
"""The store before the hot-path work (``git log -- src/vpod/store``)."""
SIZES = (1, 2, 4, 8, 16)
MACHINES = 16
T0 = datetime(2026, 1, 1, tzinfo=UTC)
CREATING = PartitionState(ReadyState.PENDING, OperationState.CREATING)
ACTIVE = PartitionState(ReadyState.ACTIVE, OperationState.IDLE)
REMOVING = PartitionState(ReadyState.ACTIVE, OperationState.REMOVING)

Timings = dict[str, list[float]]


@dataclass
class OperationResult:
    database: str
    variant: str
    operation: str
    calls: int
    median_us: float
    p99_us: float
    max_us: float


@dataclass
class PairResult:
    database: str
    variant: str
    pairs: int
    transactions_per_pair: int
    ms_per_pair: float
    cpu_ms_per_pair: float
    """This thread's CPU time per pair: what the store costs the process, whatever the load."""
    pairs_per_s: float
    speedup: float
    """pairs/s relative to the baseline on the same database (1.0 without one)."""


# -- the two stores -----------------------------------------------------------------------------


def load_baseline(rev: str, into: Path) -> ModuleType:
    """Import ``src/vpod/store`` as it was at ``rev`` under the name ``vpod_store_baseline``.

    The store imports its own modules relatively and the rest of vpod
    absolutely, so the old copy runs beside the current one on the same
    domain code.
    """
    listing = subprocess.run(
        ["git", "-C", str(REPO), "ls-tree", "-r", "--name-only", rev, "src/vpod/store"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    package = into / "vpod_store_baseline"
    for name in listing:
        if not name.endswith(".py"):
            continue
        target = package / Path(name).relative_to("src/vpod/store")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(
            subprocess.run(
                ["git", "-C", str(REPO), "show", f"{rev}:{name}"], capture_output=True, check=True
            ).stdout
        )
    sys.path.insert(0, str(into))
    return importlib.import_module("vpod_store_baseline")


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def make_record(records: ModuleType, cluster_id: str, pid: str, slots: range) -> Any:
    """A new partition of ``records.PartitionRecord`` (each store has its own class)."""
    size = len(slots)
    spec = PartitionSpec(
        id=pid,
        size=size,
        num_segments=1,
        num_gcds=1,
        num_replicas=1,
        reconfigurable=False,
        routing=IpuLinkRouting.DNC if size <= 4 else IpuLinkRouting.SWNC,
        gw_routing=None,
        sync_type=SyncType.GS2_DEFAULT,
        allocation_id=cluster_id,
        cluster_id=cluster_id,
    )
    ipus = tuple(
        records.PartitionIpu(slot=s, routing_id=i, segment=0, gcd=0) for i, s in enumerate(slots)
    )
    return records.PartitionRecord(
        spec=spec, ipus=ipus, state=CREATING, created_at=at(0), updated_at=at(0)
    )


def add_pod(store: Any, cluster_id: str) -> None:
    """A cluster of 16 machines and one allocation of all of them, both named ``cluster_id``."""
    ids = tuple(f"{cluster_id}-m{i}" for i in range(MACHINES))
    for i, agent_id in enumerate(ids):
        store.add_agent(Agent(agent_id, f"10.0.0.{i + 1}", 8091))
    store.add_cluster(Cluster(cluster_id, ids, num_domains=1))
    store.add_allocation(Allocation(cluster_id, cluster_id, tuple(range(MACHINES))))


# -- the call sequences -------------------------------------------------------------------------


class Pairs:
    """Runs create + remove pairs on one store, timing each call by name."""

    def __init__(self, name: str, store: Any, records: ModuleType, folded: bool) -> None:
        self.name = name
        self.store = store
        self.records = records
        self.folded = folded
        self.cluster_id = f"bench-{name}"
        self.timings: Timings = defaultdict(list)
        self.pairs = 0
        self.elapsed = 0.0
        self.cpu = 0.0
        add_pod(store, self.cluster_id)

    @property
    def transactions_per_pair(self) -> int:
        return 5 if self.folded else 7

    def _timed(self, operation: str, call: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        began = time.perf_counter()
        result = call(*args, **kwargs)
        self.timings[operation].append(time.perf_counter() - began)
        return result

    def _event(self, n: int, action: str, outcome: str) -> Any:
        return self.records.AuditEvent(
            time=at(n), actor="bench", action=action, target=f"p{n}", outcome=outcome
        )

    def run(self, count: int) -> None:
        began, cpu_began = time.perf_counter(), time.thread_time()
        for _ in range(count):
            n = self.pairs
            size = SIZES[n % len(SIZES)]
            record = make_record(self.records, self.cluster_id, f"p{n}", range(size))
            if self.folded:
                self._folded_pair(n, record)
            else:
                self._pair(n, record)
            self.pairs += 1
        self.elapsed += time.perf_counter() - began
        self.cpu += time.thread_time() - cpu_began

    def _pair(self, n: int, record: Any) -> None:
        s, t = self.store, self._timed
        stored = t("reserve", s.reserve_partition, record)
        t("append_event", s.append_event, time=at(n), actor="bench", action="create_partition",
          target=record.id, outcome="reserved", detail=f"{record.spec.size} IPUs")  # fmt: skip
        active = t("update", s.update_partition, record.id, expected_version=stored.version,
                   updated_at=at(n), state=ACTIVE, errors=())  # fmt: skip
        found = t("find", s.find_partition, record.id)
        assert found == active, "the store returned another record than it holds"
        removing = t("update", s.update_partition, record.id, expected_version=found.version,
                     updated_at=at(n), state=REMOVING)  # fmt: skip
        t("release", s.release_partition, record.id, expected_version=removing.version)
        t("append_event", s.append_event, time=at(n), actor="bench", action="remove_partition",
          target=record.id, outcome="ok")  # fmt: skip

    def _folded_pair(self, n: int, record: Any) -> None:
        s, t = self.store, self._timed
        stored = t("reserve+event", s.reserve_partition, record,
                   event=self._event(n, "create_partition", "reserved"))  # fmt: skip
        active = t("update_from", s.update_partition_from, stored, updated_at=at(n),
                   state=ACTIVE, errors=())  # fmt: skip
        found = t("find", s.find_partition, record.id)
        assert found == active, "the store returned another record than it holds"
        removing = t("update_from", s.update_partition_from, found, updated_at=at(n),
                     state=REMOVING)  # fmt: skip
        t("release_from+event", s.release_partition_from, removing,
          event=self._event(n, "remove_partition", "ok"))  # fmt: skip


# -- databases ----------------------------------------------------------------------------------


@contextmanager
def database_url(kind: str, postgres_url: str | None, tmp: Path) -> Iterator[str]:
    """An empty database of ``kind``; a private PostgreSQL server is started when needed."""
    if kind == "sqlite":
        yield f"sqlite:///{tmp / 'vpod.db'}"
        return
    if postgres_url:
        yield postgres_url
        return
    sys.path.insert(0, str(REPO))
    from tests.pg import PostgresServer  # the test suite's throw-away server

    server = PostgresServer.start()
    try:
        yield server.url(server.create_database())
    finally:
        server.stop()


def bench_database(
    kind: str, url: str, baseline: ModuleType | None, pairs: int, rounds: int
) -> tuple[list[OperationResult], list[PairResult]]:
    import vpod.store as current

    with ExitStack() as stack:
        store = stack.enter_context(current.Store.open(url))
        store.migrate()
        variants: list[Pairs] = []
        if baseline is not None:
            old = stack.enter_context(baseline.Store.open(url))
            variants.append(Pairs("baseline", old, baseline.records, folded=False))
        variants.append(Pairs("current", store, current.records, folded=False))
        variants.append(Pairs("folded", store, current.records, folded=True))
        if kind == "sqlite":
            inline = current.EngineOptions(sqlite_checkpoint_every=0)
            inline_store = stack.enter_context(current.Store.open(url, inline))
            variants.append(Pairs("inline-ckpt", inline_store, current.records, folded=True))
        for variant in variants:  # warm up: connections, statement caches, the file
            variant.run(max(10, pairs // 10))
            variant.timings.clear()
            variant.elapsed = variant.cpu = 0.0
        counted = {v.name: v.pairs for v in variants}
        for r in range(rounds):
            for variant in variants[r % len(variants) :] + variants[: r % len(variants)]:
                variant.run(pairs)
        operations: list[OperationResult] = []
        results: list[PairResult] = []
        base_rate = None
        for variant in variants:
            done = variant.pairs - counted[variant.name]
            rate = done / variant.elapsed
            base_rate = base_rate or rate
            results.append(
                PairResult(
                    database=kind,
                    variant=variant.name,
                    pairs=done,
                    transactions_per_pair=variant.transactions_per_pair,
                    ms_per_pair=1e3 / rate,
                    cpu_ms_per_pair=1e3 * variant.cpu / done,
                    pairs_per_s=rate,
                    speedup=rate / base_rate,
                )
            )
            for operation, times in variant.timings.items():
                ordered = sorted(times)
                operations.append(
                    OperationResult(
                        database=kind,
                        variant=variant.name,
                        operation=operation,
                        calls=len(ordered),
                        median_us=statistics.median(ordered) * 1e6,
                        p99_us=ordered[int(0.99 * (len(ordered) - 1))] * 1e6,
                        max_us=ordered[-1] * 1e6,
                    )
                )
    return operations, results


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--pairs", type=int, default=200, help="pairs per variant per round")
    parser.add_argument("--rounds", type=int, default=5, help="rounds (variants take turns)")
    parser.add_argument("--databases", default="sqlite,postgresql", help="sqlite,postgresql")
    parser.add_argument("--postgres-url", help="an empty PostgreSQL database to use instead")
    parser.add_argument("--baseline", default=BASELINE_REV, help="git revision of the baseline")
    parser.add_argument("--no-baseline", action="store_true", help="measure the current only")
    parser.add_argument("--json", type=Path, help="write the results here")
    args = parser.parse_args()
    operations: list[OperationResult] = []
    pairs: list[PairResult] = []
    with tempfile.TemporaryDirectory(prefix="vpod-bench-store-") as tmp_name:
        tmp = Path(tmp_name)
        baseline = None if args.no_baseline else load_baseline(args.baseline, tmp)
        for kind in args.databases.split(","):
            with database_url(kind, args.postgres_url, tmp) as url:
                found_ops, found_pairs = bench_database(
                    kind, url, baseline, args.pairs, args.rounds
                )
            operations.extend(found_ops)
            pairs.extend(found_pairs)
            for p in found_pairs:
                print(
                    f"{kind:11} {p.variant:11} {p.pairs_per_s:8.0f} pairs/s"
                    f"  {p.ms_per_pair:6.2f} ms/pair  x{p.speedup:.2f}",
                    flush=True,
                )
    print()
    header = f"{'database':11}{'variant':12}{'operation':20}"
    print(f"{header}{'median us':>10}{'p99 us':>10}{'max us':>10}")
    for o in operations:
        print(
            f"{o.database:11}{o.variant:12}{o.operation:20}{o.median_us:>10.0f}"
            f"{o.p99_us:>10.0f}{o.max_us:>10.0f}"
        )
    print()
    header = f"{'database':11}{'variant':12}{'txns/pair':>10}{'ms/pair':>9}{'CPU ms':>8}"
    print(f"{header}{'pairs/s':>9}{'speedup':>9}")
    for p in pairs:
        print(
            f"{p.database:11}{p.variant:12}{p.transactions_per_pair:>10}{p.ms_per_pair:>9.2f}"
            f"{p.cpu_ms_per_pair:>8.2f}{p.pairs_per_s:>9.0f}{p.speedup:>9.2f}"
        )
    if args.json:
        document = {
            "baseline": None if args.no_baseline else args.baseline,
            "operations": [asdict(o) for o in operations],
            "pairs": [asdict(p) for p in pairs],
        }
        args.json.write_text(json.dumps(document, indent=2) + "\n")


if __name__ == "__main__":
    main()
