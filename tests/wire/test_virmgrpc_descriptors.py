"""The generated V-IPU user API matches the wire spec field for field.

The tables below are transcribed from the V-IPU user API spec (``spec/vipu-user-api.md``).
Field types are written the way the spec writes them: a scalar name, a
message or enum name, ``repeated X`` or ``map<K,V>``.
"""

from __future__ import annotations

import pytest
from google.protobuf import descriptor_pb2
from google.protobuf.descriptor import Descriptor, EnumDescriptor, FieldDescriptor

from vpod.wire import virmgrpc_pb2

MESSAGES: dict[str, dict[int, tuple[str, str]]] = {
    "VersionRequest": {},
    "VersionReply": {1: ("version", "string")},
    "PartitionIpu": {
        1: ("ipulink_domain_topology_id", "uint32"),
        2: ("ipulink_domain_routing_id", "uint32"),
        3: ("topology_id", "uint32"),
        4: ("routing_id", "uint32"),
    },
    "PartitionSpec": {
        1: ("cluster_id", "string"),
        2: ("ipus", "repeated PartitionIpu"),
        3: ("ipulink_routing_type", "IpuLinkRoutingType"),
        4: ("sync_type", "SyncType"),
        5: ("num_gcds", "uint32"),
        6: ("num_ipulink_segments", "uint32"),
        7: ("reconfigurable", "bool"),
        8: ("gw_routing_type", "GatewayRoutingType"),
        9: ("num_replicas", "uint32"),
        10: ("allocation_id", "string"),
    },
    "Partition": {
        1: ("id", "string"),
        2: ("spec", "PartitionSpec"),
        3: ("ready_state", "PartitionReadyState"),
        4: ("ipuof_server_version", "string"),
    },
    "ListPartitionsRequest": {1: ("allocation_id", "string")},
    "ListPartitionsReply": {1: ("partitions", "repeated Partition")},
    "PartitionRequirements": {
        1: ("id", "string"),
        2: ("size", "uint32"),
        3: ("cluster_id", "string"),
        4: ("ipulink_routing_type", "IpuLinkRoutingType"),
        5: ("num_ipulink_segments", "uint32"),
        6: ("gw_routing_type", "GatewayRoutingType"),
        7: ("sync_type", "SyncType"),
        8: ("num_gcds", "uint32"),
        9: ("reconfigurable", "bool"),
        10: ("num_replicas", "uint32"),
        11: ("allocation_id", "string"),
        12: ("ipus", "repeated PartitionIpu"),
    },
    "CreatePartitionRequest": {
        2: ("requirements", "PartitionRequirements"),
        3: ("disable_auto_reset", "bool"),
        5: ("relocatable", "bool"),
    },
    "CreatePartitionReply": {1: ("partition_id", "string")},
    "IpuofDevice": {
        1: ("ip", "string"),
        2: ("server_port", "uint32"),
        3: ("rdma_port", "uint32"),
        4: ("device_id", "uint32"),
        5: ("ipulink_segment_id", "uint32"),
        6: ("routing_id", "uint32"),
        7: ("ipu_arch_id", "uint32"),
        8: ("ipu_id", "uint32"),
        9: ("chip_id", "string"),
        10: ("gwsw_version", "string"),
        11: ("ipum_sw_version", "string"),
    },
    "PartitionConfig.Gcd": {
        2: ("devices", "repeated IpuofDevice"),
        3: ("attributes", "map<string,string>"),
    },
    "PartitionConfig": {
        2: ("ipulink_routing_type", "IpuLinkRoutingType"),
        3: ("sync_type", "SyncType"),
        5: ("reconfigurable", "bool"),
        6: ("gw_routing_type", "GatewayRoutingType"),
        7: ("num_ipulink_segments", "uint32"),
        8: ("gcd_configs", "repeated PartitionConfig.Gcd"),
        9: ("ipuof_server_version", "string"),
    },
    "GetPartitionIpuofConfigRequest.GcdID": {1: ("id", "uint32")},
    "GetPartitionIpuofConfigRequest": {
        1: ("partition_id", "string"),
        2: ("gcd_id", "GetPartitionIpuofConfigRequest.GcdID"),
    },
    "GetPartitionIpuofConfigReply": {1: ("ipuof_config", "PartitionConfig")},
    "ResetPartitionRequest": {1: ("partition_id", "string"), 2: ("relocatable", "bool")},
    "ResetPartitionReply": {},
    "RemovePartitionRequest": {1: ("partition_id", "string"), 2: ("force", "bool")},
    "RemovePartitionReply": {},
    "PartitionStatus": {
        1: ("partition_id", "string"),
        2: ("ready_state", "PartitionReadyState"),
        3: ("operation_state", "PartitionOperationState"),
        4: ("errors", "repeated string"),
        5: ("max_auto_reset_retries", "uint32"),
        6: ("auto_reset_retry_count", "uint32"),
        7: ("last_auto_reset_time", "google.protobuf.Timestamp"),
    },
    "GetPartitionStatusRequest": {1: ("partition_id", "string")},
    "GetPartitionStatusReply": {1: ("status", "PartitionStatus")},
    "AllocationSpec": {1: ("cluster_id", "string"), 2: ("agent_ids", "repeated string")},
    "Allocation": {1: ("id", "string"), 2: ("spec", "AllocationSpec")},
    "ListIPUAttributesRequest": {1: ("agents", "repeated string")},
    "ListIPUAttributesReply": {1: ("entries", "repeated ListIPUAttributesReply.Entry")},
    "ListIPUAttributesReply.Entry": {
        1: ("agent", "string"),
        2: ("ipu_attributes", "map<uint32,ListIPUAttributesReply.Entry.Attributes>"),
    },
    "ListIPUAttributesReply.Entry.Attributes": {1: ("attributes", "map<string,string>")},
}

