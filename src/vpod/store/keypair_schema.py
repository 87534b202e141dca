"""The tables of SSH keypairs (migration ``0007_ssh_keypairs``).

- ``cloud_keypairs``: a project's OpenSSH public keys (Nova's keypairs); the
  private half of a key the cloud generated is handed out once and never
  stored. ``fingerprint`` is OpenSSH's (``SHA256:`` and the unpadded base64
  of the key blob's digest). A name is unique within its project.
- ``cloud_cluster_keypairs``: which keypairs may log in to a cluster's
  servers. The rows go with their cluster (``ON DELETE CASCADE``); a keypair
  a cluster holds cannot be deleted (foreign key without cascade).
"""

from __future__ import annotations

from sqlalchemy import Column, Text

from .columns import LABEL, UtcDateTime, cluster_grant, project_resource, reference, required

cloud_keypairs = project_resource(
    "cloud_keypairs",
    Column("key_type", LABEL, nullable=False, comment="ssh-ed25519, ssh-rsa, ecdsa-sha2-..."),
    Column("public_key", Text, nullable=False, comment="one authorized_keys line"),
    Column("fingerprint", LABEL, nullable=False, comment="SHA256:... as ssh-keygen -l shows"),
    *required(created_at=UtcDateTime),
)

cloud_cluster_keypairs = cluster_grant(
    "cloud_cluster_keypairs",
    reference("keypair_id", "cloud_keypairs.id", primary_key=True, index=True),
)
