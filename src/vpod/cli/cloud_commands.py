"""The ``vpod`` cloud commands, for ``vpod_main`` to register (see docs/cloud.md, "CLI")."""

from __future__ import annotations

import click

from .cloud_cluster import cluster
from .cloud_more import flavors, invoice, project, task, volume
from .cloud_reservation import reservation
from .cloud_storage import storage

CLOUD_COMMANDS: tuple[click.Command, ...] = (
    flavors,
    cluster,
    volume,
    task,
    invoice,
    project,
    reservation,
    storage,
)
