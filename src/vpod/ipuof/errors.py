"""The exceptions of :mod:`vpod.ipuof`: one tree, each message one line a person can act on.

::

    IpuofError                     anything that keeps an application from its IPUs
    ├── ConfigNotFound             no IPUOF_VIPU_API_*, no IPUOF_CONFIG_PATH, no *.conf file
    ├── ConfigInvalid              a config file or variable that cannot be used
    ├── PartitionUnavailable       the controller refused: unknown partition, no access ...
    │   └── PartitionNotReady      not ACTIVE before IPUOF_VIPU_API_TIMEOUT (.partition_id, .state)
    ├── ControllerUnreachable      the V-IPU controller did not answer
    ├── DeviceNotFound             no device with that id in the listing
    └── AttachRefused              an IPUoF endpoint said no (.reason: ipu-attached, ...)
        ├── DeviceBusy             another process holds an IPU (.holder says who)
        └── DeviceLost             the machine ended the attachment (reset, release, fault)

``exit_code`` is what the console scripts exit with: 2 for configuration
mistakes (fix the command or environment), 1 for the rest.
"""

from __future__ import annotations


class IpuofError(Exception):
    """Something keeps the application from its IPUs; ``str()`` is one line."""

    exit_code = 1

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(message.split()))

    @property
    def message(self) -> str:
        return str(self)


class ConfigNotFound(IpuofError):
    exit_code = 2


class ConfigInvalid(IpuofError):
    exit_code = 2


class PartitionUnavailable(IpuofError):
    exit_code = 2

    def __init__(self, message: str, partition_id: str = "") -> None:
        super().__init__(message)
        self.partition_id = partition_id


class PartitionNotReady(PartitionUnavailable):
    exit_code = 1

    def __init__(self, message: str, partition_id: str, state: str) -> None:
        super().__init__(message, partition_id)
        self.state = state


class ControllerUnreachable(IpuofError):
    pass


class DeviceNotFound(IpuofError):
    exit_code = 2


class AttachRefused(IpuofError):
    def __init__(self, message: str, reason: str = "") -> None:
        super().__init__(message)
        self.reason = reason


class DeviceBusy(AttachRefused):
    def __init__(self, message: str, holder: str) -> None:
        super().__init__(message, "ipu-attached")
        self.holder = holder


class DeviceLost(AttachRefused):
    pass


__all__ = [
    "AttachRefused",
    "ConfigInvalid",
    "ConfigNotFound",
    "ControllerUnreachable",
    "DeviceBusy",
    "DeviceLost",
    "DeviceNotFound",
    "IpuofError",
    "PartitionNotReady",
    "PartitionUnavailable",
]
