"""OpenSSH public keys as the cloud reads them, and the OpenSSH files `vpod` writes.

Keys made by the real `ssh-keygen` (ed25519, RSA, ECDSA) are accepted with
the fingerprint `ssh-keygen -l` prints; what is not one public key line is
refused with what to give instead. `vpod cluster ssh-config`'s Host blocks
pin host keys strictly and reach each server through `ssh-proxy`; the
known_hosts file keeps the lines of other hosts.
"""

from __future__ import annotations

import base64
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from vpod.cli.openssh import render_config
from vpod.cli.ssh_files import update_known_hosts
from vpod.client import ClusterSsh, ServerSsh, SshHostKey
from vpod.cloud.model import errors
from vpod.cloud.ssh_keys import host_key_of, parse_public_key

ED25519_BLOB = base64.b64encode(b"\x00\x00\x00\x0bssh-ed25519" + bytes(36)).decode()
needs_keygen = pytest.mark.skipif(shutil.which("ssh-keygen") is None, reason="no ssh-keygen")


def _keygen(tmp_path: Path, kind: str, *extra: str) -> tuple[str, str]:
    """(public key line, fingerprint as ssh-keygen -l prints it)."""
    key = tmp_path / kind
    subprocess.run(
        ["ssh-keygen", "-q", "-t", kind, *extra, "-N", "", "-C", "me@laptop", "-f", str(key)],
        check=True,
    )
    listed = subprocess.run(
        ["ssh-keygen", "-l", "-f", f"{key}.pub"], capture_output=True, text=True, check=True
    )
    return Path(f"{key}.pub").read_text(), listed.stdout.split()[1]


@needs_keygen
@pytest.mark.parametrize(
    ("kind", "extra"), [("ed25519", ()), ("rsa", ("-b", "2048")), ("ecdsa", ())]
)
def test_keys_from_ssh_keygen_have_openssh_fingerprints(
    tmp_path: Path, kind: str, extra: tuple[str, ...]
) -> None:
    line, fingerprint = _keygen(tmp_path, kind, *extra)
    key = parse_public_key(line)
    assert key.fingerprint == fingerprint
    assert key.comment == "me@laptop"
    assert key.line(comment="vpod:laptop").endswith(" vpod:laptop")
    assert key.line().split()[:2] == line.split()[:2]


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("", "empty"),
        ("-----BEGIN OPENSSH PRIVATE KEY-----\nabc\n-----END OPENSSH PRIVATE KEY-----", "private"),
        ("ssh-dss AAAAB3NzaC1kc3M= old", "not accepted"),
        ("ssh-ed25519", "lacks its base64"),
        ("ssh-ed25519 not-base64!", "does not decode"),
        ("ssh-ed25519 AAAA AAAA\nssh-ed25519 AAAA", "one line"),
        (
            "ssh-rsa " + ED25519_BLOB,
            "not a ssh-rsa",
        ),
        ('command="rm -rf /" ssh-ed25519 AAAA', "not accepted"),
    ],
)
def test_anything_but_one_public_key_line_is_refused_saying_what_to_give(
    text: str, says: str
) -> None:
    with pytest.raises(errors.InvalidArgument) as refused:
        parse_public_key(text)
    assert says in str(refused.value)


def test_host_keys_are_read_with_their_fingerprints() -> None:
    line = f"ssh-ed25519 {ED25519_BLOB} root@server"
    found = host_key_of(line)
    assert found is not None
    assert found.key == " ".join(line.split()[:2])
    assert found.fingerprint.startswith("SHA256:")
    assert "=" not in found.fingerprint
    assert host_key_of("garbage") is None


def _info() -> ClusterSsh:
    key = SshHostKey(key="ssh-ed25519 AAAAC3Nz", fingerprint="SHA256:abc")
    servers = tuple(
        ServerSsh(position=n, name=f"c1-poplar-{n}", status="ACTIVE", user="tenant",
                  host_keys=(key,), connect="")
        for n in (1, 2)
    )  # fmt: skip
    return ClusterSsh(cluster="c1", keypairs=("laptop",), servers=servers)


def test_ssh_config_pins_host_keys_and_proxies_each_server(tmp_path: Path) -> None:
    text = render_config(
        _info(),
        known_hosts=tmp_path / "known_hosts",
        connection=["--url", "http://127.0.0.1:8080/100%"],
        identities=[tmp_path / "id"],
    )
    blocks = text.split("\nHost ")[1:]
    assert [b.splitlines()[0] for b in blocks] == ["c1-poplar-1 c1", "c1-poplar-2"]
    for block, name in zip(blocks, ("c1-poplar-1", "c1-poplar-2"), strict=True):
        assert f"HostKeyAlias {name}" in block
        assert "StrictHostKeyChecking yes" in block
        assert "User tenant" in block
        assert f"UserKnownHostsFile {tmp_path / 'known_hosts'}" in block
        assert f"IdentityFile {tmp_path / 'id'}" in block
        proxy = next(line for line in block.splitlines() if "ProxyCommand" in line)
        assert proxy.endswith(f"cluster ssh-proxy --url http://127.0.0.1:8080/100%% c1 {name}")


def test_ssh_config_direct_writes_host_and_port_and_keeps_the_tunnel_where_there_is_none(
    tmp_path: Path,
) -> None:
    first, second = _info().servers
    info = replace(
        _info(),
        servers=(replace(first, direct_host="10.1.2.3", direct_port=20007), second),
    )
    text = render_config(info, known_hosts=tmp_path / "kh", connection=[], direct=True)
    direct, tunnelled = text.split("\nHost ")[1:]
    assert "HostName 10.1.2.3" in direct
    assert "Port 20007" in direct
    assert "ProxyCommand" not in direct
    assert "HostKeyAlias c1-poplar-1" in direct  # the pinned key, whichever way in
    assert "StrictHostKeyChecking yes" in direct
    assert "no direct SSH port: through the tunnel" in tunnelled
    assert "ProxyCommand" in tunnelled
    assert "Port " not in tunnelled
    plain = render_config(info, known_hosts=tmp_path / "kh", connection=[])
    assert "Port 20007" not in plain  # without --direct the tunnel, even where a port exists


def test_known_hosts_replaces_the_lines_of_the_listed_hosts_only(tmp_path: Path) -> None:
    path = tmp_path / "known_hosts"
    path.write_text("other.example ssh-ed25519 OTHER\nc1-poplar-1 ssh-ed25519 OLD\n")
    update_known_hosts(path, [("c1-poplar-1", "ssh-ed25519 NEW")])
    assert path.read_text().splitlines() == [
        "other.example ssh-ed25519 OTHER",
        "c1-poplar-1 ssh-ed25519 NEW",
    ]
