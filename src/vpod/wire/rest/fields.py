"""Field types the REST shapes share: ids checked by the domain's rule, enumerations in
either spelling, strict request bodies, bounds (docs/rest-api.md).

Enumerations are strings: requests take the CLI spellings (``dnc``,
``ringswnc``, ``ring``, ``c2-compatible``) or the wire names (``IRT_DNC``,
``GRT_RING``, ``ST_GS2_DEFAULT``), case-insensitive, ``-`` and ``_``
ignored; responses give the CLI spellings for routing and sync types and
the wire names without prefix for states (``ACTIVE``, ``IDLE``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, TypeVar

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, WithJsonSchema

from vpod.domain.errors import InvalidSpec
from vpod.domain.naming import ID_MAX_LENGTH, ID_RULE, check_id
from vpod.domain.routing import (
    SUPPORTED_SYNC_TYPES,
    GwRouting,
    IpuLinkRouting,
    SyncType,
    parse_gw_routing,
    parse_ipulink_routing,
    parse_sync_type,
)

MAX_IPUS = 65536
"""Upper bound on any IPU count in a request (a pod of 1,024 machines has 4,096)."""


MAX_LIST = 1024
"""Upper bound on list lengths in a request (agents of a cluster, addresses to probe)."""

ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]*$"

E = TypeVar("E")


def _id_of(kind: str) -> Callable[[str], str]:
    def check(value: str) -> str:
        try:
            return check_id(kind, value)
        except InvalidSpec as exc:
            raise ValueError(str(exc)) from None

    return check


def _id_schema(kind: str) -> WithJsonSchema:
    return WithJsonSchema(
        {
            "type": "string",
            "minLength": 1,
            "maxLength": ID_MAX_LENGTH,
            "pattern": ID_PATTERN,
            "description": f"A {kind} id: {ID_RULE}.",
        }
    )


PartitionId = Annotated[str, AfterValidator(_id_of("partition")), _id_schema("partition")]
AllocationId = Annotated[str, AfterValidator(_id_of("allocation")), _id_schema("allocation")]
ClusterId = Annotated[str, AfterValidator(_id_of("cluster")), _id_schema("cluster")]
AgentId = Annotated[str, AfterValidator(_id_of("agent")), _id_schema("agent")]
UserId = Annotated[str, AfterValidator(_id_of("user")), _id_schema("user")]
"""Ids checked by the domain's rule (its message on failure), with the rule in the schema."""


def _parser(parse: Callable[[str], E], prefix: str) -> Callable[[object], E | object]:
    """Accept a CLI spelling or a wire name (``IRT_DNC``): strip the prefix, then parse."""

    def before(value: object) -> E | object:
        if not isinstance(value, str):
            return value  # an enum member already, or a type error the model reports
        text = value.strip()
        if text.upper().startswith(prefix):
            text = text[len(prefix) :]
        try:
            return parse(text)
        except InvalidSpec as exc:
            raise ValueError(str(exc)) from None

    return before


def _choices(*names: str) -> WithJsonSchema:
    return WithJsonSchema({"type": "string", "enum": list(names)})


RoutingIn = Annotated[
    IpuLinkRouting,
    BeforeValidator(_parser(parse_ipulink_routing, "IRT_")),
    _choices(*(r.cli_name for r in IpuLinkRouting), *(f"IRT_{r.name}" for r in IpuLinkRouting)),
]
GwRoutingIn = Annotated[
    GwRouting,
    BeforeValidator(_parser(parse_gw_routing, "GRT_")),
    _choices(*(r.cli_name for r in GwRouting), *(f"GRT_{r.name}" for r in GwRouting)),
]
SyncTypeIn = Annotated[
    SyncType,
    BeforeValidator(_parser(parse_sync_type, "ST_")),
    _choices(
        *(s.cli_name for s in SUPPORTED_SYNC_TYPES), *(f"ST_{s.name}" for s in SUPPORTED_SYNC_TYPES)
    ),
]


class StrictBody(BaseModel):
    """Request bodies refuse unknown fields: a typo must not be silently ignored."""

    model_config = ConfigDict(extra="forbid")


def lower_dashed(value: object) -> object:
    """``IPU_LINK``, ``Ipu-Link`` and ``ipu-link`` are one spelling."""
    return value.strip().lower().replace("_", "-") if isinstance(value, str) else value


def kebab(name: str) -> str:
    """An enum member's name as the JSON spells it: ``IPU_LINK`` -> ``ipu-link``."""
    return name.lower().replace("_", "-")


HostOrCidr = Annotated[str, Field(min_length=1, max_length=64, examples=["10.1.2.0/24"])]
"""One entry of an allocation's host list: an address or a CIDR."""
