"""The ``[openstack]`` table of ``cloud.toml``: which OpenStack, and how vpod's names map onto it.

::

    compute_driver = "openstack"
    volume_driver = "cinder"

    [openstack]
    cloud = "vpod"                 # a cloud of clouds.yaml ($OS_CLIENT_CONFIG_FILE)
    region = ""                    # default: the cloud's region_name
    networks = true                # a Neutron network, subnet and security group per cluster
    ssh_user = "ubuntu"            # who tenants ssh in as (the image's cloud-init user)
    wait_s = 600.0                 # longest wait for Nova or Cinder to finish one action
    default_flavor = ""            # Nova flavor for vpod flavors not in [openstack.flavors]
    default_image = ""             # Glance image for vpod images not in [openstack.images]
    allow_cidrs = []               # more addresses servers may reach (storage, a proxy)

    [openstack.flavors]            # vpod flavor -> Nova flavor (default: the same name)
    "g2a-ai-fast-v1pod-16" = "vpod.poplar"

    [openstack.images]             # vpod image -> Glance image (default: the same name)
    "ubuntu-22.04-poplar-3.4" = "poplar-sdk-3.4"

    [openstack.volume_types]       # vpod volume type -> Cinder volume type ("": Cinder's default)
    ssd = ""
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

from ..model.errors import InvalidArgument


@dataclass(frozen=True)
class OpenStackOptions:
    cloud: str = "vpod"
    region: str = ""
    networks: bool = True
    ssh_user: str = "ubuntu"
    wait_s: float = 600.0
    default_flavor: str = ""
    default_image: str = ""
    allow_cidrs: tuple[str, ...] = ()
    flavors: Mapping[str, str] = field(default_factory=dict)
    images: Mapping[str, str] = field(default_factory=dict)
    volume_types: Mapping[str, str] = field(default_factory=dict)

    def nova_flavor(self, flavor: str) -> str:
        return self.flavors.get(flavor) or self.default_flavor or flavor

    def glance_image(self, image: str) -> str:
        return self.images.get(image) or self.default_image or image

    def cinder_type(self, volume_type: str) -> str | None:
        """The Cinder volume type; None: Cinder's default."""
        return self.volume_types.get(volume_type) or None


_MAPS = ("flavors", "images", "volume_types")


def parse_openstack(raw: Any, *, source: str) -> OpenStackOptions:
    """The ``[openstack]`` table, checked; InvalidArgument naming the key to fix."""
    if not isinstance(raw, dict):
        raise InvalidArgument(f"{source}: [openstack] is a table (see docs/openstack.md)")
    known = {f.name for f in fields(OpenStackOptions)}
    unknown = sorted(set(raw) - known)
    if unknown:
        raise InvalidArgument(
            f"{source}: unknown key openstack.{unknown[0]}; the keys are {', '.join(sorted(known))}"
        )
    options = OpenStackOptions()
    values: dict[str, Any] = {}
    for key, value in raw.items():
        where = f"{source}: openstack.{key}"
        if key in _MAPS:
            if not isinstance(value, dict) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in value.items()
            ):
                raise InvalidArgument(f'{where} is a table of names, e.g. "vpod-name" = "name"')
            values[key] = dict(value)
        elif key == "allow_cidrs":
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise InvalidArgument(f'{where} is a list of CIDRs, e.g. ["10.0.0.0/24"]')
            for cidr in value:
                try:
                    ipaddress.ip_network(cidr)
                except ValueError:
                    raise InvalidArgument(f"{where}: {cidr!r} is not a CIDR") from None
            values[key] = tuple(value)
        else:
            expected = type(getattr(options, key))
            if expected is float and isinstance(value, int) and not isinstance(value, bool):
                value = float(value)
            if not isinstance(value, expected):
                raise InvalidArgument(f"{where} must be a {expected.__name__}, not {value!r}")
            if key == "wait_s" and value <= 0:
                raise InvalidArgument(f"{where} is a positive number of seconds")
            if key == "cloud" and not value:
                raise InvalidArgument(f"{where} names a cloud of clouds.yaml")
            values[key] = value
    return replace(options, **values)
