"""The GPU host agent: GPUs found and watched through NVML, reported to the controller.

:mod:`.backend` is the seam (inventory, health samples, device nodes);
:mod:`.nvml` drives real GPUs through ``nvidia-ml-py``, :mod:`.emulated`
stands in where there are none (``vpod up``, the tests), with its emulator
controls apart (:class:`.emulated.EmulatorControls`). :mod:`.health` judges a
sample; :mod:`.reporter` registers the host and sends samples. See docs/gpu.md.
"""
