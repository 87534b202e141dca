"""`/metrics` labels the cloud's requests by their whole route template, admin routes too."""

from __future__ import annotations

import re
from pathlib import Path

from .conftest import ok
from .live import start_cloud, stop_cloud


def test_cloud_routes_are_labelled_with_their_prefix(tmp_path: Path) -> None:
    """A tenant's and an administrator's calls appear under /api/cloud/v1/..., never under a
    path without the prefix."""
    live = start_cloud(tmp_path, machines=1)
    try:
        token = live.project("metered")
        with live.client(token) as http:
            ok(http.get("/flavors"))
            ok(http.get("/clusters"))
        with live.admin() as http:
            ok(http.get("/admin/projects"))
            ok(http.get("/admin/projects/metered"))
            ok(http.get("/admin/hosts"))
        text = live.metrics()
    finally:
        stop_cloud(live)
    routes = set(re.findall(r'route="([^"]+)"', text))
    for expected in (
        "/api/cloud/v1/flavors",
        "/api/cloud/v1/clusters",
        "/api/cloud/v1/admin/projects",
        "/api/cloud/v1/admin/projects/{project}",
        "/api/cloud/v1/admin/hosts",
    ):
        assert expected in routes, sorted(routes)
    assert not [r for r in routes if r.startswith("/admin")], sorted(routes)
