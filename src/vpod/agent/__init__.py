"""The V-IPU agent (VIRM): gRPC service over an emulated IPU-Machine.

Public surface, by module (import from the module; this package imports
nothing so that ``import vpod.agent.model`` stays free of gRPC):

- :mod:`~vpod.agent.client`: ``AgentClient``, ``ChannelPool`` (the controller's side)
- :mod:`~vpod.agent.errors`: ``AgentError`` tree (client), ``MachineRefusal`` tree
  (backend), ``Reason``
- :mod:`~vpod.agent.model`: the values both sides exchange (``PartitionConfig``,
  ``MachineIdentity``, ``MachineHealth``, ``Fault``, ``AgentEvent`` ...)
- :mod:`~vpod.agent.backend`: ``MachineBackend``, what a hardware backend implements
- :mod:`~vpod.agent.emulated`: ``EmulatedMachine``
- :mod:`~vpod.agent.host`: ``AgentHost``, ``AgentFleet``, ``FleetSettings``
- :mod:`~vpod.agent.addressing`: ``AddressPlan`` (where each machine listens)

The protocol is documented in ``docs/agent-protocol.md``.
"""
