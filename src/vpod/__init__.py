"""vpod: an open control plane for AI accelerator pods."""

import os
import sys
from importlib.machinery import ModuleSpec
from types import ModuleType

# vpod's processes start children with a ``preexec_fn`` (so Linux ends them with their
# parent) while gRPC channels are busy; with gRPC's fork support on (grpcio 1.80 and later
# turn it on), the forked child restarts gRPC's poller and aborts with "epoll_wait error:
# Bad file descriptor" before it can exec (grpc/grpc#43055). No vpod process uses gRPC in a
# forked child, so the support is turned off before gRPC is first imported; set the
# variable yourself to choose otherwise.
os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "false")


class _HttpxCliOnDemand:
    """``import httpx`` also imports its command line client (``httpx._main``: click, rich,
    pygments) whenever those are installed, as they are beside vpod: 0.1 s of CPU at the
    start of every ``vpod`` cloud call, controller and GPU agent, none of which runs that
    client. This import hook answers that one import with a stand-in whose ``main`` loads
    and runs the real client when called."""

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
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, _HttpxCliOnDemand)]
    sys.modules.pop(_HttpxCliOnDemand.NAME, None)
    from httpx._main import main

    return main(*args, **kwargs)


if "httpx" not in sys.modules:
    sys.meta_path.insert(0, _HttpxCliOnDemand())

__version__ = "0.1.0"
