"""What a user asks for in a partition, and the resolved spec every rule agrees with.

:func:`resolve_partition_spec` is the one place the rules of vipu-system.md §3
are applied to a request. It checks the request against a pod (the fabric of
the cluster the partition would live on), fills every default and returns an
immutable :class:`PartitionSpec`, or raises :class:`InvalidSpec` naming the
first rule broken and the values that would be accepted. Where the IPUs go is
placement's business; this module only decides whether the *shape* is valid.

Routing order: a partition's IPUs have routing ids ``0..size-1``. Segment
``s`` holds routing ids ``s*segment_size ..``, GCD ``g`` holds
``g*gcd_size ..``; GCD sizes divide segment sizes, so a GCD never straddles
segments.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from .errors import InvalidSpec
from .naming import check_id
from .routing import (
    DEFAULT_SYNC_TYPE,
    RECONFIGURABLE_SYNC_TYPE,
    GwRouting,
    IpuLinkRouting,
    SyncType,
    check_sync_type,
    default_gw_routing,
    default_ipulink_routing,
    gw_routing_matches,
)
from .sizes import (
    DOMAIN_MAX_IPUS,
    GCD_SIZES,
    REPLICA_SIZES,
    SEGMENT_SIZES,
    check_partition_size,
)
from .topology import IldTopology, Pod

IpuPosition = tuple[int, int]
"""An IPU named by (IPU-Link domain index, position in the domain's ladder order)."""


@dataclass(frozen=True, slots=True)
class PartitionRequirements:
    """What a user asks for (the wire's ``PartitionRequirements``); 0 and ``None`` mean unset."""

    id: str
    size: int
    allocation_id: str | None = None
    cluster_id: str | None = None
    num_segments: int = 0
    num_gcds: int = 0
    num_replicas: int = 0
    reconfigurable: bool = False
    routing: IpuLinkRouting | None = None
    gw_routing: GwRouting | None = None
    sync_type: SyncType | None = None
    ipus: tuple[IpuPosition, ...] | None = None
    """IPUs chosen by the user, in routing order; ``None`` lets placement choose."""


@dataclass(frozen=True, slots=True)
class PartitionSpec:
    """A partition shape with every default filled in; build it with :func:`resolve_partition_spec`.

    ``gw_routing`` is ``None`` exactly when the partition has one segment.
    ``cluster_id`` stays as requested (``None`` = any cluster) until the
    controller records where placement put the partition.
    """

    id: str
    size: int
    num_segments: int
    num_gcds: int
    num_replicas: int
    reconfigurable: bool
    routing: IpuLinkRouting
    gw_routing: GwRouting | None
    sync_type: SyncType
    allocation_id: str | None = None
    cluster_id: str | None = None
    ipus: tuple[IpuPosition, ...] | None = None

    @property
    def segment_size(self) -> int:
        """IPUs in each IPU-Link segment (one segment per IPU-Link domain used)."""
        return self.size // self.num_segments

    @property
    def gcd_size(self) -> int:
        """IPUs in each graph compile domain."""
        return self.size // self.num_gcds

    @property
    def replica_size(self) -> int:
        """IPUs per replica of the application."""
        return self.size // self.num_replicas

    @property
    def replicas_per_gcd(self) -> int:
        """The ``Num Replicas`` attribute each GCD's IPUoF config carries."""
        return self.num_replicas // self.num_gcds

    def segment_of(self, routing_id: int) -> int:
        """The segment holding the IPU with this routing id."""
        return self._check_routing_id(routing_id) // self.segment_size

    def gcd_of(self, routing_id: int) -> int:
        """The GCD holding the IPU with this routing id."""
        return self._check_routing_id(routing_id) // self.gcd_size

    def gcd_routing_ids(self, gcd_id: int) -> range:
        """Routing ids of the IPUs of one GCD."""
        if not 0 <= gcd_id < self.num_gcds:
            raise InvalidSpec(
                f"partition {self.id} has no GCD {gcd_id}: use 0..{self.num_gcds - 1}"
            )
        return range(gcd_id * self.gcd_size, (gcd_id + 1) * self.gcd_size)

    def _check_routing_id(self, routing_id: int) -> int:
        if not 0 <= routing_id < self.size:
            raise InvalidSpec(
                f"partition {self.id} has no IPU with routing id {routing_id}:"
                f" use 0..{self.size - 1}"
            )
        return routing_id


# -- the values a person could ask for instead -------------------------------------------


def allowed_num_segments(size: int, pod: Pod) -> list[int]:
    """The ``num_ipulink_segments`` values a partition of ``size`` IPUs may take on ``pod``."""
    if size > DOMAIN_MAX_IPUS:
        candidates = [size // DOMAIN_MAX_IPUS] if size % DOMAIN_MAX_IPUS == 0 else []
    else:
        candidates = [size // s for s in SEGMENT_SIZES if s <= size and size % s == 0]
    return sorted(k for k in candidates if _fits(size // k, k, pod))


def largest_partition_size(pod: Pod) -> int:
    """The largest partition size some choice of segments fits on ``pod``."""
    whole_domains = [
        DOMAIN_MAX_IPUS * k
        for k in range(len(pod.domains), 1, -1)
        if allowed_num_segments(DOMAIN_MAX_IPUS * k, pod)
    ]
    if whole_domains:
        return whole_domains[0]
    return max(s for s in SEGMENT_SIZES if allowed_num_segments(s, pod))


def allowed_num_gcds(size: int, segment_size: int) -> list[int]:
    """The ``num_gcds`` values for a partition of ``size`` IPUs in segments of ``segment_size``."""
    return sorted(size // g for g in GCD_SIZES if g <= segment_size and size % g == 0)


def allowed_num_replicas(size: int, num_gcds: int) -> list[int]:
    """The ``num_replicas`` values for a partition of ``size`` IPUs and ``num_gcds`` GCDs."""
    more = {
        size // r
        for r in REPLICA_SIZES
        if size % r == 0 and size // r > num_gcds and (size // r) % num_gcds == 0
    }
    return sorted({num_gcds} | more)


def _fits(segment_size: int, num_segments: int, pod: Pod) -> bool:
    if num_segments > 1 and len(pod.domains) < 2:
        return False
    return sum(1 for d in pod.domains if d.ipus >= segment_size) >= num_segments


def _either(values: Iterable[int]) -> str:
    texts = [str(v) for v in values]
    if not texts:
        return "none"
    if len(texts) == 1:
        return texts[0]
    return ", ".join(texts[:-1]) + " or " + texts[-1]


# -- resolution ---------------------------------------------------------------------------


def resolve_partition_spec(req: PartitionRequirements, *, pod: Pod) -> PartitionSpec:
    """Check ``req`` against every partition rule on ``pod`` and fill the defaults.

    Raises :class:`InvalidSpec` for the first rule broken, with the values
    that would be accepted. Cost: one pass over the pod's domains, one over explicit IPUs.
    """
    check_id("partition", req.id)
    if req.allocation_id is not None:
        check_id("allocation", req.allocation_id)
    if req.cluster_id is not None:
        check_id("cluster", req.cluster_id)
    check_partition_size(req.size)
    for name, value in (
        ("num_ipulink_segments", req.num_segments),
        ("num_gcds", req.num_gcds),
        ("num_replicas", req.num_replicas),
    ):
        if value < 0:
            raise InvalidSpec(f"{name} must be 0 (unset) or a positive number, not {value}")

    num_segments = _resolve_num_segments(req, pod)
    segment_size = req.size // num_segments
    sync_type = _resolve_sync_type(req)
    num_gcds = _resolve_num_gcds(req, segment_size)
    num_replicas = _resolve_num_replicas(req, num_gcds)
    ipus = _check_explicit_ipus(req, pod, num_segments) if req.ipus is not None else None
    domain_index = ipus[0][0] if ipus else 0
    routing = _resolve_routing(req, pod, segment_size, domain_index)
    gw_routing = _resolve_gw_routing(req, pod, num_segments)
    return PartitionSpec(
        id=req.id,
        size=req.size,
        num_segments=num_segments,
        num_gcds=num_gcds,
        num_replicas=num_replicas,
        reconfigurable=req.reconfigurable,
        routing=routing,
        gw_routing=gw_routing,
        sync_type=sync_type,
        allocation_id=req.allocation_id,
        cluster_id=req.cluster_id,
        ipus=ipus,
    )


def _resolve_num_segments(req: PartitionRequirements, pod: Pod) -> int:
    size, asked = req.size, req.num_segments
    if size > DOMAIN_MAX_IPUS:
        k = size // DOMAIN_MAX_IPUS
        if asked not in (0, k):
            raise InvalidSpec(
                f"a partition of {size} IPUs is {k} segments of {DOMAIN_MAX_IPUS} IPUs, one per"
                f" IPU-Link domain: leave num_ipulink_segments unset or set it to {k}, not {asked}"
            )
    else:
        k = asked or 1
        if size % k or size // k not in SEGMENT_SIZES:
            choices = sorted(size // s for s in SEGMENT_SIZES if s <= size and size % s == 0)
            raise InvalidSpec(
                f"{size} IPUs cannot be split into {k} IPU-Link segments: a segment holds"
                f" 1, 2, 4, 8, 16 or 64 IPUs; use num_ipulink_segments {_either(choices)}"
            )
    segment_size = size // k
    if req.reconfigurable and k > 1:
        raise InvalidSpec(
            f"partition {req.id} is reconfigurable, so it must stay in one IPU-Link domain"
            f" (GW-Links cannot be used), but {size} IPUs in {k} segments need {k} domains:"
            f" ask for 1 segment of at most {DOMAIN_MAX_IPUS} IPUs or drop reconfigurable"
        )
    if k > 1 and len(pod.domains) < 2:
        raise InvalidSpec(
            f"a partition of {k} segments needs GW-Links between IPU-Link domains, but cluster"
            f" {pod.name} is a single domain of {pod.domains[0].ipus} IPUs: ask for at most"
            f" {pod.domains[0].ipus} IPUs in 1 segment"
        )
    if not _fits(segment_size, k, pod):
        largest = max(d.ipus for d in pod.domains)
        alternatives = allowed_num_segments(size, pod)
        hint = (
            f"ask for num_ipulink_segments {_either(alternatives)}"
            if alternatives
            else f"the largest partition it can hold is {largest_partition_size(pod)} IPUs"
        )
        if segment_size > largest:
            raise InvalidSpec(
                f"a segment of {segment_size} IPUs does not fit in an IPU-Link domain of"
                f" {largest} IPUs in cluster {pod.name}: {hint}"
            )
        raise InvalidSpec(
            f"{k} segments need {k} IPU-Link domains, but cluster {pod.name} has"
            f" {len(pod.domains)}: {hint}"
        )
    return k


def _resolve_sync_type(req: PartitionRequirements) -> SyncType:
    if req.sync_type is None:
        return RECONFIGURABLE_SYNC_TYPE if req.reconfigurable else DEFAULT_SYNC_TYPE
    check_sync_type(req.sync_type)
    if req.reconfigurable and req.sync_type is not RECONFIGURABLE_SYNC_TYPE:
        raise InvalidSpec(
            f"a reconfigurable partition uses sync type {RECONFIGURABLE_SYNC_TYPE.cli_name},"
            f" not {req.sync_type.cli_name}: leave the sync type unset or set it to"
            f" {RECONFIGURABLE_SYNC_TYPE.cli_name}"
        )
    return req.sync_type


def _resolve_num_gcds(req: PartitionRequirements, segment_size: int) -> int:
    # Unset: one GCD per segment. The wire's default of 1 is that for every partition that
    # fits one domain; a larger one cannot have a single GCD (no GCD spans domains).
    size, gcds = req.size, req.num_gcds or req.size // segment_size
    if size % gcds or size // gcds not in GCD_SIZES:
        raise InvalidSpec(
            f"{gcds} GCD{'s' if gcds > 1 else ''} cannot split a partition of {size} IPUs:"
            f" a GCD holds 1, 2, 4, 8, 16 or 64 IPUs;"
            f" use num_gcds {_either(allowed_num_gcds(size, segment_size))}"
        )
    if size // gcds > segment_size:
        raise InvalidSpec(
            f"a GCD of {size // gcds} IPUs would span IPU-Link domains (each segment holds"
            f" {segment_size} IPUs) and a GCD never spans domains:"
            f" use num_gcds {_either(allowed_num_gcds(size, segment_size))}"
        )
    return gcds


def _resolve_num_replicas(req: PartitionRequirements, num_gcds: int) -> int:
    size, replicas = req.size, req.num_replicas or num_gcds
    allowed = _either(allowed_num_replicas(size, num_gcds))
    if replicas % num_gcds:
        raise InvalidSpec(
            f"{replicas} replicas cannot be shared evenly by {num_gcds} GCDs: num_replicas must"
            f" be a multiple of num_gcds; use {allowed}"
        )
    if size % replicas:
        raise InvalidSpec(
            f"{replicas} replicas do not divide a partition of {size} IPUs: use num_replicas"
            f" {allowed}"
        )
    if replicas > num_gcds and size // replicas not in REPLICA_SIZES:
        raise InvalidSpec(
            f"with more replicas than GCDs a replica holds 1, 2 or 4 IPUs, not"
            f" {size // replicas}: use num_replicas {allowed}"
        )
    return replicas


def _check_explicit_ipus(
    req: PartitionRequirements, pod: Pod, num_segments: int
) -> tuple[IpuPosition, ...]:
    """Explicit IPUs: one run per segment in routing order, each an aligned block of a domain."""
    ipus = tuple((int(d), int(p)) for d, p in req.ipus or ())
    if req.cluster_id is None:
        raise InvalidSpec("a partition with explicit IPUs needs its cluster: set cluster_id too")
    if len(ipus) != req.size:
        raise InvalidSpec(
            f"{len(ipus)} IPUs were listed for a partition of {req.size}:"
            f" list exactly {req.size}, or none to let the controller choose"
        )
    seen: set[IpuPosition] = set()
    for domain, position in ipus:
        pod.slot_of(domain, position)  # raises for an IPU outside the pod
        if (domain, position) in seen:
            raise InvalidSpec(f"IPU {position} of IPU-Link domain {domain} is listed twice")
        seen.add((domain, position))
    segment_size = req.size // num_segments
    used_domains: set[int] = set()
    for s in range(num_segments):
        chunk = ipus[s * segment_size : (s + 1) * segment_size]
        first, last = s * segment_size, (s + 1) * segment_size - 1
        domains = {d for d, _ in chunk}
        if len(domains) != 1:
            raise InvalidSpec(
                f"listed IPUs {first}..{last} form segment {s} and must lie in one IPU-Link"
                f" domain, not in domains {_either(sorted(domains))}"
            )
        domain = chunk[0][0]
        if domain in used_domains:
            raise InvalidSpec(
                f"IPU-Link domain {domain} holds two segments of the listed IPUs:"
                f" each of the {num_segments} segments must use its own domain"
            )
        used_domains.add(domain)
        positions = sorted(p for _, p in chunk)
        start = positions[0]
        if start % segment_size or positions != list(range(start, start + segment_size)):
            aligned = start - start % segment_size
            raise InvalidSpec(
                f"the IPUs of segment {s} must be {segment_size} consecutive positions of"
                f" IPU-Link domain {domain} starting at a multiple of {segment_size}"
                f" (such as {aligned}..{aligned + segment_size - 1}), not {_brief(positions)}"
            )
    return ipus


def _brief(positions: list[int]) -> str:
    shown = ", ".join(str(p) for p in positions[:8])
    return f"[{shown}{', ...' if len(positions) > 8 else ''}]"


def _resolve_routing(
    req: PartitionRequirements, pod: Pod, segment_size: int, domain_index: int
) -> IpuLinkRouting:
    """Decision: domains of one cluster share a topology; explicit IPUs name the domain to use."""
    domain = pod.domains[domain_index]
    if req.routing is None:
        return default_ipulink_routing(segment_size, domain.topology)
    if req.routing is IpuLinkRouting.RINGSWNC and (
        domain.topology is not IldTopology.TORUS or segment_size != domain.ipus
    ):
        raise InvalidSpec(
            f"RINGSWNC routing uses the loop cables of a whole torus IPU-Link domain, so it needs"
            f" segments of {domain.ipus} IPUs on a torus, not {segment_size} IPUs on a"
            f" {domain.topology.value}: use swnc, btnc or dnc, or leave the routing unset"
        )
    return req.routing


def _resolve_gw_routing(
    req: PartitionRequirements, pod: Pod, num_segments: int
) -> GwRouting | None:
    if num_segments == 1:
        if req.gw_routing is not None:
            raise InvalidSpec(
                f"GW routing {req.gw_routing.cli_name} only applies to partitions of several"
                " IPU-Link segments: leave it unset for a partition in one domain"
            )
        return None
    if req.gw_routing is None:
        return default_gw_routing(pod.gw_topology)
    if not gw_routing_matches(req.gw_routing, pod.gw_topology):
        expected = default_gw_routing(pod.gw_topology)
        raise InvalidSpec(
            f"GW routing {req.gw_routing.cli_name} does not work on the"
            f" {pod.gw_topology.value} GW-Links of cluster {pod.name}: use {expected.cli_name}"
            " or leave it unset"
        )
    return req.gw_routing
