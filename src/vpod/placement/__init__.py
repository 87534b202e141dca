"""Pure placement engine: snapshot + request -> Placement | Rejected."""
