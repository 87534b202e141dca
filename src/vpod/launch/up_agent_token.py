"""The agent registration token ``vpod up --secure`` hands the agents it starts.

A ``--secure`` controller admits agents only with a token an administrator
issued, and binds each agent id to the token it first registered with. So
``vpod up`` issues one (as the administrator it already is), keeps it in
``DATA_DIR/agent.token`` (mode 0600) and gives the same one to its agents at
every start, through the environment (``VIPU_AGENT_TOKEN``), never on a
command line. A kept token the controller no longer knows (removed with
``vipu-admin remove agent-token``) is replaced by a new one.
"""

from __future__ import annotations

import os
from pathlib import Path

import grpc

from vpod.wire import admin_pb2 as apb
from vpod.wire import admin_pb2_grpc as apb_grpc

TOKEN_FILE = "agent.token"
CALL_TIMEOUT_S = 30.0


def _kept(path: Path) -> str:
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return ""
    return lines[0].strip() if lines else ""


def _write_private(path: Path, text: str) -> None:
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(descriptor, "w") as handle:
        os.fchmod(handle.fileno(), 0o600)
        handle.write(text)


def ensure_agent_token(target: str, admin: tuple[str, str], data_dir: Path) -> str:
    """The token in ``DATA_DIR/agent.token`` if the controller at ``target`` knows it, else a
    new one issued by ``admin`` (user id, access key) and written there."""
    metadata = (("vipu-user-id", admin[0]), ("vipu-access-key", admin[1]))
    path = data_dir / TOKEN_FILE
    kept = _kept(path)
    with grpc.insecure_channel(target) as channel:
        stub = apb_grpc.AdminServiceStub(channel)
        if kept.startswith("vat_") and "." in kept:
            token_id = kept[len("vat_") :].split(".", 1)[0]
            known = stub.ListAgentTokens(
                apb.ListAgentTokensRequest(), metadata=metadata, timeout=CALL_TIMEOUT_S
            )
            if token_id in {t.id for t in known.agent_tokens}:
                return kept
        reply = stub.CreateAgentToken(
            apb.CreateAgentTokenRequest(label="vpod up"), metadata=metadata, timeout=CALL_TIMEOUT_S
        )
    _write_private(path, reply.token + "\n")
    return str(reply.token)


__all__ = ["TOKEN_FILE", "ensure_agent_token"]
