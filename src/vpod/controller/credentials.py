"""Access keys: generated once, shown once, stored only as a slow salted hash."""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

_N, _R, _P = 2**14, 8, 1
_SCHEME = "scrypt"


def new_access_key() -> str:
    """32 random bytes, URL-safe: what a user puts in ``api-access-key``."""
    return secrets.token_urlsafe(32)


def hash_key(key: str) -> str:
    """``scrypt$N$r$p$salt$hash``: slow on purpose, so a stolen table is hard to use."""
    salt = secrets.token_bytes(16)
    digest = hashlib.scrypt(key.encode(), salt=salt, n=_N, r=_R, p=_P, dklen=32)
    enc = base64.urlsafe_b64encode
    return f"{_SCHEME}${_N}${_R}${_P}${enc(salt).decode()}${enc(digest).decode()}"


def verify_key(key: str, stored: str) -> bool:
    try:
        scheme, n, r, p, salt_text, digest_text = stored.split("$")
    except ValueError:
        return False
    if scheme != _SCHEME:
        return False
    salt = base64.urlsafe_b64decode(salt_text)
    expected = base64.urlsafe_b64decode(digest_text)
    digest = hashlib.scrypt(key.encode(), salt=salt, n=int(n), r=int(r), p=int(p), dklen=32)
    return hmac.compare_digest(digest, expected)
