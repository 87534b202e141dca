"""One trace, one pod, one queue policy, three placers side by side.

The engine is measured against two references replayed in the same run and
under the same queue policy: the topology-free *bound* (a lower bound on
waits) and naive *first-fit* (what no policy at all achieves).

Jobs larger than the pod are *dropped* up front: they are left out of all
three replays, counted in ``dropped`` and named by the CLI. Queueing them
would block a fifo queue forever, and rejecting the whole trace would make
small pods impossible to study with real traces.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from vpod.domain.catalog import IPUS_PER_MACHINE
from vpod.domain.errors import InvalidSpec
from vpod.domain.sizes import DOMAIN_MAX_IPUS
from vpod.domain.topology import (
    MAX_MACHINES,
    MAX_MACHINES_PER_DOMAIN,
    MAX_POD_IPUS,
    Pod,
    build_pod,
)

from .engine_placer import EnginePlacer
from .event_replay import Policy, ProgressCallback, Replay, replay
from .first_fit import FirstFitPlacer
from .jobs import Job, split_oversized
from .metrics import Summary, summarize
from .placers import BoundPlacer, Placer

PlacerFactory = Callable[[Pod], Placer[Any]]

ENGINE, BOUND, FIRST_FIT = "engine", "bound", "first_fit"


DEFAULT_PLACERS: Mapping[str, PlacerFactory] = {
    ENGINE: EnginePlacer,
    BOUND: lambda pod: BoundPlacer(pod.num_ipus),
    FIRST_FIT: FirstFitPlacer,
}
"""The three placers of a comparison, in the order they are replayed and shown."""


def pod_for_ipus(num_ipus: int) -> Pod:
    """The Bow pod of ``num_ipus`` IPUs: one domain up to 64 IPUs, else domains of 64."""
    if num_ipus < IPUS_PER_MACHINE or num_ipus % IPUS_PER_MACHINE:
        raise InvalidSpec(
            f"a Bow pod has a multiple of {IPUS_PER_MACHINE} IPUs (one machine holds"
            f" {IPUS_PER_MACHINE}), not {num_ipus}: use e.g. 16, 64 or 256"
        )
    if num_ipus > MAX_POD_IPUS:
        raise InvalidSpec(
            f"a pod has at most {MAX_POD_IPUS} IPUs ({MAX_MACHINES} machines), not {num_ipus}"
        )
    if num_ipus > DOMAIN_MAX_IPUS and num_ipus % DOMAIN_MAX_IPUS:
        raise InvalidSpec(
            f"a pod larger than one IPU-Link domain is made of whole domains of"
            f" {DOMAIN_MAX_IPUS} IPUs, so {num_ipus} is not possible: use a multiple of"
            f" {DOMAIN_MAX_IPUS}, e.g. {-(-num_ipus // DOMAIN_MAX_IPUS) * DOMAIN_MAX_IPUS}"
        )
    machines = num_ipus // IPUS_PER_MACHINE
    domains = max(1, machines // MAX_MACHINES_PER_DOMAIN)
    return build_pod(machines, num_domains=domains, name=f"pod{num_ipus}")


def mean_wait_ratio(numerator: Summary, denominator: Summary) -> float | None:
    """``numerator``'s mean wait over ``denominator``'s; 1 when both are 0, None when only it is."""
    if denominator.mean_wait_s == 0:
        return 1.0 if numerator.mean_wait_s == 0 else None
    return numerator.mean_wait_s / denominator.mean_wait_s


@dataclass(frozen=True, slots=True)
class Comparison:
    """The replays of one trace through each placer, and their summaries."""

    num_ipus: int
    policy: Policy
    trace_jobs: int
    dropped: tuple[Job, ...]
    replays: dict[str, Replay]
    summaries: dict[str, Summary]

    def ratio(self, name: str, reference: str = BOUND) -> float | None:
        """Mean wait of placer ``name`` over that of ``reference``."""
        return mean_wait_ratio(self.summaries[name], self.summaries[reference])

    def as_dict(self) -> dict[str, object]:
        """The JSON report without the wall time (the caller measures it)."""
        result: dict[str, object] = {
            "jobs": self.trace_jobs,
            "replayed": self.trace_jobs - len(self.dropped),
            "dropped": len(self.dropped),
            "ipus": self.num_ipus,
            "policy": str(self.policy),
        }
        for name, summary in self.summaries.items():
            result[name] = summary.as_dict()
        if BOUND in self.summaries:
            result["mean_wait_over_bound"] = {
                name: self.ratio(name) for name in self.summaries if name != BOUND
            }
        return result


def compare(
    jobs: Sequence[Job],
    num_ipus: int,
    policy: Policy = Policy.FIFO,
    *,
    progress: ProgressCallback | None = None,
    placers: Mapping[str, PlacerFactory] = DEFAULT_PLACERS,
) -> Comparison:
    """Replay ``jobs`` on a Bow pod of ``num_ipus`` IPUs through each of ``placers``.

    ``progress`` gets the number of jobs finished over all replays so far.
    """
    pod = pod_for_ipus(num_ipus)
    fits, too_big = split_oversized(jobs, num_ipus)
    if not fits:
        raise InvalidSpec(
            f"none of the {len(jobs)} jobs fits a pod of {num_ipus} IPUs:"
            " use more IPUs or another trace"
        )
    replays: dict[str, Replay] = {}
    for offset, (name, factory) in enumerate(placers.items()):
        step = None
        if progress is not None:
            step = _offset_progress(progress, offset * len(fits))
        replays[name] = replay(fits, factory(pod), num_ipus, policy, step)
    return Comparison(
        num_ipus=num_ipus,
        policy=policy,
        trace_jobs=len(jobs),
        dropped=tuple(too_big),
        replays=replays,
        summaries={name: summarize(result) for name, result in replays.items()},
    )


def _offset_progress(progress: ProgressCallback, offset: int) -> ProgressCallback:
    return lambda done: progress(offset + done)
