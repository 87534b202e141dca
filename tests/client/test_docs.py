"""docs/client.md: its Python examples run as written against a real secure `vpod up`."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import vpod.client
from tests.e2e.conftest import Pod

pytestmark = [pytest.mark.e2e]
DOC = Path(__file__).resolve().parents[2] / "docs" / "client.md"
BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)


def blocks() -> list[str]:
    return BLOCK.findall(DOC.read_text())


def test_every_public_name_is_documented() -> None:
    text = DOC.read_text()
    classes = [n for n in vpod.client.__all__ if n[0].isupper() and n.endswith("Client")]
    assert classes
    assert [n for n in classes if f"`{n}`" not in text] == []
    errors = [n for n in vpod.client.__all__ if isinstance(getattr(vpod.client, n), type)]
    errors = [n for n in errors if issubclass(getattr(vpod.client, n), vpod.client.VpodError)]
    assert [n for n in errors if n not in text] == []


@pytest.mark.parametrize("index", range(len(blocks())))
def test_example_runs(
    index: int,
    pod: Pod,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = blocks()[index]
    if "connect_cloud" in code:
        pytest.skip("needs vpod up --cloud-pod (the cloud client is tested in test_cloud_client)")
    (tmp_path / "vpod-data").symlink_to(pod.data_dir)  # the paths the examples name
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("VIPU_CLI_CONFIG", str(pod.config))
    exec(compile(code, f"docs/client.md block {index}", "exec"), {"__name__": "__doc__"})
    assert capsys.readouterr().out.strip()
