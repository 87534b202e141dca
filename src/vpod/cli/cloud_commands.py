"""The ``vpod`` cloud commands, for ``vpod_main`` to register (see docs/cloud.md, "CLI").

Each is named with the module that defines it, so ``vpod`` imports only the
command being run: a cloud command then never loads gRPC, ``vpod up`` never
loads the cloud client.
"""

from __future__ import annotations

import importlib

import click

CLOUD_COMMAND_MODULES: dict[str, str] = {
    "flavors": "cloud_account",
    "cluster": "cloud_cluster",
    "volume": "cloud_volume",
    "task": "cloud_task",
    "invoice": "cloud_account",
    "project": "cloud_account",
    "reservation": "cloud_reservation",
    "storage": "cloud_storage",
    "keypair": "cloud_keypair",
}


def load_command(module: str, name: str) -> click.Command:
    """The click command ``name`` defined in ``vpod.cli.<module>``, or in ``module`` when that
    is a full name (the server side's launchers: ``vpod.launch.slurm_up``)."""
    full = module if "." in module else f"{__package__}.{module}"
    command = getattr(importlib.import_module(full), name)
    if not isinstance(command, click.Command):
        raise TypeError(f"{full}.{name} is not a click command")
    return command


def cloud_commands() -> tuple[click.Command, ...]:
    """Every cloud command, loaded (for documentation checks)."""
    return tuple(load_command(m, name) for name, m in CLOUD_COMMAND_MODULES.items())
