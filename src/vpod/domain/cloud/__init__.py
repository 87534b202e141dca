"""The cloud's resources as values: projects, clusters, servers, volumes, tasks, hosts and
their GPUs, keypairs, dataset storage, reservations and metering entries, with their
``StrEnum`` statuses and the typed parameters of each task's operation.

One value type per resource, pure like the rest of the domain: the store reads its rows
into these values and writes them back (``vpod.store``), and the cloud's model
(``vpod.cloud.model``) speaks them. A status is a ``StrEnum``, so it is also the very string
the store keeps and the API shows.
"""
