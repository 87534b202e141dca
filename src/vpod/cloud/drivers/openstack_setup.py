"""What an OpenStack server is told, and how it gets there: Nova metadata, never a command line.

POST_DEPLOY_SETUP runs after Nova booted the server, and its settings change later (a new
V-IPU key, a moved controller, dataset storage attached), so they cannot live in user data,
which Nova fixes at boot. They go into the server's **Nova metadata** instead, as JSON cut
into values of at most 255 characters (``vpod-setup-000``, ``vpod-setup-001``, ... and
``vpod-setup-count``), which Nova serves to the server on its **config drive** at boot and
from the metadata service at any time. The **user data** (cloud-init, fixed at boot, holding
no secret) installs ``/usr/local/sbin/vpod-settings``, which reads the metadata and writes the
files; cloud-init runs it at every boot and a systemd timer every minute.

The files are those the local driver writes: ``/etc/vipu/vipu-cli.hcl`` (the vPOD's V-IPU
user and key), ``/etc/environment`` (``IPUOF_VIPU_API_*``, ``VIPU_CLI_CONFIG``, the
cluster's and dataset storage's variables), ``/etc/hosts`` (the cluster's servers) and the
``~/.aws`` files of dataset storage (mode 0600, owned by the ssh user).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping

from .base import ServerSetup
from .dataset_files import dataset_env, render_config, render_credentials
from .workspace import render_env, vipu_env, vipu_hcl

PREFIX = "vpod-setup-"
COUNT_KEY = PREFIX + "count"
CHUNK = 255
"""Nova's longest metadata value."""
HCL = "/etc/vipu/vipu-cli.hcl"


def render_files(
    setup: ServerSetup, server_name: str, user: str, old_hcl: str = ""
) -> tuple[dict[str, dict[str, str]], bool]:
    """The files for ``setup`` (path -> ``content``, ``mode``, ``owner``) and whether the
    server holds V-IPU credentials (its old ``vipu-cli.hcl`` is ``old_hcl``)."""
    home = f"/home/{user}"
    env = {"VPOD_CLUSTER": setup.cluster_name, "VPOD_SERVER": server_name, **setup.env}
    files: dict[str, dict[str, str]] = {}
    has_key = True
    if setup.vipu is not None:
        hcl, has_key = vipu_hcl(setup.vipu, old_hcl)
        files[HCL] = {"content": hcl, "mode": "0600", "owner": user}
        env.update(vipu_env(setup.vipu, HCL))
    if setup.datasets is not None:
        env.update(dataset_env(setup.datasets))
        files[f"{home}/.aws/config"] = {
            "content": render_config(setup.datasets),
            "mode": "0600",
            "owner": user,
        }
        files[f"{home}/.aws/credentials"] = {
            "content": render_credentials(setup.datasets),
            "mode": "0600",
            "owner": user,
        }
    hosts = "".join(f"{address}\t{host}\n" for host, address in setup.peers)
    files["/etc/hosts"] = {"content": "127.0.0.1\tlocalhost\n" + hosts, "mode": "0644"}
    # the environment may hold dataset keys: root reads it (pam_env), the user through sudo-less
    # login only
    files["/etc/environment"] = {"content": render_env(env), "mode": "0600", "owner": user}
    return files, has_key


def to_metadata(files: Mapping[str, Mapping[str, str]]) -> dict[str, str]:
    """``files`` as Nova metadata items (each value at most 255 characters)."""
    text = base64.b64encode(json.dumps(files, sort_keys=True).encode()).decode()
    chunks = [text[i : i + CHUNK] for i in range(0, len(text), CHUNK)] or [""]
    items = {f"{PREFIX}{n:03d}": chunk for n, chunk in enumerate(chunks)}
    items[COUNT_KEY] = str(len(chunks))
    return items


def from_metadata(metadata: Mapping[str, str]) -> dict[str, dict[str, str]]:
    """What :func:`to_metadata` stored (empty when nothing, or something broken, is there)."""
    try:
        count = int(metadata.get(COUNT_KEY, "0"))
        text = "".join(metadata[f"{PREFIX}{n:03d}"] for n in range(count))
        files = json.loads(base64.b64decode(text)) if text else {}
    except (KeyError, ValueError):
        return {}
    return files if isinstance(files, dict) else {}


SETTINGS_SCRIPT = r"""#!/usr/bin/env python3
# Written by vpod: the server's settings from its Nova metadata (config drive or metadata
# service) into files. Runs at boot and every minute.
import base64, json, os, pwd, subprocess, urllib.request
def metadata():
    for dev in ("/dev/disk/by-label/config-2", "/dev/disk/by-label/CONFIG-2"):
        if os.path.exists(dev):
            os.makedirs("/run/vpod-config", exist_ok=True)
            if subprocess.call(["mount", "-o", "ro", dev, "/run/vpod-config"]) == 0:
                try:
                    with open("/run/vpod-config/openstack/latest/meta_data.json") as f:
                        return json.load(f)["meta"]
                finally:
                    subprocess.call(["umount", "/run/vpod-config"])
    url = "http://169.254.169.254/openstack/latest/meta_data.json"
    return json.load(urllib.request.urlopen(url, timeout=10))["meta"]
def main():
    meta = metadata()
    count = int(meta.get("vpod-setup-count", "0"))
    text = "".join(meta["vpod-setup-%03d" % n] for n in range(count))
    files = json.loads(base64.b64decode(text)) if text else {}
    for path, spec in files.items():
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = path + ".vpod-new"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(spec["content"])
        if spec.get("owner"):
            entry = pwd.getpwnam(spec["owner"])
            os.chown(tmp, entry.pw_uid, entry.pw_gid)
        os.chmod(tmp, int(spec.get("mode", "0600"), 8))
        os.replace(tmp, path)
main()
"""

TIMER = """[Unit]
Description=vpod settings from Nova metadata, every minute
[Timer]
OnBootSec=30
OnUnitActiveSec=60
[Install]
WantedBy=timers.target
"""

SERVICE = """[Unit]
Description=vpod settings from Nova metadata
[Service]
Type=oneshot
ExecStart=/usr/local/sbin/vpod-settings
"""


def user_data(host_name: str, user: str, public_keys: tuple[str, ...]) -> str:
    """The server's cloud-init user data: its host name, the project's keys, the settings
    script and its timer. No secret: those arrive as metadata."""
    config = {
        "hostname": host_name,
        "fqdn": host_name,
        "manage_etc_hosts": False,
        "users": [
            "default",
            {
                "name": user,
                "shell": "/bin/bash",
                "ssh_authorized_keys": list(public_keys),
            },
        ],
        "write_files": [
            {
                "path": "/usr/local/sbin/vpod-settings",
                "permissions": "0755",
                "content": SETTINGS_SCRIPT,
            },
            {"path": "/etc/systemd/system/vpod-settings.service", "content": SERVICE},
            {"path": "/etc/systemd/system/vpod-settings.timer", "content": TIMER},
        ],
        "bootcmd": ["/usr/local/sbin/vpod-settings || true"],
        "runcmd": [
            "/usr/local/sbin/vpod-settings",
            "systemctl enable --now vpod-settings.timer",
        ],
    }
    return "#cloud-config\n" + json.dumps(config, indent=1) + "\n"
