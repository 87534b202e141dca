#!/usr/bin/env python3
"""Regenerate ``src/vpod/wire`` from the ``.proto`` sources in ``protos/``.

The generated modules are committed, so installing vpod never needs protoc.
Run this after editing a proto and commit both::

    .venv/bin/python tools/gen_protos.py            # write into src/
    .venv/bin/python tools/gen_protos.py --out DIR  # write elsewhere (tests compare)
    .venv/bin/python tools/gen_protos.py --check    # exit 1 when src/ is out of date

Every proto lives under ``protos/vpod/wire/`` so that protoc emits
package-qualified imports (``from vpod.wire import virmgrpc_pb2``). For each
proto it writes ``*_pb2.py``, ``*_pb2_grpc.py`` and mypy-protobuf's ``.pyi``
stubs for both. It uses ``grpc_tools.protoc`` and the ``protoc-gen-mypy``
plugins installed next to this Python interpreter (the dev extras).
"""

from __future__ import annotations

import argparse
import filecmp
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROTO_ROOT = ROOT / "protos"
WIRE_PACKAGE = Path("vpod") / "wire"
GENERATED_SUFFIXES = ("_pb2.py", "_pb2.pyi", "_pb2_grpc.py", "_pb2_grpc.pyi")


def proto_files() -> list[Path]:
    """The protos to compile, relative to ``protos/``."""
    return sorted(p.relative_to(PROTO_ROOT) for p in (PROTO_ROOT / WIRE_PACKAGE).glob("*.proto"))


def _plugin(name: str) -> str:
    path = Path(sys.executable).parent / name
    if not path.exists():
        found = shutil.which(name)
        if found is None:
            raise SystemExit(
                f"{name} not found next to {sys.executable} or on PATH:"
                " install the dev extras (mypy-protobuf) into this environment"
            )
        return found
    return str(path)


def generate(out_root: Path) -> list[Path]:
    """Compile every proto into ``out_root`` (a ``src``-like directory); return the files."""
    try:
        import grpc_tools
        from grpc_tools import protoc
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise SystemExit("grpcio-tools is not installed: install the dev extras") from exc
    well_known = Path(grpc_tools.__file__).parent / "_proto"
    out_root.mkdir(parents=True, exist_ok=True)
    args = [
        "grpc_tools.protoc",
        f"-I{PROTO_ROOT}",
        f"-I{well_known}",
        f"--plugin=protoc-gen-mypy={_plugin('protoc-gen-mypy')}",
        f"--plugin=protoc-gen-mypy_grpc={_plugin('protoc-gen-mypy_grpc')}",
        f"--python_out={out_root}",
        f"--grpc_python_out={out_root}",
        f"--mypy_out={out_root}",
        f"--mypy_grpc_out={out_root}",
        *(str(p) for p in proto_files()),
    ]
    if protoc.main(args) != 0:
        raise SystemExit("protoc failed: see the messages above")
    return generated_files(out_root)


def generated_files(out_root: Path) -> list[Path]:
    """The generated files under ``out_root``, sorted."""
    wire = out_root / WIRE_PACKAGE
    return sorted(p for p in wire.iterdir() if p.name.endswith(GENERATED_SUFFIXES))


def differences(expected_root: Path, actual_root: Path) -> list[str]:
    """Names of generated files that differ, are missing or are extra in ``actual_root``."""
    expected = {p.name: p for p in generated_files(expected_root)}
    actual = {p.name: p for p in generated_files(actual_root)}
    problems = [f"missing: {name}" for name in sorted(expected.keys() - actual.keys())]
    problems += [f"extra: {name}" for name in sorted(actual.keys() - expected.keys())]
    problems += [
        f"differs: {name}"
        for name in sorted(expected.keys() & actual.keys())
        if not filecmp.cmp(expected[name], actual[name], shallow=False)
    ]
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "src", help="src-like output root")
    parser.add_argument(
        "--check", action="store_true", help="compare with src/ instead of writing; exit 1 if stale"
    )
    args = parser.parse_args(argv)
    if args.check:
        with tempfile.TemporaryDirectory() as tmp:
            generate(Path(tmp))
            problems = differences(Path(tmp), ROOT / "src")
        for line in problems:
            print(line)
        if problems:
            print("src/vpod/wire is out of date: run tools/gen_protos.py and commit the result")
            return 1
        print("src/vpod/wire is up to date")
        return 0
    for path in generate(args.out):
        print(path.relative_to(args.out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
