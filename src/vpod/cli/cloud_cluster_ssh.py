"""``vpod cluster ssh|ssh-proxy|ssh-config|keypair``: reaching a cluster's servers with
OpenSSH through the controller (docs/ssh.md).

``vpod cluster ssh CLUSTER [-- COMMAND...]`` runs OpenSSH when the cluster
holds keypairs (exit status, streams, terminal and window size are
OpenSSH's own), with the configuration ``ssh-config`` prints; a cluster
without keypairs (or ``--relay``) gets the controller's shell relay.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click

from .cloud_keypair import keypairs_table
from .cloud_options import FILE, ApiRecord, connection_options, shows
from .cloud_output import emit
from .cloud_ssh import run_ssh
from .errors import fail
from .openssh import known_host_entries, render_config
from .short_help import CONTEXT, FittingGroup
from .ssh_files import known_hosts_path, replace_file, update_known_hosts, vpod_dir

if TYPE_CHECKING:
    from vpod.client import CloudClient, ClusterSsh

identity_option = click.option(
    "--identity",
    "identities",
    multiple=True,
    type=FILE,
    help="A private key to offer (repeatable; default: the keys `vpod keypair create` wrote for"
    " the cluster's keypairs, then ssh-agent and ~/.ssh).",
)


def _connection(client: CloudClient) -> list[str]:
    """Options that let the ProxyCommand find the API (never the token: it comes from
    VPOD_TOKEN or the config file, as for every vpod command)."""
    words = ["--url", client.settings.url]
    source = Path(client.settings.source)
    if source.is_file():
        words += ["--config", str(source.resolve())]
    return words


def _server_name(info: ClusterSsh, server: int) -> str:
    found = next((s for s in info.servers if s.position == server), None)
    if found is None:
        fail(f"cluster {info.cluster} has no server {server}: it has {len(info.servers)}", 2)
    return found.name


def _write_config(
    client: CloudClient,
    info: ClusterSsh,
    known_hosts: Path,
    identities: Sequence[Path],
    *,
    direct: bool = False,
) -> str:
    if direct and not any(s.direct_port is not None for s in info.servers):
        fail(
            f"cluster {info.cluster}'s servers have no direct SSH port (the cloud's operator"
            " has not set ssh_direct_ports): leave out --direct to go through the controller's"
            " tunnel",
            2,
        )
    update_known_hosts(known_hosts, known_host_entries(info))
    return render_config(
        info,
        known_hosts=known_hosts,
        connection=_connection(client),
        identities=identities,
        direct=direct,
    )


direct_option = click.option(
    "--direct",
    is_flag=True,
    help="Reach the servers at their direct SSH ports on the controller's host (where the"
    " operator gives servers one: `vpod cluster show` lists them) instead of through the tunnel.",
)


@click.command("ssh-proxy")
@click.argument("cluster_ref", metavar="CLUSTER")
@click.argument("server", metavar="SERVER")
@connection_options
def ssh_proxy(client: CloudClient, cluster_ref: str, server: str, as_json: bool) -> None:  # noqa: ARG001
    """Join standard input and output to SERVER's sshd (its name or number) of CLUSTER, through
    the controller: OpenSSH's ProxyCommand (`vpod cluster ssh-config` writes it)."""
    from vpod.client.cloud_ssh import pump

    with client.open_ssh_tunnel(cluster_ref, server) as tunnel:
        pump(tunnel)


@click.command("ssh-config")
@click.argument("cluster_ref", metavar="CLUSTER")
@click.option(
    "--known-hosts",
    type=FILE,
    default=None,
    help="The known_hosts file to update with the servers' host keys"
    " (default: ~/.config/vpod/known_hosts).",
)
@identity_option
@direct_option
@connection_options
def ssh_config(
    client: CloudClient,
    cluster_ref: str,
    known_hosts: Path | None,
    identities: tuple[Path, ...],
    direct: bool,
    as_json: bool,
) -> None:
    """Print OpenSSH Host blocks for CLUSTER's servers and pin their host keys.

    \b
      vpod cluster ssh-config train-1 >> ~/.ssh/config
      ssh train-1                      # its first server; each server by its name too
      scp data.tar train-1:/home/      rsync -a -e ssh dir/ train-1:/home/dir/
      ssh -L 8888:localhost:8888 train-1
      vpod cluster ssh-config --direct train-1   # Port instead of ProxyCommand
    """
    info = client.cluster_ssh(cluster_ref)
    text = _write_config(client, info, known_hosts or known_hosts_path(), identities, direct=direct)
    emit(info.raw, as_json, lambda _: text)


