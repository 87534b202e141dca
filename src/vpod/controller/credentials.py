"""Access keys: generated once, shown once, stored only as a slow salted hash.

The hash is scrypt (N=2**14, r=8, p=1: about 50 ms and 16 MiB per check),
so a stolen ``users`` table costs an attacker that much per guess; keys are
32 random bytes, so guessing is hopeless anyway. :func:`verify_unknown`
spends the same time when the user id is unknown, so the time an answer
takes does not tell which user ids exist.

:class:`SecretChecks` runs those checks for a server: off the event loop,
once for concurrent checks of the same secret against the same hash (the 16
machines of an agent process register together, a client opens with 64 calls
at once), and not again for a secret that already matched a hash.
"""

from __future__ import annotations

import asyncio
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


class SecretChecks:
    """scrypt checks for a server: in a worker thread, one per (secret, stored hash) pair.

    Concurrent checks of one pair share a single check, and a pair that matched is
    remembered by a SHA-256 of the secret (never the secret), so a later call costs a
    comparison with the stored hash it reads. Callers read the stored hash at every call:
    a changed or removed one is checked afresh or refused, so nothing remembered here
    outlives a new key or a revocation.
    """

    def __init__(self, capacity: int = 4096) -> None:
        self._capacity = capacity
        self._matched: dict[str, str] = {}
        """SHA-256 of a secret -> the stored hash it matched (oldest first)."""
        self._running: dict[tuple[str, str], asyncio.Future[bool]] = {}

    async def matches(self, secret: str, stored: str) -> bool:
        """Whether ``secret`` hashes to ``stored``."""
        fingerprint = hashlib.sha256(secret.encode()).hexdigest()
        if self._matched.get(fingerprint) == stored:
            return True
        pair = (fingerprint, stored)
        running = self._running.get(pair)
        if running is None:
            running = asyncio.ensure_future(asyncio.to_thread(verify_key, secret, stored))
            self._running[pair] = running
            running.add_done_callback(lambda _: self._running.pop(pair, None))
        # Shielded: a caller that gives up does not cancel the check the others await.
        matched = await asyncio.shield(running)
        if matched:
            if len(self._matched) >= self._capacity and fingerprint not in self._matched:
                del self._matched[next(iter(self._matched))]
            self._matched[fingerprint] = stored
        return matched

    @staticmethod
    async def unknown(secret: str) -> None:
        """As long as a real check, for a secret whose owner does not exist."""
        await asyncio.to_thread(verify_unknown, secret)
