"""The GPU host agent's backends and health rules: the emulated NVML (inventory, stand-in
device nodes, emulator controls across the file it shares with a running agent), what makes
a GPU unhealthy, and the real NVML backend where a GPU is present (skipped otherwise)."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import pytest

from vpod.agent.gpu.emulated import EmulatedNvml, EmulatorControls, emulated_uuid
from vpod.agent.gpu.health import HealthLimits, assess, xid_text
from vpod.agent.gpu.model import GpuReading, GpuSample, HostInventory
from vpod.cloud.gpu_rules import check_inventory, host_model_of
from vpod.cloud.model import errors


def test_an_emulated_host_has_stable_gpus_with_stand_in_device_nodes(tmp_path: Path) -> None:
    backend = EmulatedNvml("node-7", "a100-80", 4, tmp_path / "dev")
    inventory = asyncio.run(backend.inventory())
    again = asyncio.run(EmulatedNvml("node-7", "a100-80", 4, tmp_path / "other").inventory())
    assert [g.uuid for g in inventory.gpus] == [g.uuid for g in again.gpus]
    assert [g.uuid for g in inventory.gpus] == [emulated_uuid("node-7", i) for i in range(4)]
    assert {g.name for g in inventory.gpus} == {"NVIDIA A100-SXM4-80GB"}
    gpu = inventory.gpus[2]
    assert gpu.devices[0].path == "/dev/nvidia2"
    assert [d.path for d in gpu.devices[1:]] == [
        "/dev/nvidiactl",
        "/dev/nvidia-uvm",
        "/dev/nvidia-uvm-tools",
    ]
    assert all(Path(d.source).is_file() for d in gpu.devices)
    assert dict(gpu.topology) == {0: "NVLINK", 1: "NVLINK", 3: "NVLINK"}
    assert HostInventory.from_json(inventory.to_json()) == inventory
    check_inventory(inventory)  # what the controller accepts


def test_emulator_controls_reach_the_next_sample_and_clear(tmp_path: Path) -> None:
    backend = EmulatedNvml("h", "h100-80", 2, tmp_path)
    controls = EmulatorControls(tmp_path)
    controls.inject_xid(1, 79)
    controls.make_hot(0)
    readings = asyncio.run(backend.sample())
    samples = [assess(r) for r in readings]
    assert samples[1].problems == ("XID 79 (GPU has fallen off the bus)",)
    assert samples[0].problems == ("temperature 95 °C at or above 90 °C",)
    controls.clear(1)
    assert [assess(r).healthy for r in asyncio.run(backend.sample())] == [False, True]
    controls.clear()
    assert all(assess(r).healthy for r in asyncio.run(backend.sample()))


@pytest.mark.parametrize(
    ("changes", "problem"),
    [
        ({"last_xid": 48}, "XID 48 (double-bit ECC error)"),
        ({"ecc_uncorrected": 3}, "3 uncorrectable ECC error(s)"),
        ({"retired_pages_pending": True}, "retired memory pages pending: reset the GPU"),
        ({"remapped_rows_pending": True}, "remapped memory rows pending: reset the GPU"),
        ({"remapping_failed": True}, "memory row remapping failed: replace the GPU"),
        ({"lost": True}, "NVML lost the GPU (fallen off the bus?)"),
        (
            {"temperature_c": 87, "slowdown_temperature_c": 87},
            "temperature 87 °C at or above 87 °C",
        ),
    ],
)
def test_hardware_faults_make_a_gpu_unhealthy(changes: dict[str, object], problem: str) -> None:
    values: dict[str, object] = {"temperature_c": 40, **changes}
    sample = assess(GpuReading(index=0, uuid="GPU-x", **values))  # type: ignore[arg-type]
    assert (sample.healthy, sample.problems) == (False, (problem,))


def test_application_xids_and_throttling_are_warnings_only() -> None:
    reading = GpuReading(
        index=0, uuid="GPU-x", last_xid=13, throttle_reasons=("sw_power_cap",), temperature_c=89
    )
    sample = assess(reading)
    assert sample.healthy
    assert sample.warnings == (
        "throttled: sw_power_cap",
        "last XID 13 (graphics engine exception), an application error",
    )
    assert not assess(reading, HealthLimits(max_temperature_c=80)).healthy
    assert GpuSample.from_json(sample.to_json()) == sample
    assert xid_text(999) == "XID 999"


@pytest.mark.parametrize(
    ("name", "memory_mib", "model"),
    [
        ("NVIDIA H100 80GB HBM3", 81559, "h100-80"),
        ("NVIDIA A100-SXM4-80GB", 81920, "a100-80"),
        ("NVIDIA A100-PCIE-40GB", 40960, "a100-40"),
        ("NVIDIA L40S", 46068, "l40s-48"),
        ("Tesla V100-SXM2-16GB", 16384, None),
    ],
)
def test_the_host_model_comes_from_the_gpu_name_and_memory(
    name: str, memory_mib: int, model: str | None
) -> None:
    assert host_model_of(name, memory_mib) == model


def test_inventories_a_server_could_be_harmed_by_are_refused(tmp_path: Path) -> None:
    inventory = asyncio.run(EmulatedNvml("h", "l40s-48", 2, tmp_path).inventory())
    raw = json.loads(json.dumps(inventory.to_json()))
    raw["gpus"][1]["index"] = 0
    with pytest.raises(errors.InvalidArgument, match="indexes must be 0 to N-1"):
        check_inventory(HostInventory.from_json(raw))
    raw = json.loads(json.dumps(inventory.to_json()))
    raw["gpus"][0]["devices"][0] = {"path": "/dev/nvidia0", "source": "relative/file"}
    with pytest.raises(errors.InvalidArgument, match="not an absolute path"):
        check_inventory(HostInventory.from_json(raw))
    raw = json.loads(json.dumps(inventory.to_json()))
    raw["gpus"][0]["uuid"] = "not a uuid"
    with pytest.raises(errors.InvalidArgument, match="is not a GPU UUID"):
        check_inventory(HostInventory.from_json(raw))


def _has_gpu() -> bool:
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception:
        return False
    pynvml.nvmlShutdown()
    return True


@pytest.mark.skipif(not _has_gpu(), reason="no NVIDIA GPU and driver here (NVML does not start)")
def test_the_nvml_backend_finds_real_gpus() -> None:
    from vpod.agent.gpu.nvml import NvmlBackend

    async def look() -> tuple[HostInventory, list[GpuReading]]:
        backend = await NvmlBackend.open()
        try:
            return await backend.inventory(), await backend.sample()
        finally:
            await backend.close()

    inventory, readings = asyncio.run(look())
    assert inventory.backend == "nvml"
    assert inventory.gpus
    assert all(g.uuid.startswith(("GPU-", "MIG-")) for g in inventory.gpus)
    assert [r.uuid for r in readings] == [g.uuid for g in inventory.gpus]
    check_inventory(inventory)
    if shutil.which("nvidia-smi"):
        assert all(Path(g.devices[0].source).exists() for g in inventory.gpus)
