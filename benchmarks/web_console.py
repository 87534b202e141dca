"""The web console's pod map in Chromium: time to first render, update latency, load.

For each pod shape (pod64, pod256, pod1024 by default) this starts a real
``vpod up --pod SHAPE`` (agents, controller, the console), logs a headless
Chromium (Debian's ``chromium`` + ``chromedriver``, driven by Selenium) into
the console and measures:

- **first render**: from the start of the navigation to ``/admin/map`` until
  the map of every IPU is drawn (the page records ``performance.now()``
  then), median of ``--loads`` page loads;
- **update latency**: a partition created (and removed) through the REST
  API, from the moment the API answered to the moment the page has coloured
  (cleared) its IPUs, measured by a MutationObserver inside the page and a
  shared clock (``Date.now()`` on both sides); median and worst of
  ``--updates`` creates and removes;
- **under load**: while partitions of one IPU are created and removed
  through the API at up to ``--rate`` changes per second for ``--load-s``
  seconds (what the controller manages on the machine), the page's longest
  main-thread stall (gaps between animation frames) and how many changes it
  applied;
- **injected load**: 100 and 1,000 partition changes per second fed for 5 s
  straight into the page's change queue (the path the stream's events take),
  to measure the page alone: the longest gap between frames and the longest
  frame's work of applying changes.

A baseline from the same run sits beside the update latency: the time the
API itself took to answer the create, so a slow machine shows in both.

    .venv/bin/python benchmarks/web_console.py [--json PATH] [--shapes pod64,pod256,pod1024]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import httpx

BIN = Path(sys.executable).parent
READY_TIMEOUT_S = 600.0
RENDER_TARGET_MS = 1000.0
UPDATE_TARGET_MS = 1000.0

OBSERVE_JS = """
const [id, want, timeoutMs, done] = arguments;
const count = () => document.querySelectorAll(`#map .ipu[data-partition="${id}"]`).length;
const finish = (ok) => { observer.disconnect(); done(ok ? Date.now() : null); };
const check = () => { if (want ? count() > 0 : count() === 0) finish(true); };
const observer = new MutationObserver(check);
observer.observe(document.getElementById("map"), {subtree: true, attributes: true,
                                                   attributeFilter: ["data-partition"]});
