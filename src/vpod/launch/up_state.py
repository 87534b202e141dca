"""What ``vpod up`` remembers about a data directory (``DATA_DIR/up.json``) and checks first.

The first run on a data directory chooses the pod shape, the cloud's pod,
the loopback block of the emulated machines and the mode; later runs reuse
them. The mode is ``secure`` (the default: every call authenticated, tenants
isolated) or ``open`` (``--open``: the spec's open V-IPU mode, no
authentication, and so no cloud tenants). A data directory keeps its mode:
starting it in the other one is refused with the way to switch
(``--switch-mode``), because a forgotten flag must never open a secure pod.
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import socket
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from vpod.cli.errors import CliFailure, fail
from vpod.domain.errors import InvalidSpec
from vpod.domain.topology import shape
from vpod.launch.address_claims import AddressClaims, block_of

SECURE = "secure"
OPEN = "open"
DEFAULT_POD = "pod64"
DEFAULT_CLOUD_POD = "pod16"
NO_CLOUD_POD = "none"
AGENT_PORT = 8092
ADMIN_CONFIG = "admin.vipu-cli.hcl"
"""Written by ``vipu-server --init --secure``: the administrator's endpoint and credentials."""


@dataclass
class UpState:
    """What the first ``vpod up`` on a data directory chose; later runs reuse it."""

    pod: str
    address_base: str
    user_created: bool = False
    cloud_pod: str | None = None
    mode: str | None = None
    """``secure`` or ``open``; None in directories made before the field existed."""
    default_allocation_made: bool = False
    """Set once ``default`` was created: from then on it is the administrator's to change."""


def load_state(
    data_dir: Path,
    pod: str | None,
    address_base: str | None,
    cloud_pod: str | None,
    claims: AddressClaims,
) -> UpState:
    """The directory's state, or a new one from the options (not saved yet).

    The state's loopback block is claimed in ``claims`` (``address_claims``): a block
    another ``vpod up`` holds fails with its holder named.
    """
    path = data_dir / "up.json"
    if path.exists():
        raw = json.loads(path.read_text())
        known = {f.name for f in fields(UpState)}
        state = UpState(**{k: v for k, v in raw.items() if k in known})
        if state.mode is None:  # before modes were recorded, an admin file meant --secure
            state.mode = SECURE if (data_dir / ADMIN_CONFIG).exists() else OPEN
        if pod and pod != state.pod:
            fail(
                f"{data_dir} holds a {state.pod}; start it without --pod, or use another"
                f" --data-dir for a {pod}",
                2,
            )
        if cloud_pod and (cloud_pod if cloud_pod != NO_CLOUD_POD else None) != state.cloud_pod:
            held = state.cloud_pod or "no"
            fail(f"{data_dir} has {held} cloud pod: leave --cloud-pod out", 2)
        claim_block(claims, state.address_base, data_dir, "stop it, then start this one again")
        return state
    pod_name = pod or DEFAULT_POD
    try:
        machines = shape(pod_name).num_machines
        if cloud_pod and cloud_pod != NO_CLOUD_POD:
            shape(cloud_pod)
    except InvalidSpec as exc:
        fail(str(exc), 2)
    if address_base is not None:
        base = _given_base(address_base, machines)
        claim_block(claims, base, data_dir, "stop it, or pass another --address-base")
    else:
        base = choose_address_base(data_dir, machines, claims)
    chosen_cloud = DEFAULT_CLOUD_POD if cloud_pod is None else cloud_pod
    return UpState(
        pod=pod_name,
        address_base=base,
        cloud_pod=None if chosen_cloud == NO_CLOUD_POD else chosen_cloud,
    )


def save_state(data_dir: Path, state: UpState) -> None:
    tmp = data_dir / "up.json.tmp"
    tmp.write_text(json.dumps(asdict(state), indent=2) + "\n")
    tmp.replace(data_dir / "up.json")


