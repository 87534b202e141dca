"""The V-IPU agent (VIRM): gRPC service over a machine backend (emulated today).

Public surface, by module (import from the module; this package imports
nothing so that ``import vpod.agent.model`` stays free of gRPC):

- :mod:`~vpod.agent.client`: ``AgentClient``, ``ChannelPool`` (the controller's side)
- :mod:`~vpod.agent.errors`: ``AgentError`` tree (client), ``MachineRefusal`` tree
  (backend), ``Reason``
- :mod:`~vpod.agent.model`: the values both sides exchange (``PartitionConfig``,
  ``MachineIdentity``, ``MachineHealth``, ``Fault``, ``AgentEvent`` ...)
- :mod:`~vpod.agent.backend`: ``MachineBackend`` (async; what a hardware backend
  implements), ``IpuofSessions`` (a software IPUoF server's hooks), ``EmulatorControls``
- :mod:`~vpod.agent.emulated`: ``EmulatedMachine`` (the synchronous emulator)
- :mod:`~vpod.agent.emulated_backend`: ``EmulatedBackend`` (the emulator behind the seam)
- :mod:`~vpod.agent.host`: ``AgentHost`` (one machine's agent, typed against the seam)
- :mod:`~vpod.agent.fleet`: ``AgentFleet``, ``FleetSettings`` (the composition root)
- :mod:`~vpod.agent.addressing`: ``AddressPlan`` (where each machine listens)

The protocol is documented in ``docs/agent-protocol.md``.
"""
