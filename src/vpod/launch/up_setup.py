"""The pod ``vpod up`` sets up through the admin API, and the CLI configuration it writes.

The first run creates cluster ``cluster`` over every machine, allocation
``default`` of the whole pod and user ``default`` granted it. After that the
pod is the administrator's: a ``default`` allocation that was removed is not
made again over whatever the administrator created (a warning says how to
bring it back), a reshaped one is left as it is, and the default user keeps
the grants it was given.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from vpod.cli.config import parse_hcl, render_hcl
from vpod.cli.errors import fail
from vpod.cli.vipu_admin_users import write_private
from vpod.client import AdminClient
from vpod.domain.naming import natural_key
from vpod.domain.topology import Pod

from .up_state import ADMIN_CONFIG, UpState

CLUSTER_ID = "cluster"
ALLOCATION_ID = "default"
USER_ID = "default"
SETUP_CALL_TIMEOUT_S = 30.0
"""The deadline of each admin call that sets the pod up."""


def bin_path(name: str) -> str:
    """The console script next to the running interpreter (the same environment)."""
    candidate = Path(sys.executable).with_name(name)
    return str(candidate) if candidate.exists() else name


def wait_for_agents(
    admin: AdminClient,
    ids: list[str],
    timeout: float,
    on_count: Callable[[int, int], None] | None = None,
) -> None:
    """Until every agent of ``ids`` has registered; ``on_count(registered, wanted)`` after
    each look."""
    deadline = time.monotonic() + timeout
    missing = set(ids)
    while time.monotonic() < deadline:
        missing = set(ids) - {a.id for a in admin.list_agents()}
        if on_count is not None:
            on_count(len(ids) - len(missing), len(ids))
        if not missing:
            return
        time.sleep(0.1)
    fail(
        f"agents did not register in {timeout:.0f} s: {', '.join(sorted(missing, key=natural_key))}"
    )


def ensure_cluster(admin: AdminClient, pod: Pod, ids: list[str]) -> None:
    if any(c.id == CLUSTER_ID for c in admin.list_clusters()):
        return
    admin.create_cluster(CLUSTER_ID, ids, num_ilds=len(pod.domains))


def ensure_default_allocation(
    admin: AdminClient, pod: Pod, state: UpState, warn: Callable[[str], None]
) -> None:
    """Create ``default`` once; afterwards only say so when an administrator removed it."""
    if any(a.id == ALLOCATION_ID for a in admin.list_allocations()):
        state.default_allocation_made = True
        return
    if state.default_allocation_made:
        warn(
            f"allocation {ALLOCATION_ID} was removed by an administrator and is not made again"
            " over the pod as it is now; bring it back with vipu-admin create allocation"
            f" {ALLOCATION_ID} --cluster {CLUSTER_ID} --size N (then vipu-admin grant allocation"
            f" {ALLOCATION_ID} --user {USER_ID})"
        )
        return
    admin.create_allocation(ALLOCATION_ID, CLUSTER_ID, size=pod.num_ipus)
    state.default_allocation_made = True


def ensure_user(admin: AdminClient, state: UpState) -> tuple[str, str] | None:
    """Create the default user the first time; its (id, key), or None when it existed."""
    if any(u.id == USER_ID for u in admin.list_users()):
        return None
    if state.user_created:
        return None  # an administrator removed it: that is theirs to decide
    granted = [ALLOCATION_ID] if state.default_allocation_made else []
    created = admin.create_user(USER_ID, allocation_ids=granted)
    state.user_created = True
    return USER_ID, created.access_key


def _endpoints(host: str, user_port: int, admin_port: int) -> dict[str, str | int]:
    return {
        "api-host": host,
        "api-port": user_port,
        "admin-api-host": host,
        "admin-api-port": admin_port,
    }


def write_cli_config(
    data_dir: Path,
    host: str,
    user_port: int,
    admin_port: int,
    credentials: tuple[str, str] | None,
) -> Path:
    """``vipu-cli.hcl`` for the default user (0600): endpoints and, kept across runs, its key."""
    path = data_dir / "vipu-cli.hcl"
    values = _endpoints(host, user_port, admin_port)
    if credentials is None and path.exists():
        old = parse_hcl(path.read_text())
        if old.get("api-user-id") and old.get("api-access-key"):
            credentials = (old["api-user-id"], old["api-access-key"])
    if credentials is not None:
        values["api-user-id"], values["api-access-key"] = credentials
    write_private(path, render_hcl(values))
    return path


def admin_credentials(data_dir: Path, log_path: Path) -> tuple[str, str]:
    """The administrator's (user id, key) from admin.vipu-cli.hcl (--init writes it first)."""
    path = data_dir / ADMIN_CONFIG
    if not path.exists():
        run_init(data_dir, "--secure", log_path)
        if not path.exists():
            fail(
                f"the administrator of {data_dir} exists but its key is not in {path}:"
                f" give it a new one with vipu-server --init --secure --new-admin-key"
                f" --data-dir {shlex.quote(str(data_dir))}"
            )
    values = parse_hcl(path.read_text())
    user_id, key = values.get("api-user-id", ""), values.get("api-access-key", "")
    if not user_id or not key:
        fail(f"{path} has no api-user-id and api-access-key: remove it and run vpod up again")
    return user_id, key


def run_init(data_dir: Path, mode_flag: str, log_path: Path) -> None:
    """``vipu-server --init --secure|--insecure`` on the data directory, its output logged."""
    done = subprocess.run(
        [bin_path("vipu-server"), "--init", mode_flag, "--data-dir", str(data_dir)],
        capture_output=True,
        text=True,
        check=False,
    )
    with log_path.open("a") as log:
        log.write(done.stderr)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        fail(f"vipu-server --init {mode_flag} failed: {last}")


def write_admin_config(
    data_dir: Path, host: str, user_port: int, admin_port: int, credentials: tuple[str, str]
) -> Path:
    path = data_dir / ADMIN_CONFIG
    values = _endpoints(host, user_port, admin_port)
    values["api-user-id"], values["api-access-key"] = credentials
    write_private(path, "# vipu-cli.hcl for the administrator (vpod up)\n" + render_hcl(values))
    return path
