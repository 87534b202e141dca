"""The agent package's two exception trees.

On the agent, a :class:`~vpod.agent.backend.MachineBackend` refuses a request
with a :class:`MachineRefusal`; the gRPC service turns it into a status code,
the message, and the :class:`Reason` in trailing metadata ``vpod-reason``::

    MachineRefusal                 the machine will not do what was asked
    ├── InvalidRequest             malformed request                 -> INVALID_ARGUMENT
    ├── UnknownPartition           nothing configured under that id  -> NOT_FOUND
    └── MachineConflict            the machine's state forbids it    -> FAILED_PRECONDITION
                                   (IPU busy or faulted, link down, stale generation ...)

On the controller, :class:`~vpod.agent.client.AgentClient` raises only these
(no gRPC exception leaks out)::

    AgentError                     a call to an agent did not succeed
    ├── AgentUnavailable           unreachable, or no answer in time: temporary, retry later
    │   └── AgentTimeout           the call's deadline passed (the agent may have acted)
    ├── AgentRefused               the agent answered no: permanent for this request
    └── AgentFailed                the agent broke while handling the call (a bug)

Both trees are :class:`~vpod.domain.errors.Fault` s: a kind, temporary or not, and a
message that is a sentence a person can act on.
"""

from __future__ import annotations

import enum

from vpod.domain.errors import Fault, Kind

REASON_KEY = "vpod-reason"
"""gRPC trailing metadata key that carries the :class:`Reason` of a refusal."""


class Reason(enum.StrEnum):
    """Why a machine refused: stable strings a program can branch on."""

    INVALID_REQUEST = "invalid-request"
    UNKNOWN_PARTITION = "unknown-partition"
    IPU_BUSY = "ipu-busy"
    """The IPU is configured into another partition."""
    IPU_FAULTED = "ipu-faulted"
    LINK_DOWN = "link-down"
    STALE_GENERATION = "stale-generation"
    """A newer configuration of the partition is in force."""
    CONFLICTING_CONFIG = "conflicting-config"
    """The same partition and generation was configured differently before."""
    IPU_NOT_CONFIGURED = "ipu-not-configured"
    """IPUoF: the IPU is in no active partition."""
    WRONG_PARTITION = "wrong-partition"
    """IPUoF: the IPU belongs to another partition."""
    IPU_ATTACHED = "ipu-attached"
    """IPUoF: another application holds the IPU; or a reset asked to spare partitions in use
    found one in use."""
    FAULT_INJECTION_DISABLED = "fault-injection-disabled"
    """The agent was not started with ``--enable-fault-injection``."""
    UNKNOWN = "unknown"


# ----------------------------------------------------------------- agent side


class MachineRefusal(Fault):
    """The machine will not do what was asked; ``reason`` says why for programs."""

    kind = Kind.FAILED_PRECONDITION

    default_reason = Reason.UNKNOWN

    def __init__(self, message: str, reason: Reason | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.reason = reason or self.default_reason


class InvalidRequest(MachineRefusal):
    kind = Kind.INVALID_ARGUMENT
    default_reason = Reason.INVALID_REQUEST


class UnknownPartition(MachineRefusal):
    kind = Kind.NOT_FOUND
    default_reason = Reason.UNKNOWN_PARTITION


class MachineConflict(MachineRefusal):
    """The request is well formed but the machine's current state forbids it."""

    kind = Kind.FAILED_PRECONDITION


# ------------------------------------------------------------ controller side


class AgentError(Fault):
    """A call to agent ``agent`` did not succeed."""

    def __init__(self, agent: str, message: str) -> None:
        super().__init__(message)
        self.agent = agent
        self.message = message


class AgentUnavailable(AgentError):
    """The agent could not be reached or did not answer in time; trying again may work."""

    kind = Kind.UNAVAILABLE
    temporary = True

    def __init__(self, agent: str, message: str, cause: str = "") -> None:
        super().__init__(agent, message)
        self.cause = cause


class AgentTimeout(AgentUnavailable):
    """No answer before the deadline; the agent may still have carried the call out."""

    kind = Kind.DEADLINE_EXCEEDED


class AgentRefused(AgentError):
    """The agent answered and refused; the same request will be refused again."""

    kind = Kind.FAILED_PRECONDITION

    def __init__(self, agent: str, message: str, reason: Reason, code: str) -> None:
        super().__init__(agent, message)
        self.reason = reason
        self.code = code
        """The gRPC status code name, e.g. ``FAILED_PRECONDITION``."""


class AgentFailed(AgentError):
    """The agent failed internally or does not speak this protocol version."""

    kind = Kind.INTERNAL

    def __init__(self, agent: str, message: str, code: str) -> None:
        super().__init__(agent, message)
        self.code = code
