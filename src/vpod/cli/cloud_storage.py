"""``vpod storage endpoints|register|list|show|delete|attach|detach``: dataset storage, a
project's S3-compatible buckets given to clusters (docs/cloud.md, "Dataset storage")."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import IO, TYPE_CHECKING, Any

import click

from .cloud_options import (
    ApiRecord,
    connection_options,
    list_command,
    show_command,
    shows,
    task_command,
)
from .cloud_output import emit
from .render import details, table
from .short_help import CONTEXT, FittingGroup

if TYPE_CHECKING:
    from vpod.client import CloudClient, Task


def endpoints_table(found: Sequence[dict[str, Any]]) -> str:
    return table(
        ["Endpoint", "URL", "Region", "Addressing"],
        [
            [e["name"], e["url"], e["region"], "path" if e["path_style"] else "virtual"]
            for e in found
        ],
    )


def storage_table(found: Sequence[dict[str, Any]]) -> str:
    return table(
        ["Id", "Name", "Endpoint", "Bucket", "Access key", "Clusters"],
        [
            [
                s["id"],
                s["name"],
                s["endpoint"],
                s["bucket"],
                s["access_key"],
                ", ".join(s["clusters"]) or "-",
            ]
            for s in found
        ],
    )


def storage_text(s: dict[str, Any]) -> str:
    return details(
        [
            ("Storage", s["id"]),
            ("Name", s["name"]),
            ("Endpoint", s["endpoint"]),
            ("Bucket", s["bucket"]),
            ("Access key", s["access_key"]),
            ("Secret key", "(sealed; never shown)"),
            ("Clusters", ", ".join(s["clusters"]) or "-"),
            ("Created", s["created_at"]),
        ]
    )


def _secret(source: IO[str] | None) -> str:
    """The secret key from a file (``-``: stdin), else a hidden prompt on a terminal."""
    if source is not None:
        return source.read().strip()
    if not sys.stdin.isatty():
        raise click.UsageError(
            "give the secret key with --secret-key-file FILE (or - for stdin): it is never"
            " taken on the command line, where other users could read it"
        )
    value: str = click.prompt("Secret access key", hide_input=True)
    return value


@click.group("storage", context_settings=CONTEXT, cls=FittingGroup)
def storage() -> None:
    """Dataset storage: S3-compatible buckets your clusters' servers can use.

    Register a bucket with its keys once (the keys are sealed at rest and never shown
    again), then give it to a cluster: every server gets ~/.aws/config and credentials
    (profile vpod-datasets, and default), AWS_* variables and, with --mount, the bucket
    mounted at a path you choose.
    """


@storage.command("endpoints")
@shows(endpoints_table)
def storage_endpoints(client: CloudClient) -> Sequence[ApiRecord]:
    """The S3-compatible endpoints the operator offers."""
    return client.storage_endpoints()


@storage.command("register")
@click.argument("name")
@click.option("--endpoint", required=True, help="An endpoint from `vpod storage endpoints`.")
@click.option("--bucket", required=True, help="The bucket on that endpoint.")
@click.option("--access-key", required=True, metavar="ID", help="The access key id.")
@click.option(
    "--secret-key-file",
    type=click.File("r"),
    default=None,
    help="A file holding the secret key (- for stdin); default: a hidden prompt.",
)
@shows(storage_text)
def storage_register(
    client: CloudClient,
    name: str,
    endpoint: str,
    bucket: str,
    access_key: str,
    secret_key_file: IO[str] | None,
) -> ApiRecord:
    """Register a bucket and its keys as storage NAME (keys sealed; shown masked from now on)."""
    return client.register_dataset_storage(
        name, endpoint, bucket, access_key, _secret(secret_key_file)
    )


list_command(
    storage,
    lambda client: client.list_dataset_storage(),
    storage_table,
    "Your project's dataset storage and the clusters holding each.",
)
show_command(
    storage,
    "STORAGE",
    lambda client, ref: client.get_dataset_storage(ref),
    storage_text,
    "One dataset storage (by name or id).",
)


@storage.command("delete")
@click.argument("storage_ref", metavar="STORAGE")
@connection_options
def storage_delete(client: CloudClient, storage_ref: str, as_json: bool) -> None:
    """Forget a storage and its keys (refused while a cluster holds it: detach first)."""
    client.delete_dataset_storage(storage_ref)
    emit({"deleted": storage_ref}, as_json, lambda _: f"dataset storage {storage_ref} deleted")


@storage.command("attach")
@click.argument("storage_ref", metavar="STORAGE")
@click.argument("cluster_ref", metavar="CLUSTER")
@click.option(
    "--mount", default=None, metavar="PATH", help="Also mount the bucket at PATH on each server."
)
@task_command
def storage_attach(
    client: CloudClient,
    storage_ref: str,
    cluster_ref: str,
    mount: str | None,
) -> Task:
    """Give every server of CLUSTER the storage (a cluster holds one at a time)."""
    return client.attach_dataset_storage(storage_ref, cluster_ref, mount)


@storage.command("detach")
@click.argument("cluster_ref", metavar="CLUSTER")
@task_command
def storage_detach(client: CloudClient, cluster_ref: str) -> Task:
    """Take CLUSTER's storage away: its files and variables go, the bucket is unmounted."""
    return client.detach_dataset_storage(cluster_ref)
