"""Granting an existing user an allocation and taking it back, with its key unchanged.

Against the shared secure controller (``tenants``), with the real ``vipu-admin``
and ``vipu`` and the REST API; each test leaves carol with alloc-a only.
"""

from __future__ import annotations

import json

from .conftest import Tenants
from .procs import run_tool


def _vipu_allocations(tenants: Tenants, user_id: str) -> list[str]:
    """What ``vipu list allocations`` shows the user, through its unchanged config file."""
    listed = run_tool(
        "vipu", "--config", str(tenants.config_file(user_id)), "list", "allocations", "--json"
    )
    assert listed.returncode == 0, listed.stderr
    return sorted(a["allocation"]["id"] for a in json.loads(listed.stdout)["allocations"])


def test_vipu_admin_grants_and_revokes_and_the_user_sees_it_at_its_next_call(
    tenants: Tenants,
) -> None:
    assert _vipu_allocations(tenants, "carol") == ["alloc-a"]
    code, out, err = tenants.vipu_admin("grant", "allocation", "alloc-b", "--user", "carol")
    assert code == 0, err
    assert out.splitlines() == [
        "grant allocation (alloc-b) for user carol: success.",
        "user carol may use: alloc-a,alloc-b",
    ]
    assert _vipu_allocations(tenants, "carol") == ["alloc-a", "alloc-b"]
    code, out, err = tenants.vipu_admin("grant", "allocation", "alloc-b", "--user", "carol")
    assert code == 0, err  # granting twice is harmless
    code, out, err = tenants.vipu_admin(
        "revoke", "allocation", "alloc-b", "--user", "carol", "--json"
    )
    assert code == 0, err
    assert json.loads(out)["allocation_ids"] == ["alloc-a"]
    assert _vipu_allocations(tenants, "carol") == ["alloc-a"]
    code, _, err = tenants.vipu_admin("revoke", "allocation", "alloc-b", "--user", "carol")
    assert code == 0, err  # revoking what was not granted: nothing to do


def test_revoking_the_last_allocation_says_the_user_has_none(tenants: Tenants) -> None:
    code, out, err = tenants.vipu_admin("revoke", "allocation", "alloc-a", "--user", "carol")
    try:
        assert code == 0, err
        assert out.splitlines()[-1] == "user carol may use: no allocation"
        assert _vipu_allocations(tenants, "carol") == []
    finally:
        code, _, err = tenants.vipu_admin("grant", "allocation", "alloc-a", "--user", "carol")
    assert code == 0, err
    assert _vipu_allocations(tenants, "carol") == ["alloc-a"]


def test_grant_and_revoke_refuse_what_does_not_exist_in_one_line(tenants: Tenants) -> None:
    for verb in ("grant", "revoke"):
        code, _, err = tenants.vipu_admin(verb, "allocation", "alloc-b", "--user", "nobody")
        assert code == 1
        assert "user nobody does not exist" in err
        assert len(err.strip().splitlines()) == 1
        code, _, err = tenants.vipu_admin(verb, "allocation", "no-such", "--user", "carol")
        assert code == 1
        assert "allocation no-such does not exist" in err
        code, _, err = tenants.vipu_admin(verb, "allocation", "alloc-b")
        assert code == 2
        assert "--user" in err
    assert _vipu_allocations(tenants, "carol") == ["alloc-a"]


def test_rest_grants_and_revokes_for_admins_only(tenants: Tenants) -> None:
    path = "/api/v1/admin/users/carol/allocations/alloc-b"
    with tenants.http("admin") as admin, tenants.http("alice") as alice:
        assert alice.put(path).status_code == 403
        granted = admin.put(path)
        assert granted.status_code == 200, granted.text
        assert granted.json() == {
            "id": "carol",
            "allocation_ids": ["alloc-a", "alloc-b"],
            "admin": False,
        }
        assert _vipu_allocations(tenants, "carol") == ["alloc-a", "alloc-b"]
        assert alice.delete(path).status_code == 403
        revoked = admin.delete(path)
        assert revoked.status_code == 200, revoked.text
        assert revoked.json()["allocation_ids"] == ["alloc-a"]
        assert admin.put("/api/v1/admin/users/nobody/allocations/alloc-b").status_code == 404
        assert admin.delete("/api/v1/admin/users/carol/allocations/no-such").status_code == 404
    assert _vipu_allocations(tenants, "carol") == ["alloc-a"]
