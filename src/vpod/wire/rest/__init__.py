"""REST shapes defined once: the controller's transports answer with them, its use-cases
build them, and ``vpod.client`` reads its answers into them (byte-for-byte the JSON the
OpenAPI document describes)."""
