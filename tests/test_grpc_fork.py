"""Children forked while gRPC channels are busy start: vpod turns gRPC's fork support off
before gRPC is first imported (grpc/grpc#43055: with it on, about one child in 200 aborted
with "epoll_wait error: Bad file descriptor" before its exec; ``vpod-run`` lost instances)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

FORKS = 400

SCRIPT = textwrap.dedent(
    f"""
    import os, subprocess, sys, threading
    import vpod  # first, as every vpod console script imports it
    import grpc
    from concurrent import futures
    from grpc_health.v1 import health, health_pb2, health_pb2_grpc

    server = grpc.server(futures.ThreadPoolExecutor(2))
    health_pb2_grpc.add_HealthServicer_to_server(health.HealthServicer(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    stub = health_pb2_grpc.HealthStub(grpc.insecure_channel(f"127.0.0.1:{{port}}"))
    busy = True

    def calls():
        while busy:
            stub.Check(health_pb2.HealthCheckRequest())

    threading.Thread(target=calls, daemon=True).start()
    failed = []
    for _ in range({FORKS}):
        child = subprocess.Popen(["true"], preexec_fn=lambda: None, start_new_session=True)
        if child.wait() != 0:
            failed.append(child.returncode)
    busy = False
    print(os.environ["GRPC_ENABLE_FORK_SUPPORT"], failed)
    """
)


def test_children_forked_beside_busy_channels_all_start() -> None:
    env = {k: v for k, v in os.environ.items() if k != "GRPC_ENABLE_FORK_SUPPORT"}
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["false", "[]"], done.stderr[-2000:]


def test_a_choice_made_in_the_environment_is_kept() -> None:
    done = subprocess.run(
        [sys.executable, "-c", "import os, vpod; print(os.environ['GRPC_ENABLE_FORK_SUPPORT'])"],
        env={**os.environ, "GRPC_ENABLE_FORK_SUPPORT": "true"},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert done.stdout.strip() == "true"
