"""One openstacksdk connection for the OpenStack drivers, and OpenStack's errors in the cloud's.

openstacksdk is synchronous: every call runs in a worker thread (:meth:`Session.call`) so
the controller's event loop never waits on Nova or Cinder. What OpenStack raises becomes a
:class:`DriverError` with a sentence, or a :class:`TemporaryDriverError` (retried by the task
runner with backoff) when the same call may succeed later:

===========================================  =============
OpenStack says                                 vpod raises
===========================================  =============
no connection, a timeout, HTTP 5xx, 429,       temporary
409 (busy: "while it is in task_state ..."),
a wait that ran out
HTTP 400, 401, 403 (a quota, a policy), 404,   permanent
a resource that went to ERROR
===========================================  =============
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from .base import DriverError, TemporaryDriverError
from .openstack_options import OpenStackOptions

if TYPE_CHECKING:
    from openstack.connection import Connection

T = TypeVar("T")

TEMPORARY_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})


def translate(exc: Exception, doing: str) -> DriverError:
    """``exc`` (raised by openstacksdk or keystoneauth while ``doing``) as the cloud's error."""
    from keystoneauth1 import exceptions as ks
    from openstack import exceptions as sdk

    if isinstance(exc, DriverError):
        return exc
    if isinstance(exc, sdk.ResourceTimeout):
        return TemporaryDriverError(f"OpenStack, {doing}: still not done: {exc}")
    if isinstance(exc, sdk.ResourceFailure):
        return DriverError(f"OpenStack, {doing}: {exc}")
    if isinstance(exc, sdk.HttpException):
        status = exc.status_code or 0
        detail = exc.details or exc.message or str(exc)
        text = f"OpenStack, {doing}: HTTP {status}: {detail}"
        if status in TEMPORARY_STATUS:
            return TemporaryDriverError(text)
        return DriverError(text)
    if isinstance(exc, ks.ConnectionError | ks.RetriableConnectionFailure | OSError):
        return TemporaryDriverError(f"OpenStack, {doing}: cannot reach it: {exc}")
    if isinstance(exc, ks.http.HttpError):
        status = int(getattr(exc, "http_status", 0) or 0)
        text = f"OpenStack, {doing}: HTTP {status}: {exc}"
        return TemporaryDriverError(text) if status in TEMPORARY_STATUS else DriverError(text)
    if isinstance(exc, ks.ClientException | sdk.SDKException):
        # authentication, a missing endpoint, clouds.yaml: the operator's to fix
        return DriverError(f"OpenStack, {doing}: {exc}")
    raise exc


def wait_for(
    fetch: Callable[[], T],
    status_of: Callable[[T], str],
    wanted: tuple[str, ...],
    failed: tuple[str, ...],
    wait_s: float,
    what: str,
    why: Callable[[T], str] | None = None,
) -> T:
    """Ask ``fetch()`` every second until its status is one of ``wanted`` (any of them: a
    shelved server may go straight to SHELVED_OFFLOADED). A status in ``failed`` raises
    :class:`DriverError` (with ``why(it)``, the service's own reason, where given); still
    not there after ``wait_s``: :class:`TemporaryDriverError`."""
    deadline = time.monotonic() + wait_s
    while True:
        current = fetch()
        status = status_of(current)
        if status in wanted:
            return current
        if status in failed:
            reason = why(current) if why is not None else ""
            raise DriverError(f"{what} is {status}" + (f": {reason}" if reason else ""))
        if time.monotonic() >= deadline:
            raise TemporaryDriverError(
                f"{what} is still {status} after {wait_s:.0f} s, not {' or '.join(wanted)}"
            )
        time.sleep(1.0)


class Session:
    """A lazily made connection to the cloud ``options.cloud`` of clouds.yaml."""

    def __init__(self, options: OpenStackOptions) -> None:
        self.options = options
        self._lock = threading.Lock()
        self._connection: Connection | None = None

    def connection(self) -> Connection:
        with self._lock:
            if self._connection is None:
                import openstack
                from openstack.config.exceptions import OpenStackConfigException

                try:
                    self._connection = openstack.connect(
                        cloud=self.options.cloud, region_name=self.options.region or None
                    )
                except OpenStackConfigException as exc:
                    raise DriverError(
                        f"OpenStack: cloud {self.options.cloud!r} of clouds.yaml cannot be"
                        f" used: {exc} (set [openstack] cloud in cloud.toml, and"
                        " OS_CLIENT_CONFIG_FILE where clouds.yaml is not in the usual places)"
                    ) from None
            return self._connection

    async def call(self, doing: str, fn: Callable[[Connection], T]) -> T:
        """``fn(connection)`` in a worker thread; OpenStack's errors translated."""

        def run() -> T:
            try:
                return fn(self.connection())
            except Exception as exc:  # translated, or raised again when it is no OpenStack's
                raise translate(exc, doing) from exc

        return await asyncio.to_thread(run)
