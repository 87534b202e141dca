"""Agent registration tokens (``/api/v1/admin/agent-tokens``); the secret is in the
creation's answer only."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

from .fields import StrictBody

MAX_LABEL = 200
"""Longest label a token may carry (free text saying what it is for)."""


class AgentTokenOut(BaseModel):
    id: str
    label: str
    created_at: datetime
    agent_ids: list[str] = Field(description="The agents that registered with it.")


class AgentTokenList(BaseModel):
    agent_tokens: list[AgentTokenOut]


class CreateAgentTokenBody(StrictBody):
    label: str = Field("", max_length=MAX_LABEL, description="What it is for (free text).")


class CreatedAgentToken(BaseModel):
    agent_token: AgentTokenOut
    token: str = Field(
        description="Shown once: give it to the agent (--token-file FILE or VIPU_AGENT_TOKEN)."
    )
