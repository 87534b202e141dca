"""The committed code in src/vpod/wire is what tools/gen_protos.py makes from protos/."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GEN = ROOT / "tools" / "gen_protos.py"


def _load_generator() -> object:
    import importlib.util

    spec = importlib.util.spec_from_file_location("gen_protos", GEN)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_generated_code_is_up_to_date(tmp_path: Path) -> None:
    """Regenerating into a temporary directory gives byte-identical files to the committed ones."""
    result = subprocess.run(
        [sys.executable, str(GEN), "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    gen = _load_generator()
    problems = gen.differences(tmp_path, ROOT / "src")  # type: ignore[attr-defined]
    assert problems == [], "run tools/gen_protos.py and commit the result: " + ", ".join(problems)


def test_every_proto_has_its_generated_modules() -> None:
    """Each proto under protos/vpod/wire has _pb2, _pb2_grpc and stubs committed."""
    wire = ROOT / "src" / "vpod" / "wire"
    for proto in sorted((ROOT / "protos" / "vpod" / "wire").glob("*.proto")):
        for suffix in ("_pb2.py", "_pb2.pyi", "_pb2_grpc.py", "_pb2_grpc.pyi"):
            assert (wire / f"{proto.stem}{suffix}").is_file(), f"{proto.stem}{suffix} is missing"


def test_generated_imports_are_package_qualified() -> None:
    """Generated modules import each other as vpod.wire.X, so they work from any directory."""
    text = (ROOT / "src" / "vpod" / "wire" / "admin_pb2.py").read_text()
    assert "from vpod.wire import agent_pb2" in text
    assert "from vpod.wire import virmgrpc_pb2" in text
