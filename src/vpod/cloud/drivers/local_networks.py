"""The host's network state of the local compute driver's servers, for one cloud directory.

:mod:`.tenant_network` knows how to build a vPOD's bridge, its servers'
namespaces and its nftables table; :class:`LocalNetworks` knows which ones
this cloud directory holds: a cluster's subnet lease and last reach are kept
in ``networks/<cluster>.json`` under the directory, so a restarted controller
(or a rebooted host, which loses bridges and namespaces) builds the same
network again. Names and subnet leases are keyed by the directory's path, so
two controllers on one host never take each other's.
"""

from __future__ import annotations

import ipaddress
from pathlib import Path

from . import tenant_network
from .base import DriverError, NetworkReach
from .tenant_network import NetworkSettings
from .workspace import read_json, write_json


class LocalNetworks:
    """The networks of the servers under ``base``. Calls block (they run ``ip`` and ``nft``):
    the driver runs them in a thread."""

    def __init__(self, base: Path, settings: NetworkSettings) -> None:
        self._base = base
        self._settings = settings

    def key(self, resource_id: str) -> str:
        """A key no other controller on this host uses (names, subnet leases)."""
        return _host_key(self._base, resource_id)

    def _state(self, cluster_id: str) -> Path:
        return _net_state_path(self._base, cluster_id)

    def create(self, cluster_id: str, cidr: str) -> str:
        """The cluster's bridge and rules (its recorded subnet, else ``cidr`` where free);
        returns the subnet it was given."""
        state = read_json(self._state(cluster_id)) or {}
        wanted = str(state.get("subnet") or cidr)
        subnet = tenant_network.lease_subnet(self._settings, self.key(cluster_id), wanted)
        net = tenant_network.cluster_net(self.key(cluster_id), subnet)
        tenant_network.ensure_bridge(net, self._settings)
        reach = _reach_from(state.get("reach"))
        tenant_network.apply_rules(self._ruleset(net, reach))
        self._state(cluster_id).parent.mkdir(parents=True, exist_ok=True)
        write_json(self._state(cluster_id), {"subnet": subnet, "reach": _reach_json(reach)})
        return subnet

    def _ruleset(
        self, net: tenant_network.ClusterNet, reach: NetworkReach
    ) -> tenant_network.Ruleset:
        return tenant_network.Ruleset(net, reach, self._settings.outbound, self._settings.pool)

    def set_reach(self, cluster_id: str, reach: NetworkReach) -> None:
        state = read_json(self._state(cluster_id))
        if state is None:
            raise DriverError(f"cluster {cluster_id} has no network on this host")
        net = tenant_network.cluster_net(self.key(cluster_id), str(state["subnet"]))
        tenant_network.ensure_bridge(net, self._settings)
        tenant_network.apply_rules(self._ruleset(net, reach))
        write_json(self._state(cluster_id), {**state, "reach": _reach_json(reach)})

    def delete(self, cluster_id: str) -> None:
        _remove_cluster_network(self._base, cluster_id, self._settings)
        self._state(cluster_id).unlink(missing_ok=True)

    def remove_server(self, server_id: str) -> None:
        tenant_network.remove_server(self.key(server_id))

    def server_net(self, server_id: str, state: dict[str, object]) -> tuple[str, str]:
        """The server's namespace, joined to its cluster's bridge, made again where it is
        missing (a host restart removes both); and the server's gateway."""
        cluster_id = str(state.get("cluster_id") or state.get("cluster") or server_id)
        address = str(state.get("address") or "")
        net_state = read_json(self._state(cluster_id))
        if net_state is None:  # a server made before its cluster had a network
            wanted = ipaddress.ip_interface(f"{address or '169.254.64.10'}/{self._settings.prefix}")
            self.create(cluster_id, str(wanted.network))
            net_state = read_json(self._state(cluster_id)) or {}
        net = tenant_network.cluster_net(self.key(cluster_id), str(net_state["subnet"]))
        if not address or ipaddress.ip_address(address) not in net.subnet:
            # the cluster's network was given another subnet: same host part, in this one
            offset = int(ipaddress.ip_address(address or "0.0.0.10")) % net.subnet.num_addresses
            address = str(net.subnet.network_address + max(offset, 2))
        if not (Path("/sys/class/net") / net.bridge).exists():
            tenant_network.ensure_bridge(net, self._settings)
            tenant_network.apply_rules(self._ruleset(net, _reach_from(net_state.get("reach"))))
        netns = tenant_network.ensure_server(net, self.key(server_id), address)
        return netns, net.gateway


def _net_state_path(base: Path, cluster_id: str) -> Path:
    return base / "networks" / f"{cluster_id}.json"


def _host_key(base: Path, resource_id: str) -> str:
    return f"{base.resolve()}#{resource_id}"


def remove_host_networks(base: Path, network: NetworkSettings | None = None) -> None:
    """Remove every namespace, bridge, nftables table and subnet lease the local driver made
    on this host for the cloud directory ``base``.

    Servers and their networks outlive the controller by design (a restart finds them);
    this is for retiring a cloud directory for good (and for tests that throw theirs away).
    """
    settings = network or NetworkSettings()
    for state in sorted((base / "servers").glob("*/state.json")):
        tenant_network.remove_server(_host_key(base, state.parent.name))
    for net_state in sorted((base / "networks").glob("*.json")):
        _remove_cluster_network(base, net_state.stem, settings)


def _remove_cluster_network(base: Path, cluster_id: str, settings: NetworkSettings) -> None:
    """A cluster's bridge and nftables table, and its subnet lease (its record stays)."""
    key = _host_key(base, cluster_id)
    recorded = read_json(_net_state_path(base, cluster_id))
    if recorded is not None and "subnet" in recorded:
        tenant_network.remove_cluster(tenant_network.cluster_net(key, str(recorded["subnet"])))
    tenant_network.release_subnet(settings, key)


def _reach_json(reach: NetworkReach) -> dict[str, object]:
    return {"services": [list(s) for s in reach.services], "ipuof_hosts": list(reach.ipuof_hosts)}


def _reach_from(raw: object) -> NetworkReach:
    if not isinstance(raw, dict):
        return NetworkReach()
    services = tuple((str(h), int(p)) for h, p in raw.get("services", []))
    return NetworkReach(services, tuple(str(h) for h in raw.get("ipuof_hosts", [])))
