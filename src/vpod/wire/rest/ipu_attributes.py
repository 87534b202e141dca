"""The IPUs' attributes as their agents report them."""

from __future__ import annotations

from pydantic import BaseModel, Field


class IpuAttributesOut(BaseModel):
    device_id: int
    attributes: dict[str, str]


class AgentIpuAttributes(BaseModel):
    agent_id: str
    ipus: list[IpuAttributesOut] = Field(description="Empty when the agent did not answer.")


class IpuAttributeList(BaseModel):
    agents: list[AgentIpuAttributes]
