"""Identity is never reused: a deleted project's id, a removed user's key, an agent's id.

- A cloud project's id is never handed to another tenant: after a project is
  deleted, creating one with its id is refused with a sentence, and a new
  project with the same *name* sees none of the old one's tasks, volumes or
  invoices.
- A V-IPU user removed and created again with the same id has a new key; the
  old key stops at once on every controller replica (two controllers on one
  database here), not after a replica's cache of verified keys expires.
- Under ``--secure`` an agent registers only with a registration token, and
  an agent id stays bound to the token it first registered with: no token, a
  wrong token or another valid token cannot register, take over a known
  agent id or move its address (``tenants``: a real ``vipu-server --secure``
  whose agents registered with a token). Refusals are in the audit log.
"""

from __future__ import annotations

import asyncio
from decimal import Decimal
from pathlib import Path

import grpc
import pytest

from tests.cloud.conftest import error, ok, run_task
from tests.cloud.live import LiveCloud
from vpod.controller import errors
from vpod.controller.agent_grpc import GrpcAgentGateway
from vpod.controller.app import build_controller
from vpod.controller.caller import SYSTEM
from vpod.controller.settings import Settings
from vpod.wire import admin_pb2 as apb
from vpod.wire import admin_pb2_grpc as apb_grpc

from .conftest import Tenants
from .procs import CALL_TIMEOUT_S, issue_agent_token, run_tool

# ------------------------------------------------------------------ cloud projects


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    from tests.cloud.live import start_cloud, stop_cloud

    cloud = start_cloud(tmp_path_factory.mktemp("identity"))
    try:
        yield cloud
    finally:
        stop_cloud(cloud)


def test_a_deleted_projects_id_is_never_given_to_a_new_project(live: LiveCloud) -> None:
    """Project ``old`` leaves tasks and metering behind; once deleted, its id cannot name a
    new project (409 with the reason), and a new project under the same name sees nothing."""
    token = live.project("old")
    with live.client(token) as http:
        assert run_task(live, http, "POST", "/volumes", json={"name": "vol1", "size_gib": 1000})
        live.clock.advance(10 * 3600)
        assert run_task(live, http, "DELETE", "/volumes/vol1")["state"] == "FINISHED"
        assert ok(http.get("/tasks"))
        since = {"start": "2000-01-01T00:00:00Z"}
        assert Decimal(ok(http.get("/invoice", params=since))["total"]) > 0
    with live.admin() as admin:
        ok(admin.delete("/admin/projects/old"), 204)
        message = error(
            admin.post("/admin/projects", json={"id": "old", "name": "old"}),
            409,
            "ALREADY_EXISTS",
        )
        assert "deleted project" in message
        assert "never reused" in message
        error(admin.get("/admin/projects/old"), 404, "NOT_FOUND")
        assert "old" not in {p["id"] for p in ok(admin.get("/admin/projects"))}
        created = ok(admin.post("/admin/projects", json={"id": "new-old", "name": "old"}), 201)
    with live.client(created["token"]["token"]) as http:
        assert ok(http.get("/tasks")) == []
        assert ok(http.get("/volumes")) == []
        assert ok(http.get("/clusters")) == []
        invoice = ok(http.get("/invoice", params={"start": "2000-01-01T00:00:00Z"}))
        assert (invoice["total"], invoice["lines"]) == ("0.00", [])
    with live.client(token) as http:  # the deleted project's token went with it
        error(http.get("/tasks"), 401, "UNAUTHENTICATED")


# ------------------------------------------------------------------ V-IPU users


def test_a_user_created_again_with_a_removed_users_id_does_not_answer_to_the_old_key(
    tmp_path: Path,
) -> None:
    """Replica B verified alice's key (and remembers it); replica A removes alice and
    creates her again: B refuses the old key at once and takes the new one."""

    async def scenario() -> None:
        settings = Settings(data_dir=tmp_path, secure=True)
        a = build_controller(settings, GrpcAgentGateway())
        b = build_controller(settings, GrpcAgentGateway())
        try:
            old = (await a.inventory.create_user(SYSTEM, "alice", [])).access_key
            caller = await b.auth.caller("alice", old, source="test", admin=False)
            assert caller.user_id == "alice"
            await a.inventory.remove_user(SYSTEM, "alice")
            with pytest.raises(errors.Unauthenticated):
                await b.auth.caller("alice", old, source="test", admin=False)
            new = (await a.inventory.create_user(SYSTEM, "alice", [], admin=True)).access_key
            with pytest.raises(errors.Unauthenticated):
                await b.auth.caller("alice", old, source="test", admin=False)
            renewed = await b.auth.caller("alice", new, source="test", admin=True)
            assert renewed.admin
        finally:
            a.close()
            b.close()

    asyncio.run(scenario())


# ------------------------------------------------------------------ agents


def _register(
    tenants: Tenants, agent_id: str, host: str, token: str | None
) -> tuple[grpc.StatusCode, str]:
    stub = apb_grpc.AgentRegistrationServiceStub(tenants.admin_channel())
    metadata = (("vipu-agent-token", token),) if token is not None else None
    try:
        reply = stub.RegisterAgent(
            apb.RegisterAgentRequest(agent_id=agent_id, host=host, port=9, boot_id="rogue"),
            metadata=metadata,
            timeout=CALL_TIMEOUT_S,
        )
    except grpc.RpcError as exc:
        return exc.code(), exc.details() or ""
    return grpc.StatusCode.OK, reply.message


def _address_of(tenants: Tenants, agent_id: str) -> tuple[str, int] | None:
    listed = tenants.admin_stub().ListAgents(
        apb.ListAgentsRequest(), metadata=tenants.md("admin"), timeout=CALL_TIMEOUT_S
    )
    found = [(a.host, a.port) for a in listed.agents if a.id == agent_id]
    return found[0] if found else None


