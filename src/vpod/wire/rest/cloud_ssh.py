"""The cloud API's SSH shapes: keypairs, a cluster's keypairs, its servers' sshd, a console."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

from .cloud_clusters import SshHostKeyOut
from .fields import StrictBody


class KeypairIn(StrictBody):
    name: str = Field(description="3 to 63 characters: letters, digits, `.`, `_`, `-`.")
    public_key: str | None = Field(
        None,
        description="An OpenSSH public key line (`ssh-ed25519 AAAA... you@host`) to import;"
        " left out: the cloud makes an ed25519 key and answers its private half once.",
    )


class KeypairOut(BaseModel):
    id: str
    name: str
    type: str = Field(description="`ssh-ed25519`, `ssh-rsa`, `ecdsa-sha2-nistp256`, ...")
    fingerprint: str = Field(description="OpenSSH's: `SHA256:` and base64, as ssh-keygen -l.")
    public_key: str
    clusters: list[str] = Field(description="Your clusters it may log in to.")
    created_at: datetime


class KeypairCreatedOut(KeypairOut):
    private_key: str | None = Field(
        description="The private key (OpenSSH format) of a key the cloud made: shown this once,"
        " never stored; null for an imported key."
    )


class ServerSshOut(BaseModel):
    position: int
    name: str = Field(description="The server's name: its `Host` in `vpod cluster ssh-config`.")
    status: str
    user: str = Field(description="Who logs in (the server's own user).")
    host_keys: list[SshHostKeyOut]
    connect: str = Field(
        description="The tunnel to its sshd: a WebSocket under the API's URL (same bearer"
        " token) carrying the SSH connection's bytes; `vpod cluster ssh-proxy` speaks it."
    )
    direct_host: str | None = Field(
        None,
        description="Where its direct SSH port listens, where the operator gives servers one"
        " (`vpod cluster ssh-config --direct`); null otherwise.",
    )
    direct_port: int | None = Field(None, description="Its direct SSH port on `direct_host`.")


class ClusterSshOut(BaseModel):
    cluster: str
    keypairs: list[str] = Field(description="Names of the keypairs that may log in.")
    servers: list[ServerSshOut]


class ConsoleOut(BaseModel):
    type: str = Field("web-terminal", description="`web-terminal`: a shell in the browser.")
    url: str = Field(description="Open it in a browser logged in to the console.")
    server: str
