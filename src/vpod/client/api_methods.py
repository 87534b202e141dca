"""The methods of the clients, declared once for the blocking client and its asyncio twin.

An API's client lists its calls as ``name = api_call(calls.name)``: the
builder (a function of a ``*_calls`` module) takes the method's arguments and
describes the request and how to read its reply (an ``Rpc`` or an
``HttpCall``). On a :class:`Blocking` client the method runs that description
on a blocking transport and returns the record; on an :class:`Async` client it
is a coroutine function returning the same record. So the twins share every
signature, docstring and reply reader, and differ only in their transport.

A builder may also be a *procedure*: a generator that yields call descriptions
(each sent back its record) and :class:`Pause` steps, and returns the result,
such as polling until a partition is ACTIVE. The blocking client runs its steps
with blocking calls and ``time.sleep``, the asyncio twin with awaits, so a
procedure too is written once (sans I/O).
"""

from __future__ import annotations

import functools
import inspect
import time
from collections.abc import Awaitable, Callable, Coroutine, Generator
from dataclasses import dataclass
from typing import Any, Generic, ParamSpec, Protocol, Self, TypeVar, cast, overload

from .errors import OutOfRange, VpodError

P = ParamSpec("P")
T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)


class CallDescription(Protocol[T_co]):
    """A request and how to read its reply: a gRPC ``Rpc`` or an ``HttpCall``."""

    @property
    def parse(self) -> Callable[[Any], T_co]: ...


@dataclass(frozen=True)
class Pause:
    """A step of a procedure: wait ``seconds`` before its next step."""

    seconds: float


Step = CallDescription[Any] | Pause
Procedure = Generator[Step, Any, T]
"""Yields calls (each sent back its record) and pauses; returns the result."""
Built = CallDescription[T] | Procedure[T]


class BlockingTransport(Protocol):
    def invoke(self, call: Any, /) -> Any: ...

    def close(self) -> None: ...


class AsyncTransport(Protocol):
    def invoke(self, call: Any, /) -> Awaitable[Any]: ...

    def close(self) -> Awaitable[None]: ...


class Blocking:
    """A client whose calls block; closing it (or leaving its ``with``) closes its transport."""

    _transport: BlockingTransport

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._transport.close()


class Async:
    """A client whose calls are coroutines; ``async with`` closes its transport."""

    _transport: AsyncTransport

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        await self._transport.close()


class api_call(Generic[P, T]):  # noqa: N801 -- used like a decorator, named like one
    """One call of an API as a method of its clients (see the module's docstring)."""

    def __init__(self, build: Callable[P, Built[T]], *, rest: str | None = None) -> None:
        """``build``: the call's builder; ``rest``: the name of its builder over the REST API
        (in :mod:`.rest_calls`, which the REST client names as its ``rest_builders``), where
        one declaration serves a gRPC client and the REST client: the same signature and
        record, which ``tests/client/test_api_methods.py`` checks. A name, not the function:
        the REST builders read replies with pydantic, which the gRPC clients (and the
        command lines built on them) must start without."""
        self.build = build
        self.rest = rest
        self.__doc__ = build.__doc__
        self._name = getattr(build, "__name__", "")

    def __set_name__(self, owner: type, name: str) -> None:
        self._name = name

    @overload
    def __get__(self, client: None, owner: type) -> Self: ...

    @overload
    def __get__(self, client: Blocking, owner: type) -> Callable[P, T]: ...

    @overload
    def __get__(self, client: Async, owner: type) -> Callable[P, Coroutine[Any, Any, T]]: ...

    def __get__(self, client: object, owner: type) -> object:
        if client is None:
            return self
        build = self._builder(owner)
        if isinstance(client, Async):
            async_transport = client._transport

            async def run_async(*args: P.args, **kwargs: P.kwargs) -> T:
                made = _built(build, self._name, *args, **kwargs)
                if isinstance(made, Generator):
                    return cast(T, await _run_async(made, async_transport))
                return cast(T, await async_transport.invoke(made))

            return self._named(run_async, owner)
        if isinstance(client, Blocking):
            transport = client._transport

            def run(*args: P.args, **kwargs: P.kwargs) -> T:
                made = _built(build, self._name, *args, **kwargs)
                if isinstance(made, Generator):
                    return cast(T, _run(made, transport))
                return cast(T, transport.invoke(made))

            return self._named(run, owner)
        raise TypeError(f"{owner.__name__} is neither a Blocking nor an Async client")

    def _builder(self, owner: type) -> Callable[P, Built[T]]:
        """The REST builder named ``rest`` on a client of the REST API (its class names the
        module of its builders, ``rest_builders``), else ``build``."""
        builders = getattr(owner, "rest_builders", None)
        if self.rest is not None and builders is not None:
            return cast(Callable[P, Built[T]], getattr(builders, self.rest))
        return self.build

    def _named(self, method: Callable[P, Any], owner: type) -> Callable[P, Any]:
        """The method with the builder's parameters and docstring, under its own name."""
        method.__name__ = self._name
        method.__qualname__ = f"{owner.__qualname__}.{self._name}"
        method.__doc__ = self.__doc__
        method.__module__ = owner.__module__
        method.__signature__ = self._signature  # type: ignore[attr-defined]
        return method

    @functools.cached_property
    def _signature(self) -> inspect.Signature:
        # the builder's parameters; its return annotation names the call, not the record
        return inspect.signature(self.build).replace(return_annotation=inspect.Signature.empty)


def _built(
    build: Callable[P, Built[T]], name: str, /, *args: P.args, **kwargs: P.kwargs
) -> Built[T]:
    """What ``build`` describes. The builders check the values they send (``.wire_values``);
    one that slips past them reaches protobuf, which refuses it with a bare ``ValueError`` or
    ``OverflowError``: that is the caller's input, so it is an OutOfRange, not a fault."""
    try:
        return build(*args, **kwargs)
    except (ValueError, OverflowError) as exc:
        if isinstance(exc, VpodError):
            raise
        raise OutOfRange(f"cannot send {name}: {exc}") from exc


def _run(procedure: Procedure[Any], transport: BlockingTransport) -> Any:
    reply: Any = None
    try:
        while True:
            step = procedure.send(reply)
            if isinstance(step, Pause):
                time.sleep(step.seconds)
                reply = None
            else:
                reply = transport.invoke(step)
    except StopIteration as done:
        return done.value


async def _run_async(procedure: Procedure[Any], transport: AsyncTransport) -> Any:
    import asyncio  # here: the blocking clients (each CLI call) need not load it

    reply: Any = None
    try:
        while True:
            step = procedure.send(reply)
            if isinstance(step, Pause):
                await asyncio.sleep(step.seconds)
                reply = None
            else:
                reply = await transport.invoke(step)
    except StopIteration as done:
        return done.value
