"""``vipu-server --init``: prepare a store, and remember whether it is a secure one.

``--init`` migrates the store (SQLite in the data directory, or the
``--database-url``). ``--init --secure`` also creates the default
administrator (``admin`` unless ``--default-user-id`` names another) when it
does not exist, and returns its access key once; the store keeps only the
scrypt hash.

The mode is remembered in the store itself, as an audit event (action
``secure_mode``, outcome ``on`` or ``off``; the newest wins), so every
replica on one database agrees and the log shows who changed it and when.
A store that was initialised or served with ``--secure`` is refused by
``vipu-server`` without ``--secure``: an operator who forgets the flag would
otherwise open every tenant's partitions to everyone. ``--insecure`` starts
it open anyway, once (and says so in the log); ``--init --insecure`` turns
the mode off for good.
"""

from __future__ import annotations

import getpass
import socket
from dataclasses import dataclass

from vpod.domain.entities import User
from vpod.domain.errors import DomainError
from vpod.store.store import Store

from .clock import Clock, SystemClock
from .credentials import hash_key, new_access_key
from .settings import Settings

DEFAULT_ADMIN_ID = "admin"
MODE_ACTION = "secure_mode"
MODE_TARGET = "controller"
ACTOR = "vipu-server"


class ModeRefused(Exception):
    """The store's remembered mode and the command line disagree; the message says what to do."""


@dataclass(frozen=True)
class InitResult:
    store_url: str
    secure: bool
    admin_id: str = ""
    access_key: str = ""
    """The administrator's new access key; empty when the administrator existed already."""


def operator_source() -> str:
    """Where a command-line change comes from: ``cli:USER@HOST``."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = "unknown"
    return f"cli:{user}@{socket.gethostname()}"


def open_store(settings: Settings) -> Store:
    """The store of ``settings``, migrated to the current schema."""
    if not settings.database_url:
        settings.data_dir.mkdir(parents=True, exist_ok=True)
    store = Store.open(settings.store_url())
    try:
        store.migrate()
    except BaseException:
        store.close()
        raise
    return store


def remembered_secure(store: Store) -> bool:
    """Whether the store was last initialised or served with ``--secure``."""
    newest = store.list_events(action=MODE_ACTION, target=MODE_TARGET, limit=1)
    return bool(newest) and newest[0].outcome == "on"


def _remember(store: Store, clock: Clock, secure: bool, detail: str) -> None:
    store.append_event(
        time=clock.now(),
        actor=ACTOR,
        action=MODE_ACTION,
        target=MODE_TARGET,
        outcome="on" if secure else "off",
        source=operator_source(),
        detail=detail,
    )


def initialise(
    settings: Settings,
    *,
    secure: bool,
    admin_id: str = DEFAULT_ADMIN_ID,
    allow_insecure: bool = False,
    new_admin_key: bool = False,
    clock: Clock | None = None,
) -> InitResult:
    """Migrate the store; with ``secure``, make sure the default administrator exists."""
    clock = clock or SystemClock()
    try:
        User(id=admin_id, admin=True)
    except DomainError as exc:
        raise ModeRefused(f"--default-user-id: {exc}") from None
    store = open_store(settings)
    try:
        was_secure = remembered_secure(store)
        if not secure:
            if was_secure and not allow_insecure:
                raise ModeRefused(
                    "this store was initialised with --secure: run `vipu-server --init --secure`,"
                    " or `vipu-server --init --insecure` to turn authentication off for good"
                )
            if was_secure:
                _remember(store, clock, False, "--init --insecure turned authentication off")
            return InitResult(store_url=store.url, secure=False)
        if not was_secure:
            _remember(store, clock, True, "--init --secure turned authentication on")
        key = _ensure_admin(store, clock, admin_id, new_key=new_admin_key)
        return InitResult(store_url=store.url, secure=True, admin_id=admin_id, access_key=key)
    finally:
        store.close()


def _ensure_admin(store: Store, clock: Clock, admin_id: str, *, new_key: bool) -> str:
    """Create the administrator (or give it a new key); its key, or "" when nothing changed."""
    found = store.find_user_with_hash(admin_id)
    if found is not None and not found[0].admin:
        raise ModeRefused(
            f"user {admin_id} exists and is not an administrator: pick another"
            " --default-user-id, or remove that user first"
        )
    if found is not None and not new_key:
        return ""
    key = new_access_key()
    if found is None:
        store.add_user(User(id=admin_id, admin=True), hash_key(key), created_at=clock.now())
        action, detail = "create_user", "administrator created by vipu-server --init --secure"
    else:
        store.set_user_key_hash(admin_id, hash_key(key))
        action, detail = "new_access_key", "new key from vipu-server --init --new-admin-key"
    store.append_event(
        time=clock.now(),
        actor=ACTOR,
        action=action,
        target=admin_id,
        outcome="ok",
        source=operator_source(),
        detail=detail,
    )
    return key


def check_serving_mode(
    settings: Settings, *, allow_insecure: bool, clock: Clock | None = None
) -> str:
    """Before serving: refuse an open start of a secure store; remember a secure start.

    Returns a warning to log (empty when there is none). ModeRefused when
    the store is a secure one, ``settings.secure`` is off and
    ``allow_insecure`` was not given.
    """
    clock = clock or SystemClock()
    store = open_store(settings)
    try:
        was_secure = remembered_secure(store)
        if settings.secure:
            if not was_secure:
                _remember(store, clock, True, "served with --secure")
            if store.find_user_with_hash(DEFAULT_ADMIN_ID) is None and not any(
                u.admin for u in store.list_users()
            ):
                return (
                    "no administrator exists in this store: stop the server and run"
                    " `vipu-server --init --secure` once to create one"
                )
            return ""
        if not was_secure:
            return ""
        if not allow_insecure:
            raise ModeRefused(
                "this store was initialised with --secure: start with --secure (or with"
                " --insecure to serve it without authentication anyway)"
            )
        store.append_event(
            time=clock.now(),
            actor=ACTOR,
            action="serve_insecure",
            target=MODE_TARGET,
            outcome="ok",
            source=operator_source(),
            detail="a secure store served without authentication (--insecure)",
        )
        return (
            "serving a store initialised with --secure WITHOUT authentication (--insecure):"
            " every caller may use every allocation and the admin API"
        )
    finally:
        store.close()
