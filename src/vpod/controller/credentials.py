"""Access keys: generated once, shown once, stored only as a slow salted hash.

The hash is scrypt (N=2**14, r=8, p=1: about 50 ms and 16 MiB per check),
so a stolen ``users`` table costs an attacker that much per guess; keys are
32 random bytes, so guessing is hopeless anyway. :func:`verify_unknown`
spends the same time when the user id is unknown, so the time an answer
takes does not tell which user ids exist.
"""

from __future__ import annotations

import base64
import binascii
import functools
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
    """Whether ``key`` hashes to ``stored``; a malformed ``stored`` matches nothing."""
    try:
        scheme, n, r, p, salt_text, digest_text = stored.split("$")
        if scheme != _SCHEME:
            return False
        salt = base64.urlsafe_b64decode(salt_text)
        expected = base64.urlsafe_b64decode(digest_text)
        digest = hashlib.scrypt(key.encode(), salt=salt, n=int(n), r=int(r), p=int(p), dklen=32)
    except (ValueError, binascii.Error):
        return False
    return hmac.compare_digest(digest, expected)


@functools.cache
def _stand_in_hash() -> str:
    return hash_key(secrets.token_urlsafe(32))


def verify_unknown(key: str) -> bool:
    """Check ``key`` against a stand-in hash (always False): as slow as a real check."""
    verify_key(key, _stand_in_hash())
    return False
