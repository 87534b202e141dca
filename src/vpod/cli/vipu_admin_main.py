"""``vipu-admin``: the V-IPU administrator's command line (reference in docs/cli.md).

It calls ``vpod.admin.v1.AdminService`` on the admin endpoint (port 8091 by
default; ``admin-api-host``/``admin-api-port`` in the config file, and
``-H``/``--api-port`` on this command line, name it). The commands live in
three modules by subject; this one only arranges them under their verbs.
"""

from __future__ import annotations

from typing import NoReturn

import click

from vpod.cli import grpc_logging  # noqa: F401  (before anything imports grpc)

from . import vipu_admin_agent_tokens as agent_tokens
from . import vipu_admin_events as events
from . import vipu_admin_inventory as inventory
from . import vipu_admin_operations as operations
from . import vipu_admin_users as users
from .short_help import CONTEXT
from .vipu_group import SubcommandGroup, root_group


@root_group("vipu-admin", admin_cli=True, example="list agents")
def cli() -> None:
    """Administer a V-IPU controller: agents, clusters, allocations, users, faults.

    \b
    Examples:
      vipu-admin discover agent --address 10.1.0.1:8092,10.1.0.2:8092 --add
      vipu-admin create cluster pod16 --agents ipum1,ipum2,ipum3,ipum4
      vipu-admin test cluster pod16
      vipu-admin create allocation team-a --cluster pod16 --size 8
      vipu-admin create user alice --allocations team-a
      vipu-admin grant allocation team-b --user alice
      vipu-admin list partitions
      vipu-admin list events --since 2h
    """


def _verb(name: str, help_text: str, *commands: click.Command) -> None:
    group = SubcommandGroup(name=name, help=help_text, context_settings=CONTEXT)
    for command in commands:
        group.add_command(command)
    cli.add_command(group)


_verb(
    "create",
    "Create an agent, cluster, allocation, user or agent token.",
    inventory.create_agent,
    inventory.create_cluster,
    inventory.create_allocation,
    users.create_user,
    agent_tokens.create_agent_token,
)
_verb(
    "list",
    "List agents, clusters, allocations, users, partitions, IPU attrs, events, agent tokens.",
    inventory.list_agents,
    inventory.list_clusters,
    inventory.list_allocations,
    users.list_users,
    operations.list_partitions,
    operations.list_ipu_attrs,
    events.list_events,
    agent_tokens.list_agent_tokens,
)
_verb(
    "remove",
    "Remove an agent, cluster, allocation, user or agent token.",
    inventory.remove_agent,
    inventory.remove_cluster,
    inventory.remove_allocation,
    users.remove_user,
    agent_tokens.remove_agent_token,
)
_verb(
    "grant",
    "Let an existing user use an allocation too (its key stays).",
    users.grant_allocation,
)
_verb(
    "revoke",
    "Take an allocation away from a user.",
    users.revoke_allocation,
)
_verb(
    "update",
    "Change an allocation's IPUoF hosts, or give a user a new access key.",
    inventory.update_allocation,
    users.update_user,
)
_verb("discover", "Find agents on the network.", inventory.discover_agent)
_verb("test", "Test a cluster's cabling and links.", operations.test_cluster)
_verb("inject", "Inject a fault into an emulated machine.", operations.inject_fault)
_verb("clear", "Clear injected faults.", operations.clear_fault)


def main() -> NoReturn:
    """Console script ``vipu-admin``."""
    cli.main(prog_name="vipu-admin")
