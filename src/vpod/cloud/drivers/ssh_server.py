"""A server's own OpenSSH daemon: its configuration, host keys and authorized keys.

There is no listening port. For every tunnel connection the controller
starts ``sshd -i`` (inetd mode: the connection is its standard input and
output) inside the server's sandbox, as the server's own uid, through the
same :meth:`.sandbox.Sandbox.command` the shells use; sshd then runs as an
unprivileged daemon that can log in only its own user (``tenant``).

Everything lives in the server's root under ``etc/ssh``, which the sandbox
shows read-only at ``/etc/ssh``, so it follows the root through suspension,
resume and reboot:

- ``sshd_config``: public keys only (no passwords, no PAM), forwarding on,
  ``internal-sftp``; written by the controller (root's, 0644);
- ``ssh_host_ed25519_key`` (+ ``.pub``): made once per server by the
  controller (the private key is the server uid's, 0600, as sshd running as
  that uid must read it); ``vpod cluster show`` lists the public halves so
  clients pin them instead of trusting on first use;
- ``authorized_keys``: the cluster's keypairs, rewritten by the controller
  whenever they change (the tenant's own ``~/.ssh/authorized_keys`` is read
  as well, as on any server).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from . import confined

SSHD = "/usr/sbin/sshd"
SSH_DIR = "etc/ssh"
CONFIG = f"{SSH_DIR}/sshd_config"
AUTHORIZED_KEYS = f"{SSH_DIR}/authorized_keys"
KNOWN_HOSTS = f"{SSH_DIR}/ssh_known_hosts"
HOST_KEY_TYPES = ("ed25519",)


def host_key_path(key_type: str) -> str:
    return f"{SSH_DIR}/ssh_host_{key_type}_key"


def render_config(user: str) -> str:
    keys = "".join(f"HostKey /{host_key_path(t)}\n" for t in HOST_KEY_TYPES)
    return (
        "# written by the vpod cloud: this server's sshd, started per connection (sshd -i)\n"
        f"{keys}"
        f"AuthorizedKeysFile /{AUTHORIZED_KEYS} .ssh/authorized_keys\n"
        f"AllowUsers {user}\n"
        "PubkeyAuthentication yes\n"
        "PasswordAuthentication no\n"
        "KbdInteractiveAuthentication no\n"
        "UsePAM no\n"
        "PermitRootLogin no\n"
        "StrictModes yes\n"
        "AllowTcpForwarding yes\n"
        "AllowStreamLocalForwarding yes\n"
        "GatewayPorts no\n"
        "PermitTTY yes\n"
        "X11Forwarding no\n"
        "PrintMotd no\n"
        "PidFile none\n"
        "AcceptEnv LANG LC_* COLORTERM\n"
        "ClientAliveInterval 30\n"
        "Subsystem sftp internal-sftp\n"
    )


def render_authorized_keys(lines: Sequence[str]) -> str:
    head = "# written by the vpod cloud: the cluster's keypairs (`vpod cluster keypair`)\n"
    return head + "".join(line.strip() + "\n" for line in lines)


def prepare(root: Path, uid: int | None, user: str) -> None:
    """Write the configuration, and host keys the server lacks (kept once made)."""
    confined.make_dirs(root, SSH_DIR)
    confined.write(root, CONFIG, render_config(user))
    for key_type in HOST_KEY_TYPES:
        path = host_key_path(key_type)
        if confined.read(root, path) is not None and confined.read(root, path + ".pub"):
            continue
        private, public = _new_host_key(key_type)
        confined.write(root, path, private, 0o600, owner=uid)
        confined.write(root, path + ".pub", public)
    if confined.read(root, AUTHORIZED_KEYS) is None:
        confined.write(root, AUTHORIZED_KEYS, render_authorized_keys(()))


def authorize(root: Path, lines: Sequence[str]) -> None:
    confined.make_dirs(root, SSH_DIR)
    confined.write(root, AUTHORIZED_KEYS, render_authorized_keys(lines))


def trust_peers(root: Path, known_hosts: Sequence[str]) -> None:
    """``/etc/ssh/ssh_known_hosts``: the host keys of the server's peers, which its ssh
    client reads, so ``ssh PEER`` inside the vPOD checks the key with nothing to accept."""
    head = "# written by the vpod cloud: the host keys of this cluster's servers\n"
    confined.make_dirs(root, SSH_DIR)
    confined.write(root, KNOWN_HOSTS, head + "".join(line.strip() + "\n" for line in known_hosts))


def host_keys(root: Path) -> tuple[str, ...]:
    """The public host keys (``TYPE BASE64`` lines), those the server has."""
    found = []
    for key_type in HOST_KEY_TYPES:
        text = confined.read(root, host_key_path(key_type) + ".pub")
        if text:
            found.append(" ".join(text.split()[:2]))
    return tuple(found)


def saved_host_keys(root: Path) -> dict[str, str]:
    """Relative path -> text of every host key file (to restore after a rebuild)."""
    saved = {}
    for key_type in HOST_KEY_TYPES:
        for path in (host_key_path(key_type), host_key_path(key_type) + ".pub"):
            text = confined.read(root, path)
            if text is not None:
                saved[path] = text
    return saved


def restore_host_keys(root: Path, saved: dict[str, str], uid: int | None) -> None:
    for path, text in saved.items():
        private = not path.endswith(".pub")
        confined.write(root, path, text, 0o600 if private else 0o644, uid if private else None)


def _new_host_key(key_type: str) -> tuple[str, str]:
    assert key_type == "ed25519"
    key = Ed25519PrivateKey.generate()
    private = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.OpenSSH,
        serialization.NoEncryption(),
    ).decode()
    public = key.public_key().public_bytes(
        serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
    )
    return private, public.decode() + "\n"


__all__ = ["SSHD", "authorize", "host_keys", "prepare", "render_config", "trust_peers"]
