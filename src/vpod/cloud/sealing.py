"""Sealing dataset storage credentials at rest: Fernet (AES-128-CBC + HMAC-SHA256) with keys
kept in a file beside the database, never in it.

``DATA_DIR/dataset-storage.key`` holds one Fernet key per line, made on first
use (mode 0600, created exclusively so two starts never race). The first key
seals; every key unseals, so rotating is: put a new key on the first line,
restart the controller (:meth:`Sealer.reseal` re-seals every stored value
under the first key when the cloud starts), then remove the old lines. Every
replica of a controller sharing one PostgreSQL needs the same file. What it
protects against: a copy of the database alone (a dump, a backup, a
PostgreSQL host) reveals no key; whoever reads both the database and this
file can unseal them.
"""

from __future__ import annotations

import os
from pathlib import Path

from cryptography.fernet import Fernet, InvalidToken, MultiFernet

from .model import errors


class Sealer:
    def __init__(self, key_path: Path) -> None:
        self._path = key_path
        self._fernet: MultiFernet | None = None

    @property
    def path(self) -> Path:
        return self._path

    def _keys(self, *, make: bool = False) -> MultiFernet:
        """The keys of the file; ``make``: create the file first if it is missing (only
        sealing does: unsealing with a new key could never succeed, and would hide the loss)."""
        if self._fernet is None:
            self._fernet = MultiFernet([Fernet(k) for k in self._read(make=make)])
        return self._fernet

    def _read(self, *, make: bool) -> list[bytes]:
        if make:
            self._make()
        elif not self._path.exists():
            raise errors.FailedPrecondition(
                f"stored dataset credentials cannot be unsealed: {self._path} is missing;"
                " restore it, or register the storage again"
            )
        lines = [line.strip() for line in self._path.read_bytes().splitlines()]
        keys = [line for line in lines if line and not line.startswith(b"#")]
        if not keys:
            raise errors.FailedPrecondition(
                f"{self._path} holds no key: put a Fernet key on its first line"
            )
        return keys

    def _make(self) -> None:
        try:
            fd = os.open(self._path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        except FileExistsError:
            return
        with os.fdopen(fd, "wb") as out:
            out.write(Fernet.generate_key() + b"\n")

    def seal(self, text: str) -> str:
        return self._keys(make=True).encrypt(text.encode()).decode("ascii")

    def unseal(self, token: str) -> str:
        try:
            return self._keys().decrypt(token.encode("ascii")).decode()
        except (InvalidToken, ValueError):
            raise errors.FailedPrecondition(
                f"stored dataset credentials cannot be unsealed with the keys in {self._path}:"
                " was the key file replaced? Restore it, or register the storage again"
            ) from None

    def reseal(self, token: str) -> str | None:
        """``token`` sealed under the first key, or None when it already is."""
        fernet = self._keys()
        try:
            primary = Fernet(self._read(make=False)[0])
            primary.decrypt(token.encode("ascii"))
            return None
        except InvalidToken:
            pass
        try:
            return fernet.rotate(token.encode("ascii")).decode("ascii")
        except InvalidToken:
            return None  # no key opens it: unseal will say so when it is used