@click.command("ssh", context_settings={"ignore_unknown_options": True, "show_default": True})
@click.argument("cluster_ref", metavar="CLUSTER")
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
@click.option(
    "--server",
    type=click.IntRange(1),
    default=1,
    help="Which server of the cluster.",
)
@identity_option
@click.option(
    "--relay",
    is_flag=True,
    help="Use the controller's shell relay instead of OpenSSH (no key needed).",
)
@direct_option
@connection_options
def ssh(
    client: CloudClient,
    cluster_ref: str,
    command: tuple[str, ...],
    server: int,
    identities: tuple[Path, ...],
    relay: bool,
    direct: bool,
    as_json: bool,
) -> None:
    """Open a shell on CLUSTER's server; with `-- COMMAND...`, run that command there.

    A cluster holding keypairs is reached with OpenSSH (its sshd, through the controller's
    tunnel, host key checked); one without (or with --relay) through the controller's shell
    relay. Either way the command's exit status is vpod's. --json prints how to connect."""
    if relay and direct:
        fail("--relay and --direct are two ways in: give one", 2)
    if relay:
        if as_json:
            emit(client.shell(cluster_ref, server).raw, True, str)
            return
        run_ssh(client, cluster_ref, server, command)
    info = client.cluster_ssh(cluster_ref)
    if as_json:
        emit(info.raw, True, str)
        return
    if not info.keypairs:
        if direct:
            fail(
                f"cluster {info.cluster} holds no keypairs, so its sshd lets nobody in: add one"
                " (`vpod cluster keypair add`), or leave out --direct for the shell relay",
                2,
            )
        run_ssh(client, cluster_ref, server, command)
    _exec_ssh(client, info, _server_name(info, server), command, identities, direct=direct)


def _exec_ssh(
    client: CloudClient,
    info: ClusterSsh,
    host: str,
    command: Sequence[str],
    identities: Sequence[Path],
    *,
    direct: bool = False,
) -> NoReturn:
    ssh_binary = shutil.which("ssh")
    if ssh_binary is None:
        fail("OpenSSH's ssh is not installed here (apt-get install openssh-client); or use --relay")
    config = vpod_dir() / "ssh" / f"{info.cluster}.config"
    text = _write_config(client, info, known_hosts_path(), identities, direct=direct)
    replace_file(config, text)
    argv = [ssh_binary, "-F", str(config), "--", host, *command]
    sys.stdout.flush()
    os.execv(ssh_binary, argv)


@click.command("console")
@click.argument("cluster_ref", metavar="CLUSTER")
@click.option(
    "--server",
    default="1",
    show_default=True,
    help="Which server of the cluster (its number or name).",
)
@connection_options
def console(client: CloudClient, cluster_ref: str, server: str, as_json: bool) -> None:
    """Print the address of a browser terminal on CLUSTER's server (open it in a browser
    logged in to the web console with your project's token)."""
    found = client.cluster_console(cluster_ref, server)
    emit(found.raw, as_json, lambda _: found.url)


@click.group("keypair", context_settings=CONTEXT, cls=FittingGroup)
def cluster_keypair() -> None:
    """The keypairs that may log in to a cluster's servers (changed at once, running or not).

    \b
      vpod cluster keypair add train-1 laptop
      vpod cluster keypair remove train-1 laptop
    """


def _cluster_keypairs(found: Sequence[dict[str, Any]]) -> str:
    return keypairs_table(found) if found else "(no keypairs: ssh is closed)"


@cluster_keypair.command("list")
@click.argument("cluster_ref", metavar="CLUSTER")
@shows(_cluster_keypairs)
def keypair_list(client: CloudClient, cluster_ref: str) -> Sequence[ApiRecord]:
    """The keypairs that may log in to CLUSTER's servers."""
    return client.cluster_keypairs(cluster_ref)


@cluster_keypair.command("add")
@click.argument("cluster_ref", metavar="CLUSTER")
@click.argument("name", metavar="KEYPAIR")
@shows(_cluster_keypairs)
def keypair_add(client: CloudClient, cluster_ref: str, name: str) -> Sequence[ApiRecord]:
    """Let KEYPAIR log in to CLUSTER's servers."""
    return client.add_cluster_keypair(cluster_ref, name)


@cluster_keypair.command("remove", short_help="Stop a keypair logging in to the servers.")
@click.argument("cluster_ref", metavar="CLUSTER")
@click.argument("name", metavar="KEYPAIR")
@shows(_cluster_keypairs)
def keypair_remove(client: CloudClient, cluster_ref: str, name: str) -> Sequence[ApiRecord]:
    """Stop KEYPAIR logging in to CLUSTER's servers (open connections stay, as with sshd)."""
    return client.remove_cluster_keypair(cluster_ref, name)


__all__ = ["cluster_keypair", "console", "ssh", "ssh_config", "ssh_proxy"]
