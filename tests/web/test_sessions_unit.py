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


def test_one_principal_logging_in_again_and_again_evicts_only_its_own_sessions() -> None:
    """~10,000 logins of one tenant: everyone else stays logged in; the tenant keeps its
    newest sessions, up to the limit per principal."""
    clock = FakeClock()
    store = SessionStore(per_principal=8, clock=clock)
    operator = store.create(Credentials(kind="vipu", user_id="root", access_key="k"), {})
    other = store.create(Credentials(kind="cloud", token="vpod_b.c"), {"project_id": "other"})
    mine = []
    for _ in range(10_000):
        clock.now += 0.001
        mine.append(store.create(Credentials(kind="cloud", token="vpod_a.b"), {"project_id": "p"}))
    assert store.get(operator.id) is operator
    assert store.get(other.id) is other
    assert store.of_principal("cloud:p") == 8
    assert [store.get(s.id) for s in mine[-8:]] == mine[-8:]
    assert all(store.get(s.id) is None for s in mine[:-8])
    assert len(store) == 10


def test_the_principal_is_the_project_or_the_user_whatever_the_token() -> None:
    store = SessionStore(per_principal=2)
    first = store.create(Credentials(kind="cloud", token="vpod_a.1"), {"project_id": "p"})
    store.create(Credentials(kind="cloud", token="vpod_b.2"), {"project_id": "p"})
    store.create(Credentials(kind="cloud", token="vpod_c.3"), {"project_id": "p"})
    assert store.get(first.id) is None  # another token of the same project: the same principal
    ann = store.create(Credentials(kind="vipu", user_id="ann", access_key="k"), {})
    bob = store.create(Credentials(kind="vipu", user_id="bob", access_key="k"), {})
    assert ann.principal != bob.principal
    assert store.of_principal("cloud:p") == 2
