"""What one controller-to-agent call costs, against gRPC's own floor, in CPU per call.

A partition on N IPU-Machines costs N ``ConfigurePartition`` calls to create
and N ``ReleasePartition`` calls to remove, one per machine's agent, so what
one agent call costs is what a larger partition adds per machine it spans
(``benchmarks/control_plane.py --sizes`` measures that end to end). This
script takes the call apart. It runs, in one run and on the same machine:

- ``floor``: a bare ``grpc.aio`` server in its own process that implements
  the agent's two calls by returning a fixed answer (no decoding of what it
  was sent beyond protobuf's, no emulated machine, no key check), called
  through the same generated stub: what gRPC and protobuf cost on this
  machine, the least any agent call can cost;
- ``agent``: a real ``vipu-agent`` (one emulated IPU-Machine, a key, as the
  controller runs it) configured and released through ``vpod.agent.client``
  (``configure_partition_changed``, as the controller calls it, and
  ``release_partition``), a 1-IPU or a 4-IPU partition.

Each row gives the server's and the client's CPU time per call (Linux
``/proc``), and the agent rows theirs relative to the floor's. Calls go one
after another (a machine's IPUs hold one 4-IPU partition at a time), in
every row alike.

    .venv/bin/python benchmarks/agent_calls.py [--calls 4000] [--json PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import grpc
from bench_processes import LOOPBACK_AGENT, cpu_seconds, spawn, stop

from vpod.agent.client import AgentClient
from vpod.agent.model import IpuAssignment, PartitionConfig
from vpod.wire import agent_pb2 as pb
from vpod.wire import agent_pb2_grpc as pb_grpc

BIN = Path(sys.executable).parent
KEY = "benchmark-agent-key-" + "0" * 32


@dataclass
class Row:
    case: str
    calls: int
    server_ms: float
    """Server CPU per call (ms)."""
    client_ms: float
    """This process's CPU per call (ms)."""
    server_vs_floor: float = float("nan")
    client_vs_floor: float = float("nan")


def _floor_handler() -> grpc.GenericRpcHandler:
    """The agent's two calls, answered with nothing but a fixed reply."""

    async def configure(_request: Any, _context: Any) -> pb.ConfigurePartitionReply:
        return pb.ConfigurePartitionReply(changed=True)

    async def release(_request: Any, _context: Any) -> pb.ReleasePartitionReply:
        return pb.ReleasePartitionReply(released=True)

    service = pb.DESCRIPTOR.services_by_name["AgentService"].full_name
    return grpc.method_handlers_generic_handler(
        service,
        {
            "ConfigurePartition": grpc.unary_unary_rpc_method_handler(
                configure,
                request_deserializer=pb.ConfigurePartitionRequest.FromString,
                response_serializer=pb.ConfigurePartitionReply.SerializeToString,
            ),
            "ReleasePartition": grpc.unary_unary_rpc_method_handler(
                release,
                request_deserializer=pb.ReleasePartitionRequest.FromString,
                response_serializer=pb.ReleasePartitionReply.SerializeToString,
            ),
        },
    )


async def _serve_floor() -> None:
    server = grpc.aio.server(handlers=[_floor_handler()])
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    print(f"floor ready: 127.0.0.1:{port}", flush=True)
    await server.wait_for_termination()


def _config(partition_id: str, ipus: int) -> PartitionConfig:
    return PartitionConfig(
        partition_id,
        1,
        tuple(IpuAssignment(device_id=d, routing_id=d) for d in range(ipus)),
        partition_size=ipus,
    )


async def _measure(
    pid: int, calls: int, pair: Callable[[int], Awaitable[Any]]
) -> tuple[float, float]:
    """Server and client CPU ms per call over ``calls`` calls, after a warm-up; each
    ``pair(i)`` makes two calls (configure, then release)."""

    async def run(pairs: int, offset: int) -> None:
        for i in range(pairs):
            await pair(offset + i)

    await run(max(10, calls // 20), 10**9)
    server0, client0 = cpu_seconds(pid), time.process_time()
    await run(calls // 2, 0)
    per_call = 1000 / ((calls // 2) * 2)
    return (
        (cpu_seconds(pid) - server0) * per_call,
        (time.process_time() - client0) * per_call,
    )


async def _floor_row(calls: int) -> Row:
    proc, line = spawn([sys.executable, __file__, "--serve-floor"], "floor ready")
    try:
        address = line.rsplit(" ", 1)[1].strip()
        async with grpc.aio.insecure_channel(address) as channel:
            stub = pb_grpc.AgentServiceStub(channel)
            config = pb.ConfigurePartitionRequest()

            async def pair(i: int) -> None:
                config.config.partition_id = f"p{i}"
                await stub.ConfigurePartition(config, metadata=(("x", KEY),))
                await stub.ReleasePartition(
                    pb.ReleasePartitionRequest(partition_id=f"p{i}"), metadata=(("x", KEY),)
                )

            server_ms, client_ms = await _measure(proc.pid, calls, pair)
    finally:
        stop(proc)
    return Row("floor (bare gRPC)", calls, server_ms, client_ms)


async def _agent_row(calls: int, ipus: int, key_file: Path) -> Row:
    proc, line = spawn(
        [
            str(BIN / "vipu-agent"),
            "--machines",
            "1",
            *LOOPBACK_AGENT,
            "--key-file",
            str(key_file),
        ],
        "vipu-agent ready",
    )
    try:
        address = line.split("ag1=", 1)[1].split()[0]
        async with AgentClient(address, agent_id="ag1", key=KEY) as client:

            async def pair(i: int) -> None:
                config = _config(f"p{i}", ipus)
                await client.configure_partition_changed(config, hosts=("127.0.0.1",))
                await client.release_partition(config.partition_id)

            server_ms, client_ms = await _measure(proc.pid, calls, pair)
    finally:
        stop(proc)
    return Row(f"agent, {ipus}-IPU partition", calls, server_ms, client_ms)


async def _run(calls: int) -> list[Row]:
    with tempfile.TemporaryDirectory() as tmp:
        key_file = Path(tmp) / "agent.key"
        key_file.write_text(KEY)
        floor = await _floor_row(calls)
        rows = [floor]
        for ipus in (1, 4):
            row = await _agent_row(calls, ipus, key_file)
            row.server_vs_floor = row.server_ms / floor.server_ms
            row.client_vs_floor = row.client_ms / floor.client_ms
            rows.append(row)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--calls", type=int, default=4000, help="calls measured per row")
    parser.add_argument("--json", type=Path, help="write the results here")
    parser.add_argument("--serve-floor", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_floor:
        asyncio.run(_serve_floor())
        return
    if args.calls < 20:
        parser.error(f"give --calls of 20 or more, not {args.calls}")
    rows = asyncio.run(_run(args.calls))
    print(f"{'case':<26}{'calls':>7}{'server ms/call':>16}{'client ms/call':>16}{'vs floor':>14}")
    for r in rows:
        versus = (
            ""
            if r.server_vs_floor != r.server_vs_floor
            else (f"{r.server_vs_floor:.2f} / {r.client_vs_floor:.2f}")
        )
        print(f"{r.case:<26}{r.calls:>7}{r.server_ms:>16.3f}{r.client_ms:>16.3f}{versus:>14}")
    print("(CPU time per call of the server process and of this client; vs floor: server / client)")
    if args.json:
        args.json.write_text(json.dumps([asdict(r) for r in rows], indent=2))


if __name__ == "__main__":
    main()