ENUMS: dict[str, dict[str, int]] = {
    "IpuLinkRoutingType": {
        "IRT_UNDEFINED": 0,
        "IRT_DNC": 1,
        "IRT_SWNC": 2,
        "IRT_BTNC": 3,
        "IRT_RINGSWNC": 4,
    },
    "GatewayRoutingType": {"GRT_UNDEFINED": 0, "GRT_RING": 2, "GRT_SWRING": 3},
    "SyncType": {
        "ST_UNDEFINED": 0,
        "ST_GS2_DEFAULT": 1,
        "ST_GS2_INDEPENDENT_RAILS": 2,
        "ST_POD_NATIVE_DEFAULT": 3,
        "ST_POD_NATIVE_REPLICATED_PIPELINE": 4,
    },
    "PartitionReadyState": {
        "PS_UNDEFINED": 0,
        "PS_PENDING": 1,
        "PS_ACTIVE": 2,
        "PS_REMOVED": 3,
        "PS_ERROR": 4,
    },
    "PartitionOperationState": {
        "POS_UNDEFINED": 0,
        "POS_IDLE": 1,
        "POS_CREATING": 2,
        "POS_REMOVING": 3,
        "POS_RESETTING": 4,
        "POS_FAILED": 5,
    },
}

SERVICES: dict[str, dict[str, tuple[str, str]]] = {
    "VersionService": {"GetVersion": ("VersionRequest", "VersionReply")},
    "UserService": {
        "ListPartitions": ("ListPartitionsRequest", "ListPartitionsReply"),
        "ListIPUAttributes": ("ListIPUAttributesRequest", "ListIPUAttributesReply"),
        "CreatePartition": ("CreatePartitionRequest", "CreatePartitionReply"),
        "RemovePartition": ("RemovePartitionRequest", "RemovePartitionReply"),
        "ResetPartition": ("ResetPartitionRequest", "ResetPartitionReply"),
        "GetPartitionIpuofConfig": (
            "GetPartitionIpuofConfigRequest",
            "GetPartitionIpuofConfigReply",
        ),
        "GetPartitionStatus": ("GetPartitionStatusRequest", "GetPartitionStatusReply"),
    },
}

_SCALARS = {
    FieldDescriptor.TYPE_STRING: "string",
    FieldDescriptor.TYPE_UINT32: "uint32",
    FieldDescriptor.TYPE_BOOL: "bool",
    FieldDescriptor.TYPE_UINT64: "uint64",
    FieldDescriptor.TYPE_INT32: "int32",
    FieldDescriptor.TYPE_INT64: "int64",
    FieldDescriptor.TYPE_BYTES: "bytes",
    FieldDescriptor.TYPE_DOUBLE: "double",
}


