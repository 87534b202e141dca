"""Pure model of the hardware: catalog, topology, entities, rules and state machines."""