def resolve_mode(data_dir: Path, state: UpState, wanted: str | None, switch: bool) -> str | None:
    """The mode to run in, and the mode to switch from (None when there is no switch).

    ``wanted`` is what ``--secure``/``--open`` asked for (None: neither).
    """
    target = wanted or SECURE
    held = state.mode
    if held is None or held == target:
        state.mode = target
        return None
    if switch:
        state.mode = target
        return held
    if held == SECURE:
        raise CliFailure(
            f"{data_dir} was set up with authentication (the default): start it without --open,"
            " or serve it open for good with --open --switch-mode (its partitions and users stay;"
            " the cloud then serves no tenants)",
            2,
        )
    raise CliFailure(
        f"{data_dir} was set up open (--open, no authentication): start it with --open, or turn"
        " authentication on for good with --switch-mode (its pod, partitions and users stay; the"
        " administrator's key goes to admin.vipu-cli.hcl)",
        2,
    )


def _free(host: str, port: int) -> bool:
    """Whether a listener could bind ``host:port`` now (connections in TIME_WAIT do not count)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def _given_base(address_base: str, machines: int) -> str:
    """``--address-base`` checked: an IPv4 address from which all ``machines`` are loopback."""
    try:
        first = ipaddress.IPv4Address(address_base)
    except ValueError:
        fail(
            f"--address-base {address_base[:40]!r} is not an IPv4 address:"
            " give one such as 127.7.0.1",
            2,
        )
    if not first.is_loopback or not (first + machines - 1).is_loopback:
        fail(
            f"--address-base {first}: the {machines} emulated machines need loopback"
            " addresses (127.N.0.1)",
            2,
        )
    return address_base


def _take(claims: AddressClaims, block: str, data_dir: Path) -> bool:
    try:
        return claims.take(block, str(data_dir))
    except OSError as exc:
        fail(
            f"cannot claim the emulated machines' block {block}.0.0/16 under"
            f" {claims.directory}: {exc.strerror or exc} (it must be a directory every user"
            " may write, like /tmp)"
        )


def claim_block(claims: AddressClaims, base: str, data_dir: Path, advice: str) -> None:
    """Claim ``base``'s block for ``data_dir``, or fail naming the ``vpod up`` that holds it."""
    block = block_of(base)
    if not _take(claims, block, data_dir):
        holder = claims.holder(block) or "its pid is not recorded"
        fail(
            f"the emulated machines' block {block}.0.0/16 is held by another vpod up"
            f" ({holder}): {advice}"
        )


def choose_address_base(data_dir: Path, machines: int, claims: AddressClaims) -> str:
    """A 127.X.0.0/16 block whose first addresses are free, X derived from the data dir.

    Deriving X from the directory makes a restart land on the same addresses;
    probing makes two instances side by side land on different ones, and the
    claim (taken before the probe) keeps two started at once from choosing the same.
    """
    digest = hashlib.sha256(str(data_dir.resolve()).encode()).digest()
    start = 16 + digest[0] % 200
    for offset in range(200):
        second = 16 + (start - 16 + offset) % 200
        block = f"127.{second}"
        base = ipaddress.IPv4Address(f"{block}.0.1")
        if not _take(claims, block, data_dir):
            continue
        hosts = [str(base + i) for i in (0, machines - 1)]
        if all(_free(h, AGENT_PORT) for h in hosts):
            return str(base)
        claims.release(block)
    raise CliFailure(
        "no free loopback block for the emulated agents: pass --address-base 127.N.0.1"
    )


def check_ports_free(host: str, ports: list[tuple[int, str, str]]) -> None:
    """Fail at once, naming the port, when one the controller needs is taken.

    ``ports`` holds (port, what it serves, the option that moves it); port 0 is skipped.
    """
    for port, label, option in ports:
        if port and not _free(host, port):
            fail(
                f"port {port} on {host} ({label}) is in use: stop what listens there"
                f" (`ss -ltnp 'sport = :{port}'` names it) or pass {option} with another port"
            )


def check_agent_addresses_free(base: str, machines: int, data_dir: Path) -> None:
    """Fail at once when the emulated machines' addresses are taken (agents left running)."""
    first = ipaddress.IPv4Address(base)
    for address in {str(first), str(first + machines - 1)}:
        if not _free(address, AGENT_PORT):
            fail(
                f"agent address {address}:{AGENT_PORT} is in use: agents of another vpod up on"
                f" {data_dir} may still run (`ss -ltnp 'src {address}'` names the process)"
            )
