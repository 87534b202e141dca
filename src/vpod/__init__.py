"""vpod: an open control plane for AI accelerator pods."""

import os

from vpod.import_hooks import httpx_cli_on_demand

# vpod's processes start children with a ``preexec_fn`` (so Linux ends them with their
# parent) while gRPC channels are busy; with gRPC's fork support on (grpcio 1.80 and later
# turn it on), the forked child restarts gRPC's poller and aborts with "epoll_wait error:
# Bad file descriptor" before it can exec (grpc/grpc#43055). No vpod process uses gRPC in a
# forked child, so the support is turned off before gRPC is first imported; set the
# variable yourself to choose otherwise.
os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "false")


# ``import httpx`` would also import its command line client (click, rich, pygments).
httpx_cli_on_demand()

__version__ = "0.1.0"