setTimeout(() => finish(false), timeoutMs);
check();
"""

FRAMES_JS = """
window.__frames = {max: 0, last: performance.now(), count: 0, stop: false};
(function tick(now) {
  const f = window.__frames;
  f.max = Math.max(f.max, now - f.last); f.last = now; f.count += 1;
  if (!f.stop) requestAnimationFrame(tick);
})(performance.now());
return window.vpodMap.applied;
"""


SYNTHETIC_JS = """
const [perSecond, seconds, done] = arguments;
const map = window.vpodMap;
const [cluster] = map.clusters.values();
const slots = cluster.cells.length;
const frames = {max: 0, last: performance.now(), stop: false};
(function tick(now) {
  frames.max = Math.max(frames.max, now - frames.last); frames.last = now;
  if (!frames.stop) requestAnimationFrame(tick);
})(performance.now());
map.flushMaxMs = 0;
let sent = 0;
const held = new Map();
const started = performance.now();
const timer = setInterval(() => { try {
  const due = Math.floor((performance.now() - started) / 1000 * perSecond) - sent;
  for (let i = 0; i < due; i++, sent++) {
    const slot = (sent * 7919) % slots;
    const id = `synthetic-${slot}`;
    const change = held.has(id) ? "removed" : "created";
    if (change === "created") held.set(id, true); else held.delete(id);
    map.enqueue("partition", {change, id, allocation_id: "x", cluster_id: cluster.id, size: 1,
                              ready_state: "ACTIVE", operation_state: "IDLE", slots: [slot]});
  }
  if (performance.now() - started >= seconds * 1000) {
    clearInterval(timer);
    for (const id of held.keys()) {
      map.enqueue("partition", {change: "removed", id, cluster_id: cluster.id, slots: []});
    }
    setTimeout(() => { frames.stop = true;
      done({sent, maxFrameGapMs: frames.max, maxFlushMs: map.flushMaxMs}); }, 200);
  }
} catch (error) { clearInterval(timer); done({error: String(error)}); } }, 5);
"""


@dataclass
class ShapeResult:
    shape: str
    ipus: int
    ready_s: float
    first_render_ms: list[float] = field(default_factory=list)
    api_create_ms: list[float] = field(default_factory=list)
    shown_after_ms: list[float] = field(default_factory=list)
    gone_after_ms: list[float] = field(default_factory=list)
    load_changes_per_s: float = 0.0
    load_applied: int = 0
    load_max_frame_gap_ms: float = 0.0
    synthetic: dict[int, dict[str, float]] = field(default_factory=dict)
    """Changes per second injected into the page's queue → longest frame gap and frame work."""

    def row(self) -> dict[str, Any]:
        return {
            "shape": self.shape,
            "ipus": self.ipus,
            "first render ms (median)": _median(self.first_render_ms),
            "API create ms (baseline)": _median(self.api_create_ms),
            "shown after ms (median/max)": f"{_median(self.shown_after_ms):.0f}"
            f" / {max(self.shown_after_ms, default=0):.0f}",
            "gone after ms (median/max)": f"{_median(self.gone_after_ms):.0f}"
            f" / {max(self.gone_after_ms, default=0):.0f}",
            "load changes/s": round(self.load_changes_per_s, 1),
            "longest frame gap ms": round(self.load_max_frame_gap_ms, 1),
            **{
                f"{rate}/s injected: gap / work ms": f"{s['maxFrameGapMs']:.0f}"
                f" / {s['maxFlushMs']:.1f}"
                for rate, s in self.synthetic.items()
            },
        }


def _median(values: list[float]) -> float:
    return round(statistics.median(values), 1) if values else float("nan")


class Up:
    """A running ``vpod up`` on free ports in a temporary directory."""

    def __init__(self, shape: str, root: Path) -> None:
        self.data_dir = root / shape
        started = time.monotonic()
        self.proc = subprocess.Popen(
            [
                str(BIN / "vpod"),
                "up",
                "--pod",
                shape,
                "--no-cloud",
                "--data-dir",
                str(self.data_dir),
                "--port",
                "0",
                "--admin-port",
                "0",
                "--http-port",
                "0",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        line = self._ready_line()
        self.ready_s = time.monotonic() - started
        match = re.search(r"HTTP http://([^:]+):(\d+)", line)
        assert match, line
        self.url = f"http://{match[1]}:{match[2]}"
        admin = self.data_dir / "admin.vipu-cli.hcl"
        self.admin: dict[str, str] = {}
        if admin.exists():
            text = admin.read_text()
            self.admin = {
                "X-Vipu-User-Id": re.search(r'api-user-id="([^"]*)"', text)[1],  # type: ignore[index]
                "X-Vipu-Access-Key": re.search(r'api-access-key="([^"]*)"', text)[1],  # type: ignore[index]
            }

    def _ready_line(self) -> str:
        found: list[str] = []
        ready = threading.Event()

        def pump() -> None:
            assert self.proc.stdout is not None
            for line in self.proc.stdout:
                if line.startswith("vpod is up:"):
                    found.append(line)
                    ready.set()
            ready.set()

        threading.Thread(target=pump, daemon=True).start()
        if not ready.wait(READY_TIMEOUT_S) or not found:
            self.stop()
            raise RuntimeError("vpod up did not become ready")
        return found[0]

    def api(self) -> httpx.Client:
        return httpx.Client(base_url=self.url, headers=self.admin, timeout=120)

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGINT)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)


def browser() -> Any:
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    for argument in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--window-size=1600,1000",
    ):
        options.add_argument(argument)
    driver = webdriver.Chrome(
        options=options, service=Service(shutil.which("chromedriver") or "/usr/bin/chromedriver")
    )
    driver.set_script_timeout(120)
    return driver


