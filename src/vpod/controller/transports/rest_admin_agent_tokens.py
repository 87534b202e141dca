"""Agent registration tokens under ``/api/v1/admin/agent-tokens``: what
``vipu-admin create agent-token``, ``list agent-tokens`` and ``remove agent-token`` do
over the admin gRPC API, as JSON.

The same use-case (:class:`~vpod.controller.agent_tokens.AgentTokens`) serves
both, so a token issued here admits an agent exactly like one issued by
``vipu-admin``; the secret is in the creation's answer only (the controller
keeps a hash).
"""

from typing import Annotated

from fastapi import APIRouter, Depends, Path

from vpod.wire.field_copy import copy_fields
from vpod.wire.rest.agent_tokens import (
    AgentTokenList,
    AgentTokenOut,
    CreateAgentTokenBody,
    CreatedAgentToken,
)

from ..agent_tokens import AgentTokenRecord
from .rest_auth import AsAdmin, admin_caller
from .rest_deps import AgentTokensDep
from .rest_routes import Routes
from .rest_user import API_PREFIX

router = APIRouter(
    prefix=f"{API_PREFIX}/admin/agent-tokens",
    tags=["admin: agent tokens"],
    dependencies=[Depends(admin_caller)],
)
"""The agent-token endpoints (``create_http_app`` includes them)."""

routes = Routes(router)


def _out(record: AgentTokenRecord) -> AgentTokenOut:
    return copy_fields(AgentTokenOut, record, agent_ids=list(record.agent_ids))


@routes.creates("", 400, 401, 403, 503)
async def create_agent_token(
    caller: AsAdmin, tokens: AgentTokensDep, body: CreateAgentTokenBody | None = None
) -> CreatedAgentToken:
    """Issue a registration token (`vipu-admin create agent-token`); its secret is shown
    this once."""
    issued = await tokens.issue(caller, body.label if body is not None else "")
    return CreatedAgentToken(agent_token=_out(issued.record), token=issued.token)


@routes.get("", 401, 403, 503)
async def list_agent_tokens(tokens: AgentTokensDep) -> AgentTokenList:
    """Every registration token and the agents bound to it, never the secrets
    (`vipu-admin list agent-tokens`)."""
    return AgentTokenList(agent_tokens=[_out(t) for t in await tokens.list()])


@routes.no_content("delete", "/{token_id}", 400, 401, 403, 404, 503)
async def remove_agent_token(
    caller: AsAdmin,
    tokens: AgentTokensDep,
    token_id: Annotated[str, Path(max_length=64, description="The token's id.")],
) -> None:
    """Remove a token (`vipu-admin remove agent-token`): it admits no registration any more,
    and the agents bound to it may bind to another token."""
    await tokens.remove(caller, token_id)
