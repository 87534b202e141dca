"""The pod map's shapes are defined once (vpod.wire.rest.pod_map): the use-case builds them,
the transport answers with them and the client reads its answers back into them, equal."""

from __future__ import annotations

import json

from fastapi.routing import APIRoute

from vpod.client import fabric
from vpod.controller import pod_map as use_case
from vpod.controller.transports.rest_console import router
from vpod.wire.rest import pod_map as shapes

CELL = {
    "slot": 0,
    "device_id": 3,
    "position": 0,
    "partition_id": "p1",
    "fault": "",
    "utilisation": 12.5,
    "process": "train.py (pid 7)",
}
CLUSTER = {
    "id": "pod",
    "machine_type": "bow-2000",
    "ild_topology": "mesh",
    "gw_topology": "looped",
    "num_ipus": 4,
    "domains": [
        {
            "index": 0,
            "topology": "mesh",
            "machines": [
                {
                    "index": 0,
                    "agent_id": "ag1",
                    "allocation_id": "alloc-a",
                    "reachable": True,
                    "state": "reachable",
                    "reason": "",
                    "links_down": [],
                    "ipus": [CELL],
                }
            ],
        }
    ],
    "gw_links": [{"a": 0, "b": 1}],
    "allocations": [{"id": "alloc-a", "machines": [0], "size": 4}],
    "partitions": [
        {
            "id": "p1",
            "allocation_id": "alloc-a",
            "cluster_id": "pod",
            "size": 1,
            "ready_state": "READY",
            "operation_state": "IDLE",
            "slots": [0],
        }
    ],
}
FRAGMENTATION = {
    "allocation_id": "alloc-a",
    "cluster_id": "pod",
    "size": 4,
    "free_ipus": 3,
    "unavailable_ipus": 0,
    "largest_free_block": 2,
    "largest_free_block_slots": [2, 3],
    "free_blocks": {"1": 1, "2": 1},
    "sizes": [{"size": 4, "fits": False, "slots": [], "reasons": ["IPU 0 is taken"]}],
}


def test_one_definition_serves_the_use_case_the_transport_and_the_client() -> None:
    for name in ("ClusterMap", "Fragmentation", "PartitionSummary", "SizeOutlook", "GwLink"):
        assert getattr(use_case, name) is getattr(shapes, name)
    for name in ("ClusterMap", "Fragmentation", "Identity", "IpuCell", "MachineMap"):
        assert getattr(fabric, name) is getattr(shapes, name)
    answers = {
        route.path: route.response_model for route in router.routes if isinstance(route, APIRoute)
    }
    assert answers["/api/v1/admin/pod-map"] is shapes.PodMap
    assert answers["/api/v1/admin/allocations/{allocation_id}/fragmentation"] is (
        shapes.Fragmentation
    )
    assert answers["/api/v1/whoami"] is shapes.Identity


def test_what_the_transport_writes_the_client_reads_back_equal_and_writes_the_same() -> None:
    body = json.dumps({"clusters": [CLUSTER]})
    (cluster,) = fabric.pod_map(None).parse(json.loads(body))
    assert shapes.PodMap(clusters=(cluster,)).model_dump_json() == json.dumps(
        {"clusters": [CLUSTER]}, separators=(",", ":")
    )
    assert [ipu.process for ipu in cluster.ipus()] == ["train.py (pid 7)"]
    assert cluster.allocation_machines() == {"alloc-a": (0,)}
    assert cluster.gw_links == (shapes.GwLink(a=0, b=1),)
    found = fabric.fragmentation("alloc-a").parse(FRAGMENTATION)
    assert found.free_blocks == {1: 1, 2: 1}
    assert json.loads(found.model_dump_json()) == FRAGMENTATION
    me = fabric.whoami().parse(
        {"user_id": "bob", "admin": False, "allocation_ids": ["alloc-a"], "secure": True}
    )
    assert me.allocation_ids == ("alloc-a",)
