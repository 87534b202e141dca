"""The dynamic way to a partition: ask a V-IPU controller through :mod:`vpod.client`.

``GetPartitionStatus`` first, then ``GetPartitionIpuofConfig`` of the user
API. A partition that exists but is not ACTIVE is waited for, and in the
end the caller says which state it stayed in: the status says so, and the
config call answers ``FAILED_PRECONDITION`` when it changed in between. The
status comes first because a controller serves the recorded config of a
partition whose agent stopped answering (ERROR): attaching to it would fail
at that agent, while waiting lets the partition come back. Credentials and
TLS for a ``--secure`` controller come from ``VIPU_CLI_*`` and
``vipu-cli.hcl``, as for ``vipu``; host and port from
``IPUOF_VIPU_API_HOST``/``_PORT`` win over them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from typing import TYPE_CHECKING

from vpod.client import (
    FailedPrecondition,
    NotFound,
    PartitionStatus,
    PermanentError,
    RetryableError,
    UserClient,
    VpodError,
)
from vpod.domain.partition_states import ReadyState

from .config import IpuofDevice
from .errors import ConfigInvalid, PartitionUnavailable
from .source import Gcds, NotActiveYet, StillUnreachable

if TYPE_CHECKING:
    from vpod.client import records as client_records


def _state_of(status: PartitionStatus) -> str:
    """``ERROR/IDLE``: how a partition that is not ACTIVE is named when it is waited for."""
    ready = status.ready_state.name if status.ready_state else "UNKNOWN"
    operation = status.operation_state.name if status.operation_state else ""
    return f"{ready}/{operation}" if operation else ready


def device_of(device: client_records.IpuofDevice) -> IpuofDevice:
    """An IPUoF device as the controller's answer gives it, as applications read it."""
    # The names match: each field the application's shape declares, from the answer's.
    return IpuofDevice(**{f.name: getattr(device, f.name) for f in fields(IpuofDevice)})


class ControllerSource:
    """A :class:`~.discovery.PartitionSource` over a :class:`vpod.client.UserClient`."""

    def __init__(self, client: UserClient) -> None:
        self._client = client

    @property
    def where(self) -> str:
        return self._client.endpoint.target

    def ipuof_gcds(self, partition_id: str, gcd_id: int | None) -> Gcds:
        try:
            status = self._client.partition_status(partition_id)
            if status.ready_state is not ReadyState.ACTIVE:
                raise NotActiveYet(_state_of(status))
            config = self._client.ipuof_config(partition_id, gcd_id)
        except FailedPrecondition as exc:
            raise NotActiveYet(self._state(partition_id, exc)) from None
        except NotFound:
            raise PartitionUnavailable(
                f"partition {partition_id} does not exist on {self.where} (or is not yours):"
                f" check IPUOF_VIPU_API_PARTITION_ID; 'vipu list partitions' lists yours",
                partition_id,
            ) from None
        except RetryableError as exc:
            raise StillUnreachable(str(exc)) from None
        except PermanentError as exc:
            raise PartitionUnavailable(
                f"partition {partition_id} on {self.where}: {exc}", partition_id
            ) from None
        return [
            (
                [device_of(d) for d in gcd.devices],
                dict(gcd.attributes),
            )
            for gcd in config.gcds
        ]

    def _state(self, partition_id: str, refusal: VpodError) -> str:
        try:
            status = self._client.partition_status(partition_id)
        except VpodError:
            return f"not ready ({refusal})"
        return _state_of(status)

    def close(self) -> None:
        self._client.close()


def controller_source(host: str, port: int, env: Mapping[str, str]) -> ControllerSource:
    try:
        client = UserClient.from_config(env=dict(env), api_host=host, api_port=port)
    except VpodError as exc:
        raise ConfigInvalid(str(exc)) from None
    return ControllerSource(client)
