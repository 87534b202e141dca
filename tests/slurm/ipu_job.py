"""A Slurm job's payload: find the partition from IPUOF_VIPU_API_*, attach every IPU, hold them.

Run by the tests as ``python ipu_job.py SECONDS`` inside a job. It prints
``attached N PARTITION`` and exits 0 when it held all N IPUs of its partition
for SECONDS; any refusal (an IPU attached by another job, no partition)
prints ``failed: ...`` and exits 3, which the job's exit code shows.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import grpc

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.e2e.ipuof_app import Application
from vpod.wire import virmgrpc_pb2 as pb
from vpod.wire import virmgrpc_pb2_grpc as pb_grpc


def main() -> int:
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 0.0
    env = os.environ
    partition_id = env["IPUOF_VIPU_API_PARTITION_ID"]
    target = f"{env['IPUOF_VIPU_API_HOST']}:{env['IPUOF_VIPU_API_PORT']}"
    request = pb.GetPartitionIpuofConfigRequest(partition_id=partition_id)
    if "ALL_GCDS" not in env:
        request.gcd_id.id = int(env["IPUOF_VIPU_API_GCD_ID"])
    with grpc.insecure_channel(target) as channel:
        reply = pb_grpc.UserServiceStub(channel).GetPartitionIpuofConfig(
            request, timeout=float(env["IPUOF_VIPU_API_TIMEOUT"])
        )
    # ALL_GCDS=1: every GCD (a partition over 64 IPUs has one per 64, as poprun's instances).
    devices = [d for config in reply.ipuof_config.gcd_configs for d in config.devices]
    with Application(partition_id) as app:
        for device in devices:
            _, answer = app.attach(device)
            if answer is None or answer.word != "OK":
                print(f"failed: IPU {device.routing_id} of {partition_id}: {answer}", flush=True)
                return 3
        print(f"attached {len(devices)} {partition_id}", flush=True)
        time.sleep(seconds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
