"""``vipu-admin`` commands for agent registration tokens (see docs/security.md).

A ``--secure`` controller admits an agent's registration only with a token
an administrator issued; the token is shown once (the controller keeps a
hash) and handed to ``vipu-agent --token-file FILE`` (or
``VIPU_AGENT_TOKEN``). Each agent id stays bound to the token it first
registered with.
"""

from __future__ import annotations

from pathlib import Path

import click

from vpod.wire import admin_pb2 as apb

from .exit_status import CliError
from .render import joined, message_dict, table, timestamp_text
from .short_help import CONTEXT
from .vipu_admin_inventory import admin_client
from .vipu_admin_users import write_private
from .vipu_group import echo_json, json_option, removed, success

TOKEN_HEADERS = ("Token", "Label", "Agents", "Created")


@click.command("agent-token", context_settings=CONTEXT)
@click.option("--label", default="", help="What it is for (a rack, a host); at most 200 chars.")
@click.option(
    "--output",
    type=click.Path(dir_okay=False, writable=True, path_type=Path),
    default=None,
    metavar="FILE",
    help="Also write the token to FILE (mode 0600), for vipu-agent --token-file.",
)
@json_option
@click.pass_context
def create_agent_token(ctx: click.Context, label: str, output: Path | None, as_json: bool) -> None:
    """Issue an agent registration token and print it once.

    \b
    Examples:
      vipu-admin create agent-token --label rack-1 --output rack-1.token
      vipu-agent --machines 16 --register ctl:8091 --token-file rack-1.token
    """
    reply = admin_client(ctx).create_agent_token(label).raw
    if output is not None:
        try:
            write_private(output, reply.token + "\n")
        except OSError as exc:
            raise CliError(
                f"agent token {reply.agent_token.id} was issued but {output} could not be"
                f" written ({exc.strerror}): it is {reply.token}"
            ) from None
    if as_json:
        echo_json({"agent_token": message_dict(reply.agent_token), "token": reply.token})
        return
    success("create", "agent token", reply.agent_token.id)
    click.echo(f"token: {reply.token}")
    click.echo("The token is shown only this once: give it to vipu-agent --token-file.")


@click.command("agent-tokens", context_settings=CONTEXT)
@json_option
@click.pass_context
def list_agent_tokens(ctx: click.Context, as_json: bool) -> None:
    """List agent registration tokens and the agents bound to each.

    Table columns: Token | Label | Agents | Created.
    """
    tokens = admin_client(ctx).list_agent_tokens()
    reply = apb.ListAgentTokensReply(agent_tokens=[t.raw for t in tokens])
    if as_json:
        echo_json(message_dict(reply))
        return
    rows = [
        [t.id, t.label, joined(t.agent_ids), timestamp_text(t.created_at)]
        for t in reply.agent_tokens
    ]
    click.echo(table(TOKEN_HEADERS, rows))


@click.command("agent-token", context_settings=CONTEXT)
@click.argument("token_id", metavar="ID")
@json_option
@click.pass_context
def remove_agent_token(ctx: click.Context, token_id: str, as_json: bool) -> None:
    """Remove agent token ID: it admits no registration any more, and the agents bound to it
    may bind to another token."""
    admin_client(ctx).remove_agent_token(token_id)
    removed("agent token", token_id, as_json)
