"""Credentials in HTTP headers, against a controller running with --secure."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from vpod.controller import errors
from vpod.controller.caller import SYSTEM
from vpod.controller.transports.rest_auth import parse_credentials

from .live import LivePod

API = "/api/v1"


# -- parsing, alone -------------------------------------------------------------------------


def test_headers_give_user_and_key() -> None:
    assert parse_credentials("alice", "k3y", None) == ("alice", "k3y")


def test_bearer_gives_user_and_key_split_at_the_first_colon() -> None:
    assert parse_credentials(None, None, "alice:k3y") == ("alice", "k3y")
    assert parse_credentials(None, None, "alice:k:3") == ("alice", "k:3")


def test_no_credentials_are_empty_strings() -> None:
    """Open mode needs none: the authenticator decides what empty means."""
    assert parse_credentials(None, None, None) == ("", "")


@pytest.mark.parametrize("bearer", ["alice", ":key", ""])
def test_bearer_without_user_colon_key_is_refused(bearer: str) -> None:
    with pytest.raises(errors.Unauthenticated, match="Bearer USER:KEY"):
        parse_credentials(None, None, bearer)


@pytest.mark.parametrize("who", ["two words", "x" * 64, "-dash-first"])
def test_a_user_id_that_is_not_an_id_is_refused(who: str) -> None:
    """Even in open mode the id names the caller in the audit log, so it must follow the rule."""
    with pytest.raises(errors.Unauthenticated, match="is not a user id"):
        parse_credentials(who, None, None)
    with pytest.raises(errors.Unauthenticated, match="is not a user id"):
        parse_credentials(None, None, f"{who}:key")


def test_headers_and_bearer_must_agree() -> None:
    """Both forms may be sent, but not naming two users or two keys."""
    assert parse_credentials("alice", "k", "alice:k") == ("alice", "k")
    with pytest.raises(errors.Unauthenticated, match="different users"):
        parse_credentials("bob", "", "alice:k")
    with pytest.raises(errors.Unauthenticated, match="different access keys"):
        parse_credentials("alice", "other", "alice:k")


# -- against a secure controller --------------------------------------------------------------


@pytest.fixture(scope="module")
def user_key(secure_pod: LivePod) -> str:
    """Access key of ``ann``, a plain user granted alloc-a only."""
    with secure_pod.client(
        **{"X-Vipu-User-Id": "root", "X-Vipu-Access-Key": secure_pod.admin_key}
    ) as admin:
        reply = admin.post(f"{API}/admin/users", json={"id": "ann", "allocation_ids": ["alloc-a"]})
    assert reply.status_code == 201, reply.text
    key: str = reply.json()["access_key"]
    return key


@pytest.fixture
def ann(secure_pod: LivePod, user_key: str) -> Iterator[httpx.Client]:
    with secure_pod.client(Authorization=f"Bearer ann:{user_key}") as client:
        yield client


def test_no_credentials_is_401_with_a_challenge(secure_pod: LivePod) -> None:
    """Without credentials a secure controller answers 401 UNAUTHENTICATED, saying what to send."""
    with secure_pod.client() as anonymous:
        reply = anonymous.get(f"{API}/partitions")
    assert reply.status_code == 401
    assert reply.json()["error"]["code"] == "UNAUTHENTICATED"
    assert reply.headers["www-authenticate"].startswith("Bearer")


def test_a_wrong_key_is_401(secure_pod: LivePod) -> None:
    with secure_pod.client(**{"X-Vipu-User-Id": "root", "X-Vipu-Access-Key": "nope"}) as c:
        reply = c.get(f"{API}/allocations")
    assert reply.status_code == 401
    assert "wrong access key" in reply.json()["error"]["message"]


def test_a_malformed_bearer_is_401(secure_pod: LivePod) -> None:
    with secure_pod.client(Authorization="Bearer root") as c:
        assert c.get(f"{API}/allocations").status_code == 401


def test_a_user_sees_only_granted_allocations(ann: httpx.Client) -> None:
    """ann (alloc-a) lists alloc-a only; alloc-b is NOT_FOUND to her, even to look at."""
    listed = ann.get(f"{API}/allocations").json()["allocations"]
    assert [a["id"] for a in listed] == ["alloc-a"]
    assert listed[0]["user_ids"] == []  # other users' names are for admins
    assert ann.get(f"{API}/partitions", params={"allocation": "alloc-b"}).status_code == 404


def test_a_user_creates_in_her_allocation_only(ann: httpx.Client) -> None:
    """ann may create partitions in alloc-a; alloc-b does not exist as far as she can tell."""
    created = ann.post(f"{API}/partitions", json={"id": "ann1", "size": 1})
    assert created.status_code == 201, created.text
    assert created.json()["allocation_id"] == "alloc-a"
    assert ann.delete(f"{API}/partitions/ann1").status_code == 204
    reply = ann.post(
        f"{API}/partitions", json={"id": "ann2", "size": 1, "allocation_id": "alloc-b"}
    )
    assert reply.status_code == 404


def test_a_plain_user_on_the_admin_api_is_403(ann: httpx.Client) -> None:
    for reply in (
        ann.get(f"{API}/admin/agents"),
        ann.get(f"{API}/admin/users"),
        ann.post(f"{API}/admin/users", json={"id": "eve"}),
    ):
        assert reply.status_code == 403
        assert reply.json()["error"]["code"] == "PERMISSION_DENIED"


def test_the_admin_uses_the_admin_api_with_either_header_form(secure_pod: LivePod) -> None:
    """root reaches /admin with X-Vipu-* headers and with a Bearer token alike."""
    key = secure_pod.admin_key
    with secure_pod.client(**{"X-Vipu-User-Id": "root", "X-Vipu-Access-Key": key}) as by_headers:
        assert by_headers.get(f"{API}/admin/clusters").status_code == 200
    with secure_pod.client(Authorization=f"Bearer root:{key}") as by_bearer:
        assert by_bearer.get(f"{API}/admin/clusters").status_code == 200


def test_health_needs_no_credentials(secure_pod: LivePod) -> None:
    """Probes carry no keys: /healthz, /readyz and /openapi.json are open."""
    with secure_pod.client() as anonymous:
        assert anonymous.get("/healthz").status_code == 200
        assert anonymous.get("/readyz").status_code == 200
        assert anonymous.get("/openapi.json").status_code == 200


def test_metrics_answer_operators_only(secure_pod: LivePod) -> None:
    """/metrics names every tenant's partitions: under --secure it answers the scrape token
    (Bearer) or an administrator, and nobody else (401 without credentials or with another
    token, 403 for a user who is not an admin), with a sentence saying what to send."""
    with secure_pod.client() as anonymous:
        refused = anonymous.get("/metrics")
        assert refused.status_code == 401
        assert "metrics.token" in refused.text
        assert "alloc-a" not in refused.text
    with secure_pod.client(Authorization="Bearer not-the-scrape-token") as wrong:
        assert wrong.get("/metrics").status_code == 401
    with secure_pod.client(Authorization=f"Bearer {secure_pod.metrics_token}") as scraper:
        page = scraper.get("/metrics")
        assert page.status_code == 200
        assert 'vpod_ipus_allocated{cluster="pod"}' in page.text
    key = secure_pod.admin_key
    with secure_pod.client(Authorization=f"Bearer root:{key}") as admin:
        assert admin.get("/metrics").status_code == 200
    with secure_pod.client(**{"X-Vipu-User-Id": "root", "X-Vipu-Access-Key": key}) as admin:
        assert admin.get("/metrics").status_code == 200
    user_key = secure_pod.run(
        secure_pod.controller.inventory.create_user(SYSTEM, "scraper", ["alloc-a"])
    ).access_key
    with secure_pod.client(Authorization=f"Bearer scraper:{user_key}") as plain_user:
        assert plain_user.get("/metrics").status_code == 403


def test_metrics_stay_open_in_open_mode(pod: LivePod) -> None:
    """Without --secure every route is open, /metrics too (docs/security.md)."""
    with pod.client() as anonymous:
        assert anonymous.get("/metrics").status_code == 200
