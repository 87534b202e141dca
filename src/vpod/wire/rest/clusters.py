"""A cluster's shapes: creating one, the cluster, and its link tests (``cabling``,
``ipu-link``, ``gw-link``, ``sync-link``, ``traffic``). Topologies are spelled ``torus`` or
``mesh``, and ``looped`` or ``switched``."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, BeforeValidator, Field

from vpod.domain.topology import GwTopology, IldTopology

from .fields import MAX_LIST, AgentId, ClusterId, StrictBody, lower_dashed

LinkTestName = Annotated[
    Literal["cabling", "ipu-link", "gw-link", "sync-link", "traffic"],
    BeforeValidator(lower_dashed),
]


class CreateClusterBody(StrictBody):
    id: ClusterId
    agent_ids: list[AgentId] = Field(
        min_length=1, max_length=MAX_LIST, description="In cabling order."
    )
    num_ipulinkdomains: int = Field(default=1, ge=1, le=MAX_LIST)
    topology: IldTopology = IldTopology.TORUS
    cluster_topology: GwTopology | None = Field(
        default=None, description="Default: looped up to 256 IPUs, else switched."
    )


class ClusterOut(BaseModel):
    id: str
    agent_ids: list[str]
    num_ipulinkdomains: int
    topology: str
    cluster_topology: str
    num_ipus: int
    machine_type: str


class ClusterList(BaseModel):
    clusters: list[ClusterOut]


class TestClusterBody(StrictBody):
    tests: list[LinkTestName] = Field(
        default_factory=list, max_length=5, description="Which tests; empty: all five."
    )


class ClusterTestResult(BaseModel):
    test: str
    passed: bool
    summary: str
    details: list[str] = Field(description="One line per failure, prefixed by the agent id.")
    agents_tested: int
    agents_failed: int


class ClusterTestReport(BaseModel):
    cluster_id: str
    passed: bool
    results: list[ClusterTestResult]
