"""The cloud's resources: clusters, servers, volumes, tasks and keypairs.

One value type each, defined in :mod:`vpod.domain.cloud.resources` (the store reads its rows
into them too); the cloud's model names them here."""

from __future__ import annotations

from vpod.domain.cloud.resources import Cluster as Cluster
from vpod.domain.cloud.resources import Keypair as Keypair
from vpod.domain.cloud.resources import Server as Server
from vpod.domain.cloud.resources import Task as Task
from vpod.domain.cloud.resources import TaskFacts as TaskFacts
from vpod.domain.cloud.resources import Volume as Volume
