"""``vpod keypair create|import|list|show|delete``: a project's SSH keypairs (docs/ssh.md).

``create`` has the cloud make an ed25519 key and writes its private half
once, 0600, to ``--private-key FILE`` (default ``~/.config/vpod/keys/NAME``,
with ``NAME.pub`` beside it); the cloud keeps only the public key. ``import``
registers a public key made elsewhere (``ssh-keygen``). Give keypairs to a
cluster with ``vpod cluster create --keypair NAME`` or ``vpod cluster
keypair add``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from vpod.domain.cloud.names import NAME_RULE, is_valid_name
from vpod.domain.excerpts import excerpt

from .cloud_options import FILE, ApiRecord, connection_options, list_command, show_command, shows
from .cloud_output import emit
from .errors import fail
from .render import details, table
from .short_help import CONTEXT, FittingGroup
from .ssh_files import key_path, write_private

if TYPE_CHECKING:
    from vpod.client import CloudClient


def keypairs_table(found: Sequence[dict[str, Any]]) -> str:
    return table(
        ["Name", "Type", "Fingerprint", "Clusters"],
        [[k["name"], k["type"], k["fingerprint"], ", ".join(k["clusters"]) or "-"] for k in found],
    )


def keypair_text(k: dict[str, Any]) -> str:
    return details(
        [
            ("Keypair", k["name"]),
            ("Id", k["id"]),
            ("Type", k["type"]),
            ("Fingerprint", k["fingerprint"]),
            ("Clusters", ", ".join(k["clusters"]) or "-"),
            ("Created", k["created_at"]),
            ("Public key", k["public_key"]),
        ]
    )


@click.group("keypair", context_settings=CONTEXT, cls=FittingGroup)
def keypair() -> None:
    """SSH keypairs of your project: the keys that log in to your clusters' servers.

    \b
      vpod keypair create laptop
      vpod cluster create train-1 --flavor g2a-ai-fast-v1pod-4 --keypair laptop --wait
      vpod cluster ssh train-1
    """


@keypair.command("create", short_help="Make an ed25519 keypair; its private key is written once.")
@click.argument("name")
@click.option(
    "--private-key",
    "private_key",
    type=FILE,
    default=None,
    help="Where to write the private key (default: ~/.config/vpod/keys/NAME); never replaced.",
)
@connection_options
def create(client: CloudClient, name: str, private_key: Path | None, as_json: bool) -> None:
    """Make an ed25519 keypair NAME; its private key is written once, 0600 (the cloud keeps
    only the public key)."""
    if private_key is None and not is_valid_name(name):  # before NAME becomes a file name
        fail(f"keypair name {excerpt(name, quote=True)} is not valid: {NAME_RULE}", 2)
    path = private_key or key_path(name)
    if path.exists() or path.with_name(path.name + ".pub").exists():
        fail(
            f"{path} exists: give --private-key FILE elsewhere, or remove it (a key is never"
            " overwritten)",
            2,
        )
    made = client.create_keypair(name)
    assert made.private_key is not None
    write_private(path, made.private_key)
    write_private(path.with_name(path.name + ".pub"), made.public_key + "\n", 0o644)
    raw = {k: v for k, v in made.raw.items() if k != "private_key"}
    raw["private_key_file"] = str(path)
    emit(raw, as_json, lambda k: f"{keypair_text(k)}\nPrivate key: {path} (written once)")


@keypair.command("import")
@click.argument("name")
@click.option(
    "--public-key",
    "public_key",
    type=click.File("r"),
    required=True,
    help="The public key file (e.g. ~/.ssh/id_ed25519.pub; - for stdin).",
)
@shows(keypair_text)
def import_key(client: CloudClient, name: str, public_key: Any) -> ApiRecord:
    """Register the public key of a keypair you made (ssh-keygen) as NAME."""
    return client.create_keypair(name, public_key.read())


list_command(
    keypair,
    lambda client: client.list_keypairs(),
    keypairs_table,
    "Your project's keypairs, with their OpenSSH fingerprints.",
)
show_command(
    keypair,
    "NAME",
    lambda client, ref: client.get_keypair(ref),
    keypair_text,
    "One keypair (by name or id), with its public key.",
)


@keypair.command("delete")
@click.argument("name")
@connection_options
def delete(client: CloudClient, name: str, as_json: bool) -> None:
    """Delete keypair NAME (refused while a cluster holds it: remove it there first)."""
    client.delete_keypair(name)
    emit({"deleted": name}, as_json, lambda _: f"keypair {name} deleted")