def log_in(driver: Any, up: Up) -> None:
    driver.get(up.url + "/login")
    body = (
        {
            "kind": "vipu",
            "user_id": up.admin["X-Vipu-User-Id"],
            "access_key": up.admin["X-Vipu-Access-Key"],
        }
        if up.admin
        else {"kind": "open"}
    )
    status = driver.execute_async_script(
        "const [body, done] = arguments; fetch('/web/session', {method: 'POST',"
        " headers: {'Content-Type': 'application/json'}, body: JSON.stringify(body)})"
        ".then(r => done(r.status));",
        body,
    )
    assert status == 200, f"login answered {status}"


def open_map(driver: Any, up: Up) -> float:
    driver.get(up.url + "/admin/map")
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        took = driver.execute_script("return document.body.dataset.mapRenderedMs")
        live = driver.execute_script("return !!document.querySelector('.live.on')")
        if took and live:
            return float(took)
        time.sleep(0.05)
    raise RuntimeError("the map did not render")


def measure_updates(driver: Any, up: Up, result: ShapeResult, count: int) -> None:
    with up.api() as api:
        for i in range(count):
            pid = f"bench-{i}"
            driver.execute_script("window.__shown = null;")
            driver.execute_script(
                "const done = (t) => { window.__shown = t; };"
                + OBSERVE_JS.replace(
                    "const [id, want, timeoutMs, done] = arguments;",
                    "const [id, want, timeoutMs] = arguments;",
                ),
                pid,
                True,
                10_000,
            )
            before = time.time()
            created = api.post("/api/v1/partitions", json={"id": pid, "size": 4})
            answered = time.time()
            assert created.status_code == 201, created.text
            shown = _await(driver, "window.__shown")
            result.api_create_ms.append((answered - before) * 1000)
            result.shown_after_ms.append(shown - answered * 1000)
            driver.execute_script("window.__gone = null;")
            driver.execute_script(
                "const done = (t) => { window.__gone = t; };"
                + OBSERVE_JS.replace(
                    "const [id, want, timeoutMs, done] = arguments;",
                    "const [id, want, timeoutMs] = arguments;",
                ),
                pid,
                False,
                10_000,
            )
            removed = api.delete(f"/api/v1/partitions/{pid}")
            answered = time.time()
            assert removed.status_code == 204, removed.text
            gone = _await(driver, "window.__gone")
            result.gone_after_ms.append(gone - answered * 1000)


def _await(driver: Any, expression: str) -> float:
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        value = driver.execute_script(f"return {expression}")
        if value:
            return float(value)
        time.sleep(0.01)
    raise RuntimeError(f"the page never saw the change ({expression})")


async def _churn(up: Up, rate: float, seconds: float) -> int:
    """Create and remove 1-IPU partitions at about ``rate`` changes per second."""
    changes = 0
    stop = time.monotonic() + seconds
    async with httpx.AsyncClient(base_url=up.url, headers=up.admin, timeout=120) as api:

        async def worker(n: int) -> None:
            nonlocal changes
            i = 0
            while time.monotonic() < stop:
                started = time.monotonic()
                pid = f"load-{n}-{i}"
                if (await api.post("/api/v1/partitions", json={"id": pid, "size": 1})).is_success:
                    changes += 1
                if (await api.delete(f"/api/v1/partitions/{pid}")).is_success:
                    changes += 1
                i += 1
                await asyncio.sleep(max(0.0, 2 * workers / rate - (time.monotonic() - started)))

        workers = 16
        await asyncio.gather(*(worker(n) for n in range(workers)))
    return changes


