"""An agent's shapes: adding one, discovering them, the agent, and the faults injected
into its emulated machine (``ipu``, ``link-down``, ``agent-hang``, ``agent-slow``)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, Field, model_validator

from vpod.domain.catalog import IPUS_PER_MACHINE, MachineType
from vpod.domain.entities import HOST_MAX_LENGTH, MAX_FAULT_DELAY_MS, split_host_port

from .fields import AgentId, StrictBody, lower_dashed

AGENT_KEY_MAX_LENGTH = 256


def agent_key_field(description: str) -> Any:
    """An agent's key in a request: optional (empty: the key the agent registered with),
    never answered back."""
    return Field(default="", max_length=AGENT_KEY_MAX_LENGTH, description=description)


FaultKindName = Annotated[
    Literal["ipu", "link-down", "agent-hang", "agent-slow"], BeforeValidator(lower_dashed)
]


class CreateAgentBody(StrictBody):
    id: AgentId
    host: str = Field(min_length=1, max_length=HOST_MAX_LENGTH, description="Host or IP.")
    port: int = Field(ge=1, le=65535)
    machine_type: MachineType = Field(default=MachineType.BOW2000)
    serial: str = Field(default="", max_length=128)
    agent_key: str = agent_key_field(
        "The key the agent answers to (`vipu-agent --key-file`); empty: the key it registered"
        " with, if any. Never shown again."
    )


class FaultOut(BaseModel):
    kind: str
    device_id: int | None
    link_id: str | None
    delay_ms: int
    reason: str
    description: str


class AgentOut(BaseModel):
    id: str
    host: str
    port: int
    machine_type: str
    serial: str
    cluster_id: str | None
    allocation_id: str | None
    reachable: bool = Field(description="False once the agent stopped answering heartbeats.")
    state_detail: str = Field(description="Why it is unreachable.")
    last_seen: datetime | None
    faults: list[FaultOut] = Field(description="Active injected faults, as last seen.")


class AgentList(BaseModel):
    agents: list[AgentOut]


def _host_port(address: str) -> str:
    split_host_port(address)  # raises ValueError with a sentence
    return address


Address = Annotated[
    str,
    Field(
        min_length=3,
        max_length=HOST_MAX_LENGTH + 8,
        pattern=r"^([^\s:\[\]]+|\[[0-9A-Fa-f:.]+\]):[0-9]{1,5}$",
    ),
    AfterValidator(_host_port),
]


class DiscoverBody(StrictBody):
    addresses: list[Address] = Field(
        min_length=1, max_length=256, description="`HOST:PORT` addresses to probe."
    )
    add: bool = Field(default=False, description="Create the agents found.")
    agent_key: str = agent_key_field(
        "The agents' key (`vipu-agent --key-file`); empty: the key the agent at each address"
        " registered with."
    )


class DiscoveredAgent(BaseModel):
    host: str
    port: int
    agent_id: str = ""
    machine_type: str = ""
    serial: str = ""
    known: bool = False
    added: bool = False
    error: str = Field(default="", description="Why the probe failed.")


class DiscoveredAgentList(BaseModel):
    agents: list[DiscoveredAgent]


class FaultBody(StrictBody):
    """A fault to inject into an emulated machine; the fields a kind needs are required."""

    kind: FaultKindName
    device_id: int | None = Field(
        default=None, ge=0, lt=IPUS_PER_MACHINE, description="For `ipu`: which IPU (0-3)."
    )
    link_id: str | None = Field(
        default=None, min_length=1, max_length=64, description="For `link-down`, e.g. `gwlink0`."
    )
    delay_ms: int = Field(default=0, ge=0, le=MAX_FAULT_DELAY_MS, description="For `agent-slow`.")
    reason: str = Field(default="", max_length=255)

    @model_validator(mode="after")
    def _needs_its_target(self) -> FaultBody:
        if self.kind == "ipu" and self.device_id is None:
            raise ValueError("an `ipu` fault needs device_id (0-3)")
        if self.kind == "link-down" and not self.link_id:
            raise ValueError("a `link-down` fault needs link_id (e.g. ipulink0, gwlink0)")
        return self


class AgentFaults(BaseModel):
    agent_id: str
    active_faults: list[FaultOut]