@pytest.mark.parametrize(
    ("token", "code", "words"),
    [
        (None, grpc.StatusCode.UNAUTHENTICATED, "must register with an agent token"),
        ("", grpc.StatusCode.UNAUTHENTICATED, "must register with an agent token"),
        ("vat_0123456789abcdef." + "x" * 43, grpc.StatusCode.UNAUTHENTICATED, "unknown or wrong"),
        ("not a token", grpc.StatusCode.UNAUTHENTICATED, "unknown or wrong"),
    ],
)
def test_an_agent_without_a_valid_token_cannot_register_or_move_an_agent(
    tenants: Tenants, token: str | None, code: grpc.StatusCode, words: str
) -> None:
    """No token or a wrong one: neither a new agent id nor a known one's address changes."""
    before = _address_of(tenants, "ag1")
    for agent_id in ("ag1", "stranger"):
        got, message = _register(tenants, agent_id, "127.0.0.77", token)
        assert got is code, message
        assert words in message
    assert _address_of(tenants, "ag1") == before
    assert _address_of(tenants, "stranger") is None


def test_another_valid_token_cannot_take_over_a_known_agent(tenants: Tenants) -> None:
    """A holder of a token of its own registers new agents, but an agent id bound to another
    token (ag1, registered by the pod's agents) is PERMISSION_DENIED and keeps its address;
    the refusal is in the audit log."""
    admin = tenants.admin_stub()
    md = tenants.md("admin")
    other = issue_agent_token(admin, md)
    before = _address_of(tenants, "ag1")
    code, message = _register(tenants, "ag1", "127.0.0.78", other)
    assert code is grpc.StatusCode.PERMISSION_DENIED, message
    assert "registered with another agent token" in message
    assert _address_of(tenants, "ag1") == before
    code, message = _register(tenants, "newcomer", "127.0.0.79", other)
    assert code is grpc.StatusCode.OK, message
    try:
        tokens = admin.ListAgentTokens(apb.ListAgentTokensRequest(), metadata=md, timeout=30)
        bound = {t.id: set(t.agent_ids) for t in tokens.agent_tokens}
        assert any(ids >= {"ag1", "ag2", "ag3", "ag4"} for ids in bound.values()), bound
        assert {"newcomer"} in bound.values()
        events = admin.ListEvents(
            apb.ListEventsRequest(action="register_agent", outcome="denied"),
            metadata=md,
            timeout=30,
        )
        assert any(e.target == "ag1" for e in events.events)
    finally:
        admin.RemoveAgent(apb.RemoveAgentRequest(agent_id="newcomer"), metadata=md, timeout=30)
        other_id = other[len("vat_") :].split(".", 1)[0]
        admin.RemoveAgentToken(
            apb.RemoveAgentTokenRequest(token_id=other_id), metadata=md, timeout=30
        )
    code, message = _register(tenants, "newcomer", "127.0.0.79", other)
    assert code is grpc.StatusCode.UNAUTHENTICATED, "a removed token admits nothing"


def test_plain_users_cannot_issue_agent_tokens(tenants: Tenants) -> None:
    """Agent tokens are the administrators' to issue, list and remove."""
    admin = tenants.admin_stub()
    with pytest.raises(grpc.RpcError) as refused:
        admin.CreateAgentToken(
            apb.CreateAgentTokenRequest(), metadata=tenants.md("alice"), timeout=30
        )
    assert refused.value.code() is grpc.StatusCode.PERMISSION_DENIED


def test_agent_tokens_over_rest_are_the_same_tokens(tenants: Tenants) -> None:
    """POST /api/v1/admin/agent-tokens issues a token that registers an agent over gRPC and
    that `vipu-admin list agent-tokens` lists; GET lists it with its agent and no secret;
    DELETE removes it (the next registration with it is refused); a plain user gets 403."""
    path = "/api/v1/admin/agent-tokens"
    with tenants.http("alice") as alice:
        assert alice.post(path, json={"label": "x"}).status_code == 403
        assert alice.get(path).status_code == 403
    with tenants.http("admin") as http:
        created = http.post(path, json={"label": "rest-rack"})
        assert created.status_code == 201, created.text
        token, token_id = created.json()["token"], created.json()["agent_token"]["id"]
        assert token.startswith(f"vat_{token_id}.")
        code, message = _register(tenants, "rest-agent", "127.0.0.80", token)
        assert code is grpc.StatusCode.OK, message
        try:
            listed = {t["id"]: t for t in http.get(path).json()["agent_tokens"]}
            assert listed[token_id]["label"] == "rest-rack"
            assert listed[token_id]["agent_ids"] == ["rest-agent"]
            assert token.split(".", 1)[1] not in http.get(path).text
            cli = run_tool(
                "vipu-admin", "--config", str(tenants.config_file("admin")), "list",
                "agent-tokens", "--json",
            )  # fmt: skip
            assert cli.returncode == 0, cli.stderr
            assert token_id in cli.stdout
            assert http.post(path, json={"label": "x" * 201}).status_code == 400
        finally:
            tenants.admin_stub().RemoveAgent(
                apb.RemoveAgentRequest(agent_id="rest-agent"), metadata=tenants.md("admin")
            )
        assert http.delete(f"{path}/{token_id}").status_code == 204
        assert http.delete(f"{path}/{token_id}").status_code == 404
    code, _ = _register(tenants, "rest-agent-2", "127.0.0.81", token)
    assert code is grpc.StatusCode.UNAUTHENTICATED
