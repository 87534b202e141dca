"""Routing and sync types of a partition, their CLI spellings and the default rules.

The enums mirror the wire enums (vipu-user-api.md) without their prefixes and
without ``UNDEFINED``: "unset" is ``None`` in the domain. Member values are
the wire numbers, so the wire layer converts with ``IpuLinkRouting(number)``
after mapping 0 to ``None``; the store keeps ``member.name``.

CLI spellings (case-insensitive; ``-`` and ``_`` are ignored, so
``ring-swnc``, ``RING_SWNC`` and ``ringswnc`` are one value):

========================================  ==================================
CLI string                                member
========================================  ==================================
``dnc`` ``swnc`` ``btnc`` ``ringswnc``    :class:`IpuLinkRouting` of that name
``ring`` ``swring``                       :class:`GwRouting` of that name
``c2-compatible`` (or ``gs2-default``)    ``SyncType.GS2_DEFAULT``
``pod-native-default``                    ``SyncType.POD_NATIVE_DEFAULT``
``pod-native-replicated-pipeline``        ``SyncType.POD_NATIVE_REPLICATED_PIPELINE``
``gs2-independent-rails``                 refused: the wire spec marks it unsupported
========================================  ==================================

Decision: ``c2-compatible`` is GS2 sync, the global sync scheme the older
C2-card systems used, so it maps to ``GS2_DEFAULT``; it is also the default
sync type of every partition and the only one a reconfigurable partition
accepts (vipu-system.md §3).
"""

from __future__ import annotations

import enum

from .errors import InvalidSpec
from .excerpts import excerpt
from .topology import GwTopology, IldTopology


def _normalise(text: str) -> str:
    return text.strip().lower().replace("-", "").replace("_", "")


class _NamedOnTheCli(enum.Enum):
    """A routing the CLI spells as its member's name in lower case."""

    @property
    def cli_name(self) -> str:
        """How the CLI spells it (``dnc``, ``ringswnc``, ``swring`` ...)."""
        return self.name.lower()


class IpuLinkRouting(_NamedOnTheCli):
    """How traffic is routed over the IPU-Links inside one IPU-Link domain."""

    DNC = 1
    """Default configuration: IPUs of one or two neighbouring rungs."""
    SWNC = 2
    """Sliding window over the ladder."""
    BTNC = 3
    """Barley twist."""
    RINGSWNC = 4
    """Sliding window that also uses the loop cables of a torus."""


class GwRouting(_NamedOnTheCli):
    """How traffic is routed over the GW-Links between IPU-Link domains."""

    RING = 2
    """Around the GW-Link loop of a looped cluster."""
    SWRING = 3
    """Through the switch of a switched cluster."""


class SyncType(enum.Enum):
    """The global synchronisation scheme of a partition."""

    GS2_DEFAULT = 1
    GS2_INDEPENDENT_RAILS = 2
    """Listed by the wire API as unsupported: kept so it can be named, never accepted."""
    POD_NATIVE_DEFAULT = 3
    POD_NATIVE_REPLICATED_PIPELINE = 4

    @property
    def cli_name(self) -> str:
        """How the CLI and the IPUoF ``Sync Type`` attribute spell it."""
        return _SYNC_CLI_NAMES[self]


_SYNC_CLI_NAMES: dict[SyncType, str] = {
    SyncType.GS2_DEFAULT: "c2-compatible",
    SyncType.GS2_INDEPENDENT_RAILS: "gs2-independent-rails",
    SyncType.POD_NATIVE_DEFAULT: "pod-native-default",
    SyncType.POD_NATIVE_REPLICATED_PIPELINE: "pod-native-replicated-pipeline",
}

SUPPORTED_SYNC_TYPES: tuple[SyncType, ...] = (
    SyncType.GS2_DEFAULT,
    SyncType.POD_NATIVE_DEFAULT,
    SyncType.POD_NATIVE_REPLICATED_PIPELINE,
)
DEFAULT_SYNC_TYPE = SyncType.GS2_DEFAULT
RECONFIGURABLE_SYNC_TYPE = SyncType.GS2_DEFAULT
"""A reconfigurable partition is always ``c2-compatible`` (vipu-system.md §3)."""


