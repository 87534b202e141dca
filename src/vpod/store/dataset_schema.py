"""The tables of dataset storage (migration ``0006_dataset_storage``).

- ``cloud_dataset_storages``: a project's registration of an S3-compatible
  bucket on an endpoint the operator configured. The access key id and the
  secret key are stored only sealed (``*_sealed``: Fernet tokens made by the
  cloud with a key kept beside the database, never in it); the masked access
  key (``AKIA…WXYZ``) is what listings show. A name is unique within its
  project.
- ``cloud_dataset_attachments``: which storage a cluster is given, and where
  it is mounted (``mount_path``, or null for credentials only). One storage
  per cluster (primary key ``cluster_id``); the attachment goes with its
  cluster (``ON DELETE CASCADE``), and a storage that is attached cannot be
  deleted (foreign key without cascade).
"""

from __future__ import annotations

from sqlalchemy import Column, Text

from .columns import (
    LABEL,
    TEXT_SHORT,
    UtcDateTime,
    cluster_grant,
    project_resource,
    reference,
    required,
)

cloud_dataset_storages = project_resource(
    "cloud_dataset_storages",
    Column("endpoint", LABEL, nullable=False, comment="an endpoint name of cloud.toml"),
    *required(bucket=LABEL),
    Column("access_key_masked", LABEL, nullable=False, comment="e.g. AKIA…WXYZ"),
    Column("access_key_sealed", Text, nullable=False, comment="Fernet token"),
    Column("secret_key_sealed", Text, nullable=False, comment="Fernet token"),
    *required(created_at=UtcDateTime),
)

cloud_dataset_attachments = cluster_grant(
    "cloud_dataset_attachments",
    reference("storage_id", "cloud_dataset_storages.id", index=True),
    Column("mount_path", TEXT_SHORT, nullable=True, comment="absolute path on the servers"),
)
