"""``vipu list allocations`` on the user endpoint.

The V-IPU user API has no allocation rpc, so ``vipu list allocations`` calls
the admin service's ``ListAllocations`` (with the caller's own credentials;
a user sees only the allocations granted to it). Serving that one method on
the user endpoint too means a user — a tenant's server in a vPOD above all —
never needs to reach the admin endpoint, which may listen on another network
or not be reachable at all. Every other admin method answers UNIMPLEMENTED
here (the method is not registered), so the user port gives no other admin call.
"""

from __future__ import annotations

import grpc

from vpod.wire import admin_pb2 as apb

from .admin_grpc import AdminServicer


def add_user_allocations(server: grpc.aio.Server, admin: AdminServicer) -> None:
    """Register ``admin``'s ``ListAllocations``, and nothing else of its service, on ``server``."""
    handler = grpc.method_handlers_generic_handler(
        apb.DESCRIPTOR.services_by_name["AdminService"].full_name,
        {
            "ListAllocations": grpc.unary_unary_rpc_method_handler(
                admin.ListAllocations,
                request_deserializer=apb.ListAllocationsRequest.FromString,
                response_serializer=apb.ListAllocationsReply.SerializeToString,
            )
        },
    )
    server.add_generic_rpc_handlers((handler,))