def _supported_sync_names() -> str:
    names = [s.cli_name for s in SUPPORTED_SYNC_TYPES]
    return ", ".join(names[:-1]) + " or " + names[-1]


def check_sync_type(sync_type: SyncType) -> SyncType:
    """Return ``sync_type`` if the system supports it; refuse ``GS2_INDEPENDENT_RAILS``."""
    if sync_type not in SUPPORTED_SYNC_TYPES:
        raise InvalidSpec(
            f"sync type {sync_type.cli_name} is not supported: use {_supported_sync_names()}"
        )
    return sync_type


_ROUTING_BY_NAME = {_normalise(r.name): r for r in IpuLinkRouting}
_GW_ROUTING_BY_NAME = {_normalise(r.name): r for r in GwRouting}
_SYNC_BY_NAME = {
    key: sync for sync in SyncType for key in (_normalise(sync.name), _normalise(sync.cli_name))
}


def parse_ipulink_routing(text: str) -> IpuLinkRouting:
    """Parse ``dnc``, ``swnc``, ``btnc`` or ``ringswnc`` (case-insensitive, ``-``/``_`` ignored)."""
    found = _ROUTING_BY_NAME.get(_normalise(text))
    if found is None:
        raise InvalidSpec(
            f"unknown IPU-Link routing {excerpt(text, quote=True)}: use dnc, swnc, btnc or ringswnc"
        )
    return found


def parse_gw_routing(text: str) -> GwRouting:
    """Parse ``ring`` or ``swring`` (case-insensitive, ``-``/``_`` ignored)."""
    found = _GW_ROUTING_BY_NAME.get(_normalise(text))
    if found is None:
        raise InvalidSpec(f"unknown GW routing {excerpt(text, quote=True)}: use ring or swring")
    return found


def parse_sync_type(text: str) -> SyncType:
    """Parse a sync type by CLI spelling or enum name; refuse the unsupported one."""
    found = _SYNC_BY_NAME.get(_normalise(text))
    if found is None:
        raise InvalidSpec(
            f"unknown sync type {excerpt(text, quote=True)}: use {_supported_sync_names()}"
        )
    return check_sync_type(found)


def default_ipulink_routing(segment_size: int, ild_topology: IldTopology) -> IpuLinkRouting:
    """The routing a segment gets when the user does not choose one (vipu-system.md §3).

    ``DNC`` for 1, 2 or 4 IPUs (one machine); ``SWNC`` for 8 and 16 IPUs on a
    ladder and for 64 on a mesh; ``RINGSWNC`` for a whole torus domain of 64,
    whose loop cables the sliding window can use.
    """
    if segment_size in (1, 2, 4):
        return IpuLinkRouting.DNC
    if segment_size in (8, 16):
        return IpuLinkRouting.SWNC
    if segment_size == 64:
        if ild_topology is IldTopology.TORUS:
            return IpuLinkRouting.RINGSWNC
        return IpuLinkRouting.SWNC
    raise InvalidSpec(
        f"a segment of {segment_size} IPUs cannot be routed inside an IPU-Link domain:"
        " use 1, 2, 4, 8, 16 or 64 IPUs per segment"
    )


def default_gw_routing(gw_topology: GwTopology) -> GwRouting:
    """``RING`` for looped clusters, ``SWRING`` for switched ones."""
    if gw_topology is GwTopology.LOOPED:
        return GwRouting.RING
    return GwRouting.SWRING


def gw_routing_matches(gw_routing: GwRouting, gw_topology: GwTopology) -> bool:
    """Decision: a GW routing needs its cabling (a ring needs a loop, SWRING a switch)."""
    return gw_routing is default_gw_routing(gw_topology)
