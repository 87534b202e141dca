"""The cloud part of ``vpod up``: a pod for vPODs, emulated GPU hosts, a default project.

``vpod up`` keeps its V-IPU pod (cluster ``cluster``, allocation ``default``,
which takes every IPU) as it was and adds, for the cloud layer:

- ``DATA_DIR/cloud.toml`` telling the cloud to carve vPODs from V-IPU cluster
  ``cloud`` only, and, with ``--cloud-pod SHAPE`` (e.g. ``pod16``), that
  second emulated pod: agents ``cag1``... in their own ``vipu-agent`` process
  on the loopback block 1024 addresses above the main pod's. Without it vPOD
  flavors have no capacity (the V-IPU pod stays whole for ``vipu``) while GPU
  flavors work;
- emulated GPU hosts (H100 and A100 bare metal in two InfiniBand fabrics,
  A100 PCIe and L40S bare metal, one hypervisor per GPU model), served by one
  ``vpod-gpu-agent`` process on emulated GPUs (``DATA_DIR/gpu-hosts.json``,
  stand-in device nodes under ``DATA_DIR/cloud/gpu-devices``) that registers
  them with the agent token the IPU agents use, and four bare-metal Poplar
  hosts registered through the cloud's admin API with the administrator
  token the controller wrote (``DATA_DIR/cloud-admin.token``);
- project ``default`` and ``DATA_DIR/vpod-cli.toml`` (URL and token, 0600)
  for the ``vpod`` commands.

Everything is created once and found again on the next run.

The cloud's settings and its HTTP client (httpx, pydantic and every cloud
shape: most of what ``vpod up`` would import) are imported by the functions
that use them, so ``vpod up --open`` never loads them and a cloud ``vpod up``
loads them while its children start.
"""

from __future__ import annotations

import ipaddress
import json
import shlex
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from vpod.agent.fabric import fabric_problem
from vpod.cli.errors import CliFailure
from vpod.client import VpodError
from vpod.client.cloud_config import API_PREFIX, CONFIG_NAME, read_config, write_config
from vpod.domain.topology import Pod

if TYPE_CHECKING:
    from vpod.client import AdminClient, CloudSettings

CLOUD_CLUSTER = "cloud"
CLOUD_AGENT_PREFIX = "cag"
DEFAULT_PROJECT = "default"
ADDRESS_OFFSET = 1024

GPU_HOSTS_FILE = "gpu-hosts.json"
GPUS_PER_HOST = 8

# (id, role, model, fabric)
EMULATED_HOSTS: tuple[tuple[str, str, str, str | None], ...] = (
    *((f"bm-h100-{i}", "baremetal", "h100-80", f"ib-{1 + (i - 1) // 3}") for i in range(1, 7)),
    *((f"bm-a100-{i}", "baremetal", "a100-80", f"ib-{1 + (i - 1) // 3}") for i in range(1, 7)),
    ("bm-a100pcie-1", "baremetal", "a100-40", None),
    ("bm-a100pcie-2", "baremetal", "a100-40", None),
    ("bm-l40s-1", "baremetal", "l40s-48", None),
    ("bm-l40s-2", "baremetal", "l40s-48", None),
    ("hv-h100-1", "hypervisor", "h100-80", None),
    ("hv-a100-1", "hypervisor", "a100-80", None),
    ("hv-l40s-1", "hypervisor", "l40s-48", None),
    *((f"poplar-{i}", "baremetal", "poplar", None) for i in range(1, 5)),
)


EMULATED_GPU_HOSTS = tuple(h for h in EMULATED_HOSTS if h[2] != "poplar")
"""Served by the emulated GPU host agent; the Poplar hosts are registered by hand."""


def gpu_agent_argv(data_dir: Path, url: str) -> list[str]:
    """``vpod-gpu-agent`` for the emulated GPU hosts (their list written to ``DATA_DIR``)."""
    hosts = [
        {"host_id": h, "role": role, "model": model, "fabric": fabric, "gpus": GPUS_PER_HOST}
        for h, role, model, fabric in EMULATED_GPU_HOSTS
    ]
    path = data_dir / GPU_HOSTS_FILE
    path.write_text(json.dumps(hosts, indent=1) + "\n")
    return [
        str(Path(sys.executable).with_name("vpod-gpu-agent")),
        "--controller",
        url,
        "--emulate-hosts",
        str(path),
        "--device-dir",
        str(data_dir / "cloud" / "gpu-devices"),
        "--interval",
        "5",  # 18 hosts on one laptop: a sample each every 5 s is plenty
    ]


