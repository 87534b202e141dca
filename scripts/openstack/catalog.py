"""Fill the test OpenStack of scripts/openstack-up: the catalog, then what vpod's tests use.

Run by scripts/openstack-up with Debian's python3 (its openstacksdk), as the administrator of
``clouds.yaml``; one process for every call, since each `openstack` CLI call would start
Python again. Idempotent: what exists is left as it is.

    catalog.py catalog SERVICE_PASSWORD VPOD_PASSWORD REGION NAME:TYPE:URL...
    catalog.py content IMAGE_FILE
    catalog.py warm
    catalog.py volumes LOG_DIR
"""

import sys
import time

import openstack


def admin():
    return openstack.connect(cloud="vpod-admin")


def ensure(find, create):
    found = find()
    return found if found is not None else create()


def catalog(password, vpod_password, region, services):
    conn = admin()
    idn = conn.identity
    domain = idn.find_domain("default") or idn.find_domain("Default")
    service_project = ensure(
        lambda: idn.find_project("service", domain_id=domain.id),
        lambda: idn.create_project(name="service", domain_id=domain.id),
    )
    roles = {
        name: ensure(lambda n=name: idn.find_role(n), lambda n=name: idn.create_role(name=n))
        for name in ("admin", "service", "member")
    }
    for entry in services:
        name, kind, url = entry.split(":", 2)
        user = ensure(
            lambda: idn.find_user(name, domain_id=domain.id),
            lambda: idn.create_user(name=name, password=password, domain_id=domain.id),
        )
        for role in ("admin", "service"):
            idn.assign_project_role_to_user(service_project, user, roles[role])
        service = ensure(
            lambda: idn.find_service(kind), lambda: idn.create_service(name=name, type=kind)
        )
        have = {e.interface for e in idn.endpoints(service_id=service.id)}
        for interface in ("public", "internal", "admin"):
            if interface not in have:
                idn.create_endpoint(
                    service_id=service.id, interface=interface, url=url, region_id=region
                )
    vpod_project = ensure(
        lambda: idn.find_project("vpod", domain_id=domain.id),
        lambda: idn.create_project(name="vpod", domain_id=domain.id),
    )
    vpod_user = ensure(
        lambda: idn.find_user("vpod", domain_id=domain.id),
        lambda: idn.create_user(name="vpod", password=vpod_password, domain_id=domain.id),
    )
    idn.assign_project_role_to_user(vpod_project, vpod_user, roles["member"])


def content(image_file):
    conn = admin()
    for _ in range(300):  # nova-compute reports in, then Placement knows its resources
        up = [s for s in conn.compute.services() if s.binary == "nova-compute" and s.state == "up"]
        if up:
            break
        time.sleep(1)
    else:
        sys.exit("nova-compute never reported in: see its log")
    # VMs boot from volumes (no disk); bare metal boots its image onto its own disk
    for name, vcpus, ram, disk in (
        ("vpod.poplar", 8, 4096, 0),
        ("vpod.gpu", 16, 8192, 0),
        ("vpod.metal", 16, 8192, 1),
    ):
        if conn.compute.find_flavor(name) is None:
            conn.compute.create_flavor(name=name, vcpus=vcpus, ram=ram, disk=disk)
    if conn.image.find_image("vpod-poplar-sdk") is None:
        conn.create_image(
            "vpod-poplar-sdk",
            filename=image_file,
            disk_format="raw",
            container_format="bare",
            visibility="public",
            wait=True,
        )
    project = conn.identity.find_project("vpod")
    conn.set_compute_quotas(project.id, instances=200, cores=4000, ram=2000000, key_pairs=200)
    conn.set_volume_quotas(project.id, volumes=400, gigabytes=100000)
    conn.set_network_quotas(
        project.id,
        network=200,
        subnet=200,
        port=1000,
        security_group=200,
        security_group_rule=4000,
    )


def warm():
    """Neutron 21 names a relation of ports (``Port.port_forwardings``) that SQLAlchemy makes at
    the first query of an API worker: a fresh worker whose first request lists ports fails it
    (500) until another query ran. List networks first, then check the ports answer."""
    conn = admin()
    for _ in range(20):
        try:
            list(conn.network.networks())
            list(conn.network.ports())
            list(conn.network.ports(name="vpod-warm"))
            return
        except openstack.exceptions.HttpException:
            time.sleep(0.5)
    sys.exit("Neutron keeps failing to list ports: see its log")


def volumes(log_dir, wait_s=150):
    """Until cinder-scheduler knows a volume backend (its pools): it learns them from
    cinder-volume, at the scheduler's start or at cinder-volume's next report (every minute),
    and fails every volume asked for before ("No valid backend was found")."""
    conn = admin()
    deadline = time.monotonic() + wait_s
    while not list(conn.block_storage.backend_pools()):
        if time.monotonic() > deadline:
            sys.exit(
                f"cinder-scheduler knows no volume backend after {wait_s} s: see"
                f" {log_dir}/cinder-volume.log and cinder-scheduler.log"
            )
        time.sleep(1)


def compute(log_dir, wait_s=150):
    """Until nova-compute reports itself up and its host is a provider in Placement. A
    compute service restarted after a while stays "down" for the scheduler until its first
    report (every 10 s), and every server asked for before fails ("No valid host")."""
    conn = admin()
    deadline = time.monotonic() + wait_s
    while True:
        services = [s for s in conn.compute.services() if s.binary == "nova-compute"]
        up = any(s.state == "up" and s.status == "enabled" for s in services)
        if up and list(conn.placement.resource_providers()):
            return
        if time.monotonic() > deadline:
            sys.exit(
                f"nova-compute is not up with an inventory after {wait_s} s: see"
                f" {log_dir}/nova-compute.log"
            )
        time.sleep(1)


if __name__ == "__main__":
    if sys.argv[1] == "warm":
        warm()
    elif sys.argv[1] == "compute":
        compute(sys.argv[2])
    elif sys.argv[1] == "volumes":
        volumes(sys.argv[2])
    elif sys.argv[1] == "catalog":
        catalog(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:])
    else:
        content(sys.argv[2])