def _local_name(full_name: str) -> str:
    return full_name.removeprefix("virmgrpc.")


def _value_type(field: FieldDescriptor) -> str:
    if field.message_type is not None:
        return _local_name(field.message_type.full_name)
    if field.enum_type is not None:
        return _local_name(field.enum_type.full_name)
    return _SCALARS[field.type]


def spec_type(field: FieldDescriptor) -> str:
    """Write a field's type the way the spec tables do."""
    entry = field.message_type
    if entry is not None and entry.GetOptions().map_entry:
        key, value = entry.fields_by_name["key"], entry.fields_by_name["value"]
        return f"map<{_value_type(key)},{_value_type(value)}>"
    if field.is_repeated:
        return f"repeated {_value_type(field)}"
    return _value_type(field)


def _message(name: str) -> Descriptor:
    head, *nested = name.split(".")
    desc: Descriptor = virmgrpc_pb2.DESCRIPTOR.message_types_by_name[head]
    for part in nested:
        desc = desc.nested_types_by_name[part]
    return desc


def test_package_is_virmgrpc() -> None:
    """Clients address the services as virmgrpc.VersionService and virmgrpc.UserService."""
    assert virmgrpc_pb2.DESCRIPTOR.package == "virmgrpc"
    proto = descriptor_pb2.FileDescriptorProto()
    virmgrpc_pb2.DESCRIPTOR.CopyToProto(proto)
    assert proto.syntax == "proto3"


@pytest.mark.parametrize("name", sorted(MESSAGES))
def test_message_fields_match_spec(name: str) -> None:
    """Every field has the spec's number, name and type, and no other field exists."""
    desc = _message(name)
    actual = {f.number: (f.name, spec_type(f)) for f in desc.fields}
    assert actual == MESSAGES[name]


def test_every_top_level_message_is_in_the_spec() -> None:
    """The proto declares no message the spec does not name."""
    declared = set(virmgrpc_pb2.DESCRIPTOR.message_types_by_name)
    assert declared == {name for name in MESSAGES if "." not in name}


@pytest.mark.parametrize("name", sorted(ENUMS))
def test_enum_values_match_spec(name: str) -> None:
    """Every enum has exactly the spec's value names and numbers."""
    desc: EnumDescriptor = virmgrpc_pb2.DESCRIPTOR.enum_types_by_name[name]
    assert {v.name: v.number for v in desc.values} == ENUMS[name]


def test_no_enum_outside_the_spec() -> None:
    assert set(virmgrpc_pb2.DESCRIPTOR.enum_types_by_name) == set(ENUMS)


@pytest.mark.parametrize("service", sorted(SERVICES))
def test_service_methods_match_spec(service: str) -> None:
    """Each service has the spec's unary rpcs with the spec's request and reply types."""
    desc = virmgrpc_pb2.DESCRIPTOR.services_by_name[service]
    assert desc.full_name == f"virmgrpc.{service}"
    actual = {
        m.name: (_local_name(m.input_type.full_name), _local_name(m.output_type.full_name))
        for m in desc.methods
    }
    assert actual == SERVICES[service]
    assert not any(m.client_streaming or m.server_streaming for m in desc.methods)


def test_create_partition_request_reserves_unused_numbers() -> None:
    """Field numbers 1 and 4 of CreatePartitionRequest are reserved so nobody reuses them."""
    proto = descriptor_pb2.DescriptorProto()
    virmgrpc_pb2.CreatePartitionRequest.DESCRIPTOR.CopyToProto(proto)
    reserved = {n for r in proto.reserved_range for n in range(r.start, r.end)}
    assert reserved == {1, 4}


def test_timestamp_is_the_well_known_type() -> None:
    """last_auto_reset_time round-trips as a google.protobuf.Timestamp."""
    status = virmgrpc_pb2.PartitionStatus(partition_id="p")
    status.last_auto_reset_time.FromSeconds(1_700_000_000)
    again = virmgrpc_pb2.PartitionStatus.FromString(status.SerializeToString())
    assert again.last_auto_reset_time.ToSeconds() == 1_700_000_000
