"""REST shapes defined once, a module per concept: the controller's transports take and
answer with them, its use-cases build some, and ``vpod.client`` reads its answers into
them (byte-for-byte the JSON the OpenAPI document describes)."""
