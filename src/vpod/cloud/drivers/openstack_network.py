"""A cluster's own Neutron network: a network, a subnet and a security group per cluster.

The subnet is the cluster's private /24 (the one its servers' addresses were given in), with
no gateway and no DHCP (the address comes to the server on its config drive). The security
group ``vpod-CLUSTER`` lets in only the group's own members, and lets out only:

- the cluster's own servers (the group itself),
- the controller's V-IPU user API and the cloud API (``ServerSetup.vipu``, and the
  endpoints in ``ServerSetup.endpoints``),
- the IPUoF endpoints of the vPOD's allocation (also in ``ServerSetup.endpoints``),
- the operator's ``allow_cidrs`` (storage, a proxy).

Neutron's default rules (all egress) are removed, so nothing else is reachable. Every call is
idempotent: made once, found by name afterwards.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from .base import DriverError

if TYPE_CHECKING:
    from openstack.connection import Connection

SELF = "self"


def names(cluster_id: str) -> str:
    return f"vpod-{cluster_id}"


def ensure_network(conn: Connection, cluster_id: str, address: str) -> tuple[Any, Any, Any]:
    """The cluster's network, subnet and security group, made when missing."""
    name = names(cluster_id)
    network = conn.network.find_network(name)
    if network is None:
        network = conn.network.create_network(name=name, port_security_enabled=True)
    cidr = str(ipaddress.ip_network(f"{address}/24", strict=False))
    subnet = conn.network.find_subnet(name, network_id=network.id)
    if subnet is None:
        subnet = conn.network.create_subnet(
            name=name,
            network_id=network.id,
            ip_version=4,
            cidr=cidr,
            gateway_ip=None,
            enable_dhcp=False,
        )
    elif subnet.cidr != cidr:
        raise DriverError(
            f"Neutron subnet {name} is {subnet.cidr}, not the cluster's {cidr}: delete it"
        )
    group = conn.network.find_security_group(name)
    if group is None:
        group = conn.network.create_security_group(
            name=name, description=f"vpod cluster {cluster_id}: its servers and the controller"
        )
        for rule in list(conn.network.security_group_rules(security_group_id=group.id)):
            conn.network.delete_security_group_rule(rule)  # Neutron's default: all egress
        for direction in ("ingress", "egress"):
            conn.network.create_security_group_rule(
                security_group_id=group.id,
                direction=direction,
                ethertype="IPv4",
                remote_group_id=group.id,
            )
    return network, subnet, group


def ensure_port(conn: Connection, cluster_id: str, server_id: str, address: str) -> Any:
    """The server's port on its cluster's network, at its address."""
    network, subnet, group = ensure_network(conn, cluster_id, address)
    name = f"vpod-{server_id}"
    port = conn.network.find_port(name, network_id=network.id)
    if port is None:
        port = conn.network.create_port(
            name=name,
            network_id=network.id,
            fixed_ips=[{"subnet_id": subnet.id, "ip_address": address}],
            security_group_ids=[group.id],
        )
    return port


def delete_port(conn: Connection, server_id: str) -> None:
    for port in list(conn.network.ports(name=f"vpod-{server_id}")):
        conn.network.delete_port(port, ignore_missing=True)


def delete_network_if_unused(conn: Connection, cluster_id: str) -> None:
    """Remove the cluster's network and group once no port of a server is left on it."""
    name = names(cluster_id)
    network = conn.network.find_network(name)
    if network is not None:
        if any(p.name.startswith("vpod-") for p in conn.network.ports(network_id=network.id)):
            return
        conn.network.delete_network(network, ignore_missing=True)
    group = conn.network.find_security_group(name)
    if group is not None:
        conn.network.delete_security_group(group, ignore_missing=True)


def allow_egress(conn: Connection, cluster_id: str, endpoints: Iterable[str]) -> None:
    """Make the group's egress rules exactly: its own members, and each ``endpoint``
    (``host:port`` for TCP to one port, or a CIDR for everything there)."""
    group = conn.network.find_security_group(names(cluster_id))
    if group is None:
        raise DriverError(f"Neutron security group {names(cluster_id)} is missing")
    wanted = {_rule_key(e) for e in endpoints}
    for rule in list(conn.network.security_group_rules(security_group_id=group.id)):
        if rule.direction != "egress" or rule.remote_group_id:
            continue
        key = (rule.remote_ip_prefix, rule.port_range_min)
        if key in wanted:
            wanted.discard(key)
        else:
            conn.network.delete_security_group_rule(rule, ignore_missing=True)
    for prefix, port in sorted(wanted, key=str):
        new: dict[str, Any] = {
            "security_group_id": group.id,
            "direction": "egress",
            "ethertype": "IPv6" if ":" in prefix else "IPv4",
            "remote_ip_prefix": prefix,
        }
        if port is not None:
            new.update(protocol="tcp", port_range_min=port, port_range_max=port)
        conn.network.create_security_group_rule(**new)


def _rule_key(endpoint: str) -> tuple[str, int | None]:
    if "/" in endpoint:
        return str(ipaddress.ip_network(endpoint, strict=False)), None
    host, _, port = endpoint.rpartition(":")
    host = host.strip("[]")
    try:
        address = ipaddress.ip_address(host)
    except ValueError:  # a host name: the address it has now
        address = ipaddress.ip_address(socket.gethostbyname(host))
    return f"{address}/{address.max_prefixlen}", int(port)
