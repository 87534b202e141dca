"""vipu-server --init: the default administrator, and the store remembering its mode."""

from __future__ import annotations

from pathlib import Path

import pytest

from vpod.controller.clock import FakeClock
from vpod.controller.credentials import verify_key
from vpod.controller.initialise import (
    ModeRefused,
    check_serving_mode,
    initialise,
    open_store,
    remembered_secure,
)
from vpod.controller.settings import Settings
from vpod.domain.entities import User


def settings(tmp_path: Path, *, secure: bool) -> Settings:
    return Settings(data_dir=tmp_path, secure=secure)


def key_hash(tmp_path: Path, user_id: str) -> str:
    store = open_store(settings(tmp_path, secure=False))
    try:
        return store.get_user_key_hash(user_id)
    finally:
        store.close()


def test_secure_init_creates_the_administrator_once(tmp_path: Path) -> None:
    first = initialise(settings(tmp_path, secure=True), secure=True, clock=FakeClock())
    assert (first.admin_id, first.secure) == ("admin", True)
    assert verify_key(first.access_key, key_hash(tmp_path, "admin"))
    again = initialise(settings(tmp_path, secure=True), secure=True, clock=FakeClock())
    assert again.access_key == ""
    assert verify_key(first.access_key, key_hash(tmp_path, "admin"))


def test_a_new_admin_key_replaces_the_old_one(tmp_path: Path) -> None:
    old = initialise(settings(tmp_path, secure=True), secure=True).access_key
    new = initialise(settings(tmp_path, secure=True), secure=True, new_admin_key=True).access_key
    assert new
    assert new != old
    stored = key_hash(tmp_path, "admin")
    assert verify_key(new, stored)
    assert not verify_key(old, stored)


def test_the_default_user_id_names_the_administrator(tmp_path: Path) -> None:
    result = initialise(settings(tmp_path, secure=True), secure=True, admin_id="root")
    assert result.admin_id == "root"
    store = open_store(settings(tmp_path, secure=True))
    try:
        assert store.get_user("root") == User(id="root", admin=True)
    finally:
        store.close()
    with pytest.raises(ModeRefused, match="--default-user-id"):
        initialise(settings(tmp_path, secure=True), secure=True, admin_id="not an id")


def test_a_plain_user_with_the_administrators_id_is_not_promoted(tmp_path: Path) -> None:
    store = open_store(settings(tmp_path, secure=False))
    store.add_user(User(id="admin"), "scrypt$x")
    store.close()
    with pytest.raises(ModeRefused, match="is not an administrator"):
        initialise(settings(tmp_path, secure=True), secure=True)


def test_an_open_init_leaves_the_store_open(tmp_path: Path) -> None:
    result = initialise(settings(tmp_path, secure=False), secure=False)
    assert (result.secure, result.access_key) == (False, "")
    assert check_serving_mode(settings(tmp_path, secure=False), allow_insecure=False) == ""


def test_a_secure_store_refuses_open_init_and_open_serving(tmp_path: Path) -> None:
    initialise(settings(tmp_path, secure=True), secure=True)
    with pytest.raises(ModeRefused, match="--init --insecure"):
        initialise(settings(tmp_path, secure=False), secure=False)
    with pytest.raises(ModeRefused, match="start with --secure"):
        check_serving_mode(settings(tmp_path, secure=False), allow_insecure=False)


def test_insecure_serving_of_a_secure_store_is_allowed_once_and_logged(tmp_path: Path) -> None:
    initialise(settings(tmp_path, secure=True), secure=True)
    warning = check_serving_mode(settings(tmp_path, secure=False), allow_insecure=True)
    assert "WITHOUT authentication" in warning
    store = open_store(settings(tmp_path, secure=False))
    try:
        assert remembered_secure(store), "--insecure does not change the store's mode"
        (event,) = store.list_events(action="serve_insecure")
        assert event.source.startswith("cli:")
    finally:
        store.close()


def test_init_insecure_turns_authentication_off_for_good(tmp_path: Path) -> None:
    initialise(settings(tmp_path, secure=True), secure=True)
    initialise(settings(tmp_path, secure=False), secure=False, allow_insecure=True)
    assert check_serving_mode(settings(tmp_path, secure=False), allow_insecure=False) == ""


def test_serving_secure_marks_the_store_and_warns_without_an_administrator(
    tmp_path: Path,
) -> None:
    warning = check_serving_mode(settings(tmp_path, secure=True), allow_insecure=False)
    assert "vipu-server --init --secure" in warning
    with pytest.raises(ModeRefused):
        check_serving_mode(settings(tmp_path, secure=False), allow_insecure=False)
    initialise(settings(tmp_path, secure=True), secure=True)
    assert check_serving_mode(settings(tmp_path, secure=True), allow_insecure=False) == ""