def measure_load(driver: Any, up: Up, result: ShapeResult, rate: float, seconds: float) -> None:
    applied_before = driver.execute_script(FRAMES_JS)
    started = time.monotonic()
    changes = asyncio.run(_churn(up, rate, seconds))
    elapsed = time.monotonic() - started
    time.sleep(1.0)  # let the last changes arrive
    frames = driver.execute_script("window.__frames.stop = true; return window.__frames")
    result.load_changes_per_s = changes / elapsed
    result.load_applied = int(driver.execute_script("return window.vpodMap.applied")) - int(
        applied_before
    )
    result.load_max_frame_gap_ms = float(frames["max"])


def run_shape(shape: str, root: Path, args: argparse.Namespace) -> ShapeResult:
    up = Up(shape, root)
    driver = None
    try:
        with up.api() as api:
            clusters = api.get("/api/v1/admin/clusters").json()["clusters"]
        result = ShapeResult(shape, sum(c["num_ipus"] for c in clusters), round(up.ready_s, 1))
        driver = browser()
        log_in(driver, up)
        for _ in range(args.loads):
            result.first_render_ms.append(open_map(driver, up))
        measure_updates(driver, up, result, args.updates)
        measure_load(driver, up, result, args.rate, args.load_s)
        for rate in (100, 1000):
            injected = driver.execute_async_script(SYNTHETIC_JS, rate, 5)
            if "error" in injected:
                raise RuntimeError(f"injecting changes failed in the page: {injected['error']}")
            result.synthetic[rate] = injected
        return result
    finally:
        if driver is not None:
            driver.quit()
        up.stop()


def table(rows: list[dict[str, Any]]) -> str:
    heads = list(rows[0])
    widths = [max(len(h), *(len(str(r[h])) for r in rows)) for h in heads]
    lines = [" | ".join(h.ljust(w) for h, w in zip(heads, widths, strict=True))]
    lines.append("-+-".join("-" * w for w in widths))
    lines += [
        " | ".join(str(r[h]).ljust(w) for h, w in zip(heads, widths, strict=True)) for r in rows
    ]
    return "\n".join(lines)


def missing_browser() -> str:
    """Why Chromium cannot be driven here ("" when it can)."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (scripts/bootstrap installs the dev dependencies)"
    if not (shutil.which("chromium") or Path("/usr/bin/chromium").exists()):
        return "Debian's chromium is not installed (scripts/ensure-system-deps installs it)"
    if not (shutil.which("chromedriver") or Path("/usr/bin/chromedriver").exists()):
        return "Debian's chromium-driver is not installed (scripts/ensure-system-deps installs it)"
    return ""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shapes", default="pod64,pod256,pod1024")
    parser.add_argument("--loads", type=int, default=5, help="page loads per shape")
    parser.add_argument("--updates", type=int, default=10, help="creates and removes per shape")
    parser.add_argument("--rate", type=float, default=100.0, help="changes per second under load")
    parser.add_argument("--load-s", type=float, default=10.0, help="seconds of load")
    parser.add_argument("--json", type=Path, help="write the results here")
    args = parser.parse_args()
    why = missing_browser()
    if why:
        print(f"web_console: skipped, {why}", file=sys.stderr)
        return 0
    results = []
    with tempfile.TemporaryDirectory(prefix="vpod-web-bench-") as tmp:
        for shape in args.shapes.split(","):
            print(f"measuring {shape}...", file=sys.stderr, flush=True)
            results.append(run_shape(shape.strip(), Path(tmp), args))
    print(table([r.row() for r in results]))
    worst_render = max(_median(r.first_render_ms) for r in results)
    worst_update = max(max(r.shown_after_ms + r.gone_after_ms) for r in results)
    render_ok = "yes" if worst_render <= RENDER_TARGET_MS else "NO"
    update_ok = "yes" if worst_update <= UPDATE_TARGET_MS else "NO"
    print(
        f"\nfirst render ≤ {RENDER_TARGET_MS:.0f} ms: {render_ok} (worst median"
        f" {worst_render:.0f} ms); update ≤ {UPDATE_TARGET_MS:.0f} ms: {update_ok}"
        f" (worst {worst_update:.0f} ms)"
    )
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps([asdict(r) for r in results], indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
