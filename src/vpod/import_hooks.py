"""Import hooks that keep vpod's processes from loading what they never run.

A process pays for every module it imports each time it starts, and vpod starts
many (each ``vpod`` command, each controller and agent). Two third-party imports
pull in large packages that vpod's processes never use:

* ``import httpx`` imports its own command line client (``httpx._main``: click, rich,
  pygments) whenever those are installed, as they are beside vpod. Every process
  that imports ``vpod`` gets :class:`HttpxCliOnDemand`.
* ``import httpcore`` (under httpx) imports trio whenever trio is installed, as it is
  wherever selenium is (vpod's test dependencies, which ``scripts/bootstrap`` installs):
  0.13 s of CPU, a sixth of a ``vpod`` cloud command. Trio only matters to code that
  runs httpx under trio's event loop, and neither a ``vpod`` command nor
  ``vpod-gpu-agent`` does, so their entry points call :func:`httpcore_without_trio`
  (httpx imports httpcore when its first client is made). A library user of
  ``vpod.client`` is left as they are.
"""

from __future__ import annotations

import sys
from importlib.machinery import ModuleSpec, PathFinder
from types import ModuleType
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from importlib.abc import Loader


class HttpxCliOnDemand:
    """Answers ``import httpx._main`` with a stand-in whose ``main`` loads and runs the real
    command line client when called (``httpx.main``, the ``httpx`` command)."""

    NAME = "httpx._main"

    def find_spec(self, name: str, *_: object) -> ModuleSpec | None:
        # A loader by its methods (importlib.abc, its base class, costs 40 ms to import).
        return ModuleSpec(name, self) if name == self.NAME else None  # type: ignore[arg-type]

    def create_module(self, _: ModuleSpec) -> None:
        return None  # the default module

    def exec_module(self, module: ModuleType) -> None:
        module.main = _real_httpx_main  # type: ignore[attr-defined]


def _real_httpx_main(*args: object, **kwargs: object) -> object:
    """httpx's command line client, loaded now (the hook steps aside for good)."""
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, HttpxCliOnDemand)]
    sys.modules.pop(HttpxCliOnDemand.NAME, None)
    from httpx._main import main

    return main(*args, **kwargs)


def httpx_cli_on_demand() -> None:
    """Install :class:`HttpxCliOnDemand`, unless httpx is already imported."""
    if "httpx" not in sys.modules:
        sys.meta_path.insert(0, HttpxCliOnDemand())


class _HttpcoreWithoutTrio:
    """Finds ``httpcore`` as the normal path finder does, and runs its package's code with
    trio unimportable: httpcore then leaves its trio backend out, as where trio is not
    installed. Trio itself stays importable for everything else; one use, then gone."""

    NAME = "httpcore"

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> ModuleSpec | None:
        if name != self.NAME:
            return None
        sys.meta_path[:] = [f for f in sys.meta_path if f is not self]
        spec = PathFinder.find_spec(name, path, target)
        if spec is not None and spec.loader is not None:
            # A loader by its methods, as above (importlib.abc is not imported at run time).
            spec.loader = cast("Loader", _TrioHidden(spec.loader))
        return spec


class _TrioHidden:
    """A loader that runs another one's module code while ``import trio`` fails."""

    def __init__(self, loader: Any) -> None:
        self._loader = loader

    def create_module(self, spec: ModuleSpec) -> ModuleType | None:
        made: ModuleType | None = self._loader.create_module(spec)
        return made

    def exec_module(self, module: ModuleType) -> None:
        if "trio" in sys.modules:  # already there: nothing to spare
            self._loader.exec_module(module)
            return
        sys.modules["trio"] = None  # type: ignore[assignment]  # "import trio" raises ImportError
        try:
            self._loader.exec_module(module)
        finally:
            if sys.modules.get("trio", ...) is None:
                del sys.modules["trio"]

    def __getattr__(self, name: str) -> Any:  # get_resource_reader, is_package, ...
        return getattr(self._loader, name)


def httpcore_without_trio() -> None:
    """Make the next ``import httpcore`` leave trio out (see the module's docstring); for the
    entry points of processes that never run httpx under trio. No-op once httpcore is in."""
    if "httpcore" not in sys.modules and not any(
        isinstance(f, _HttpcoreWithoutTrio) for f in sys.meta_path
    ):
        sys.meta_path.insert(0, _HttpcoreWithoutTrio())
