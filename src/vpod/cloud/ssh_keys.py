"""OpenSSH public keys, read and named as OpenSSH does: pure (no I/O).

:func:`parse_public_key` takes one ``authorized_keys``-style line (``TYPE
BASE64 [COMMENT]``), checks that the base64 blob decodes and names the same
type inside, and returns the key with OpenSSH's fingerprint
(``SHA256:`` + unpadded base64 of the blob's SHA-256, what ``ssh-keygen
-l`` and the host key prompt print). Options before the type
(``command="..."``) are refused: the cloud writes the lines, not the tenant.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import struct
from dataclasses import dataclass

from .model import errors

KEY_TYPES = (
    "ssh-ed25519",
    "ssh-rsa",
    "ecdsa-sha2-nistp256",
    "ecdsa-sha2-nistp384",
    "ecdsa-sha2-nistp521",
    "sk-ssh-ed25519@openssh.com",
    "sk-ecdsa-sha2-nistp256@openssh.com",
)
"""The key types a keypair may hold (DSA is refused, as OpenSSH does since 7.0)."""
MAX_LINE = 16_384
MAX_COMMENT = 255


@dataclass(frozen=True)
class PublicKey:
    key_type: str
    blob: str
    """The base64 of the key, as in the line."""
    comment: str = ""

    @property
    def fingerprint(self) -> str:
        return fingerprint_of(base64.b64decode(self.blob))

    def line(self, comment: str | None = None) -> str:
        """The ``authorized_keys`` line (``comment`` instead of the key's own, if given)."""
        note = self.comment if comment is None else comment
        return f"{self.key_type} {self.blob}" + (f" {note}" if note else "")


@dataclass(frozen=True)
class HostKey:
    """A server's public host key, as ``known_hosts`` holds it after the host name."""

    key: str
    """``TYPE BASE64``."""
    fingerprint: str


def host_key_of(line: str) -> HostKey | None:
    """The host key of a ``.pub`` line (``TYPE BASE64 [COMMENT]``); None if unreadable."""
    parts = line.split()
    if len(parts) < 2:
        return None
    try:
        blob = base64.b64decode(parts[1], validate=True)
    except (binascii.Error, ValueError):
        return None
    return HostKey(f"{parts[0]} {parts[1]}", fingerprint_of(blob))


def fingerprint_of(blob: bytes) -> str:
    digest = hashlib.sha256(blob).digest()
    return "SHA256:" + base64.b64encode(digest).decode().rstrip("=")


def parse_public_key(text: str) -> PublicKey:
    """The key of ``text`` (one line); InvalidArgument with what to fix otherwise."""
    line = text.strip()
    if not line:
        raise errors.InvalidArgument(
            "the public key is empty: give one line such as `ssh-ed25519 AAAA... you@host`"
            " (the .pub file of ssh-keygen)"
        )
    if line.startswith("-----BEGIN"):
        raise errors.InvalidArgument(
            "that is a private key (or a PEM file): give the public key, the .pub file"
            " (`ssh-keygen -y -f KEY` prints it)"
        )
    if len(line) > MAX_LINE or "\n" in line or "\r" in line:
        raise errors.InvalidArgument(
            f"the public key is one line of at most {MAX_LINE} characters: give the .pub file"
            " of one key"
        )
    parts = line.split(None, 2)
    key_type = parts[0]
    if key_type not in KEY_TYPES:
        raise errors.InvalidArgument(
            f"key type {key_type[:40]!r} is not accepted: use one of {', '.join(KEY_TYPES)}"
            " (an OpenSSH public key line; `ssh-keygen -t ed25519` makes one)"
        )
    if len(parts) < 2:
        raise errors.InvalidArgument("the public key line lacks its base64 key after the type")
    try:
        blob = base64.b64decode(parts[1], validate=True)
    except (binascii.Error, ValueError):
        raise errors.InvalidArgument("the public key's base64 does not decode") from None
    if _inner_type(blob) != key_type:
        raise errors.InvalidArgument(
            f"the public key's data is not a {key_type} key: give the line as ssh-keygen wrote it"
        )
    comment = parts[2].strip() if len(parts) > 2 else ""
    if len(comment) > MAX_COMMENT or not comment.isprintable():
        raise errors.InvalidArgument(
            f"the key's comment is at most {MAX_COMMENT} printable characters"
        )
    return PublicKey(key_type, parts[1], comment)


def _inner_type(blob: bytes) -> str | None:
    """The type string the key blob starts with (an SSH ``string``)."""
    if len(blob) < 4:
        return None
    (length,) = struct.unpack(">I", blob[:4])
    if length > 64 or len(blob) < 4 + length:
        return None
    try:
        return blob[4 : 4 + length].decode("ascii")
    except UnicodeDecodeError:
        return None


__all__ = [
    "KEY_TYPES",
    "HostKey",
    "PublicKey",
    "fingerprint_of",
    "host_key_of",
    "parse_public_key",
]
