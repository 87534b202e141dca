"""No import circles between vpod's modules (tools/import_circles.py, run as CI runs it)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CHECKER = ROOT / "tools" / "import_circles.py"


def _check(src: Path, package: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(CHECKER), str(src), package],
        capture_output=True,
        text=True,
        check=False,
    )


def test_vpod_has_no_import_circles() -> None:
    """Every module of src/vpod can be imported without another importing it back."""
    result = _check(ROOT / "src", "vpod")
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.startswith("0 import circle(s)")


def test_a_circle_is_found_and_named(tmp_path: Path) -> None:
    """Two modules importing each other (one relatively, inside a function) fail the check;
    an import under TYPE_CHECKING does not count."""
    package = tmp_path / "demo"
    (package / "inner").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "inner" / "__init__.py").write_text("")
    (package / "a.py").write_text("from demo.inner import b\n")
    (package / "inner" / "b.py").write_text("def f():\n    from .. import a\n")
    (package / "c.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from demo import a\n"
    )
    (package / "d.py").write_text("import demo.c\n")
    result = _check(tmp_path, "demo")
    assert result.returncode == 1
    assert result.stdout.splitlines() == [
        "import circle: demo.a <-> demo.inner.b",
        "1 import circle(s) among the 4 modules of demo",
    ]
