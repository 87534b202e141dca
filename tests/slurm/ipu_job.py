"""A Slurm job's payload: find the partition with vpod.ipuof, attach every IPU, hold them.

Run by the tests as ``python ipu_job.py SECONDS`` inside a job. It finds its
partition from ``IPUOF_VIPU_API_*`` exactly as an application does
(:func:`vpod.ipuof.find_partition`), attaches the device that spans all its
IPUs, prints ``attached N PARTITION`` and exits 0 when it held them for
SECONDS; any refusal (an IPU attached by another job, no partition) prints
``failed: ...`` and exits 3, which the job's exit code shows.

With ``VPOD_IPU_DEVICE_ID`` set (a job's block of a shared reconfigurable
partition) it attaches that device instead of the whole partition.

With ``ALL_GCDS=1`` it attaches the IPUs of every GCD of the partition (one per
64 IPUs), as poprun's instances would.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time

from vpod.ipuof import IpuofError, PartitionTarget, attach_device, find_partition, list_devices

GCD_ENV = "IPUOF_VIPU_API_GCD_ID"


def targets() -> list[PartitionTarget]:
    env = dict(os.environ)
    first = find_partition(env)
    if "ALL_GCDS" not in env:
        return [first]
    found = [first]
    gcd = int(env.get(GCD_ENV, "0")) + 1
    while True:
        try:
            found.append(find_partition({**env, GCD_ENV: str(gcd), "IPUOF_VIPU_API_TIMEOUT": "5"}))
        except IpuofError:
            return found
        gcd += 1


def main() -> int:
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 0.0
    try:
        found = targets()
        with contextlib.ExitStack() as held:
            attached = 0
            for target in found:
                devices = list_devices(target)
                whole = max(devices, key=lambda device: device.num_ipus)
                if "VPOD_IPU_DEVICE_ID" in os.environ:
                    mine = int(os.environ["VPOD_IPU_DEVICE_ID"])
                    whole = next(device for device in devices if device.id == mine)
                held.enter_context(attach_device(target, whole))
                attached += whole.num_ipus
            print(f"attached {attached} {found[0].partition_id}", flush=True)
            time.sleep(seconds)
    except IpuofError as refused:
        print(f"failed: {refused}", flush=True)
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