def wait_for_gpu_hosts(data_dir: Path, url: str, timeout_s: float) -> str | None:
    """Wait until the emulated GPU hosts registered (None), or say which did not."""
    from vpod.client import CloudClient, CloudSettings
    from vpod.cloud.settings import ADMIN_TOKEN_FILE

    token_file = data_dir / ADMIN_TOKEN_FILE
    if not token_file.exists():
        return "no administrator token to check the GPU hosts with"
    wanted = {h[0] for h in EMULATED_GPU_HOSTS}
    deadline = time.monotonic() + timeout_s
    with CloudClient(CloudSettings(url, token_file.read_text().strip()), timeout_s=30) as cloud:
        while True:
            missing = wanted - {h.id for h in cloud.list_hosts()}
            if not missing:
                return None
            if time.monotonic() > deadline:
                return f"GPU hosts not registered yet: {', '.join(sorted(missing))}"
            time.sleep(0.2)


def write_cloud_settings(data_dir: Path) -> None:
    """``DATA_DIR/cloud.toml`` naming the cloud's V-IPU cluster (kept if it exists)."""
    from vpod.cloud.settings import CONFIG_FILE, render_settings

    path = data_dir / CONFIG_FILE
    if not path.exists():
        path.write_text(render_settings((CLOUD_CLUSTER,)))


def direct_ssh_argv(ports: str | None, bind: str | None) -> list[str]:
    """vipu-server's options for direct SSH ports (checked here: a bad range is exit 2
    before anything starts)."""
    if ports is None and bind is None:
        return []
    from vpod.cloud.direct_ports import parse_port_range
    from vpod.cloud.settings import check_bind_address

    argv: list[str] = []
    if ports is not None:
        parse_port_range(ports, source="--ssh-direct-ports")
        argv += ["--ssh-direct-ports", ports]
    if bind is not None:
        check_bind_address(bind, source="--ssh-direct-bind")
        argv += ["--ssh-direct-bind", bind]
    return argv


def cloud_address_base(main_base: str) -> str:
    return str(ipaddress.IPv4Address(main_base) + ADDRESS_OFFSET)


def cloud_agent_ids(pod: Pod) -> list[str]:
    return [f"{CLOUD_AGENT_PREFIX}{i}" for i in range(1, pod.num_machines + 1)]


def cloud_agent_argv(agent_argv: list[str], pod: Pod, main_base: str) -> list[str]:
    """The main pod's ``vipu-agent`` command line, for the cloud pod's machines."""
    replaced = {
        "--machines": str(pod.num_machines),
        "--id-prefix": CLOUD_AGENT_PREFIX,
        "--machine-type": pod.machine_type.name.lower(),
        "--address-base": cloud_address_base(main_base),
    }
    argv = list(agent_argv)
    for index, word in enumerate(argv[:-1]):
        if word in replaced:
            argv[index + 1] = replaced[word]
    if fabric_problem() is None:  # tenants' servers (own networks) can then reach the IPUs
        argv.append("--ipuof-fabric")
    return argv


def ensure_cloud_cluster(admin: AdminClient, pod: Pod, ids: list[str]) -> None:
    if any(c.id == CLOUD_CLUSTER for c in admin.list_clusters()):
        return
    admin.create_cluster(CLOUD_CLUSTER, ids, num_ilds=len(pod.domains))


def bootstrap_cloud(data_dir: Path, url: str) -> str:
    """Hosts, project ``default`` and ``vpod-cli.toml``; returns the line to print."""
    from vpod.client import CloudSettings
    from vpod.cloud.settings import ADMIN_TOKEN_FILE

    token_file = data_dir / ADMIN_TOKEN_FILE
    if not token_file.exists():
        return (
            f"vpod cloud: {url}{API_PREFIX} is up, but {token_file} is missing, so the default"
            " project was not set up"
        )
    admin_token = token_file.read_text().strip()
    config = data_dir / CONFIG_NAME
    try:
        token = _default_project_token(CloudSettings(url, admin_token), config)
    except VpodError as exc:
        raise CliFailure(f"setting up the cloud failed: {exc}") from None
    write_config(config, url, token, DEFAULT_PROJECT)
    return (
        f"vpod cloud: {url}{API_PREFIX} (project {DEFAULT_PROJECT}). Next: export"
        f" VPOD_CONFIG={shlex.quote(str(config))} && vpod flavors"
    )


def _default_project_token(admin: CloudSettings, config: Path) -> str:
    """Register the emulated hosts and project ``default``; its token (made when needed)."""
    from vpod.client import CloudClient, NotFound

    with CloudClient(admin, timeout_s=30) as cloud:
        known = {h.id for h in cloud.list_hosts()}
        for host_id, role, model, fabric in EMULATED_HOSTS:
            if host_id not in known and model == "poplar":  # GPU hosts: their agent
                cloud.register_host(host_id, role, model, fabric=fabric)
        token: str | None = None
        try:
            cloud.get_project(DEFAULT_PROJECT)
        except NotFound:
            token = cloud.create_project(DEFAULT_PROJECT).token.token
        else:
            if config.exists():
                token = read_config(config).get("token")
        if not token:
            token = cloud.issue_token(DEFAULT_PROJECT, "vpod up").token
        return str(token)
