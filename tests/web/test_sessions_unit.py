"""Sessions without a server: expiry, the cookie's flags, credentials to headers."""

from __future__ import annotations

from vpod.web.sessions import COOKIE, Credentials, SessionStore, cookie_of, cookie_value


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_session_expires_after_its_lifetime() -> None:
    clock = FakeClock()
    store = SessionStore(ttl_s=60, clock=clock)
    session = store.create(Credentials(kind="cloud", token="vpod_a.b"), {"project_id": "p"})
    assert store.get(session.id) is session
    clock.now += 59
    assert store.get(session.id) is session
    clock.now += 2
    assert store.get(session.id) is None
    assert len(store) == 0


def test_sessions_are_unguessable_and_ended_on_logout() -> None:
    store = SessionStore()
    one = store.create(Credentials(kind="vipu", user_id="a", access_key="k"), {})
    two = store.create(Credentials(kind="vipu", user_id="a", access_key="k"), {})
    assert one.id != two.id
    assert one.csrf != two.csrf
    assert len(one.id) >= 40
    store.end(one.id)
    assert store.get(one.id) is None
    assert store.get(two.id) is two
    assert store.get("") is None
    assert store.get("forged") is None


def test_the_cookie_is_http_only_strict_and_secure_under_tls() -> None:
    session = SessionStore().create(Credentials(kind="vipu"), {})
    plain = cookie_value(session, secure=False)
    tls = cookie_value(session, secure=True)
    for cookie in (plain, tls):
        assert cookie.startswith(f"{COOKIE}={session.id};")
        assert "HttpOnly" in cookie
        assert "SameSite=Strict" in cookie
    assert "Secure" not in plain
    assert tls.endswith("Secure")
    cleared = cookie_value(None, secure=True)
    assert "Max-Age=0" in cleared
    assert cleared.startswith(f"{COOKIE}=;")


def test_the_cookie_header_is_read_among_others() -> None:
    assert cookie_of(f"a=1; {COOKIE}=abc; b=2") == "abc"
    assert cookie_of("a=1") is None
    assert cookie_of(f"{COOKIE}=") is None


def test_credentials_become_the_headers_each_api_reads() -> None:
    assert Credentials(kind="cloud", token="vpod_x.y").headers() == [
        (b"authorization", b"Bearer vpod_x.y")
    ]
    assert Credentials(kind="vipu", user_id="ann", access_key="k").headers() == [
        (b"x-vipu-user-id", b"ann"),
        (b"x-vipu-access-key", b"k"),
    ]
    assert Credentials(kind="vipu").headers() == []  # open mode


def test_what_the_page_learns_holds_no_credentials() -> None:
    session = SessionStore().create(
        Credentials(kind="vipu", user_id="ann", access_key="secret-key"), {"user_id": "ann"}
    )
    public = session.public()
    assert "secret-key" not in repr(public)
    assert set(public) == {"kind", "identity", "csrf"}
