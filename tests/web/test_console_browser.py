"""The web console in a real Chromium against a real `vpod up --secure --cloud-pod pod16`.

Operators: log in, the pod64 map shows 64 labelled IPUs, a partition created
with the `vipu` CLI appears within a second and disappears when removed, an
injected fault shows, the map is usable from the keyboard. Tenants: log in
with the project's token, create a vPOD, follow its phases and see it ACTIVE
in the list without a reload, suspend and resume it; never reach an
operator's page or another project's objects, even by URL. Screenshots of
the main pages land in test-artifacts/.
"""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.conftest import BIN, Pod, start_pod

from .browser import chromium, console_errors, eventually, screenshot, wait_in_page

pytestmark = [pytest.mark.system, pytest.mark.e2e, pytest.mark.slow]

UPDATE_LIMIT_S = 1.0
"""A change made through the API is on an open page within this."""


def _setting(path: Path, name: str) -> str:
    match = re.search(rf'^{name}\s*=\s*"([^"]*)"', path.read_text(), flags=re.MULTILINE)
    assert match, f"no {name} in {path}"
    return match[1]


@pytest.fixture(scope="module")
def pod(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pod]:
    started = start_pod(tmp_path_factory.mktemp("web"), "--secure", "--cloud-pod", "pod16")
    yield started
    started.stop()


@pytest.fixture(scope="module")
def browser(pod: Pod) -> Iterator[Any]:
    driver = chromium()
    yield driver
    driver.quit()


class Console:
    """The console of ``pod`` in ``browser``, and the credentials to log in with."""

    def __init__(self, pod: Pod, browser: Any) -> None:
        self.pod = pod
        self.browser = browser
        self.url = f"http://127.0.0.1:{pod.http_port}"
        admin = pod.data_dir / "admin.vipu-cli.hcl"
        self.admin_id = _setting(admin, "api-user-id")
        self.admin_key = _setting(admin, "api-access-key")
        self.token = _setting(pod.data_dir / "vpod-cli.toml", "token")

    def api(self) -> httpx.Client:
        headers = {"X-Vipu-User-Id": self.admin_id, "X-Vipu-Access-Key": self.admin_key}
        return httpx.Client(base_url=self.url, headers=headers, timeout=60)

    def open(self, path: str) -> None:
        self.browser.get(self.url + path)

    def log_out(self) -> None:
        self.open("/login")
        self.browser.delete_all_cookies()
        self.open("/login")

    def log_in_admin(self) -> None:
        self.log_out()
        form = appears(self.browser, "#login-vipu")
        form.find_element("name", "user_id").send_keys(self.admin_id)
        form.find_element("name", "access_key").send_keys(self.admin_key)
        form.find_element("css selector", "button").click()
        eventually(lambda: self.browser.current_url.endswith("/admin/map"), 30, "the map opens")
        self.map_ready()

    def log_in_tenant(self, token: str | None = None) -> None:
        self.log_out()
        form = appears(self.browser, "#login-cloud")
        form.find_element("name", "token").send_keys(token or self.token)
        form.find_element("css selector", "button").click()
        eventually(
            lambda: self.browser.current_url.endswith("/tenant/clusters"), 30, "clusters open"
        )

    def map_ready(self) -> None:
        wait_in_page(self.browser, "return document.body.dataset.mapReady", 30)
        wait_in_page(self.browser, "return document.querySelector('.live.on')", 30)

    def cells(self, cluster: str, selector: str = "") -> int:
        return count(self.browser, f'[data-cluster="{cluster}"] .ipu{selector}')


def count(browser: Any, selector: str) -> int:
    script = "return document.querySelectorAll(arguments[0]).length"
    return int(browser.execute_script(script, selector))


def appears(browser: Any, selector: str, timeout_s: float = 30) -> Any:
    """Wait for an element matching ``selector``; returns it."""
    return wait_in_page(browser, f"return document.querySelector({selector!r})", timeout_s)


@pytest.fixture
def console(pod: Pod, browser: Any) -> Console:
    return Console(pod, browser)


def _main_cluster(console: Console) -> str:
    with console.api() as api:
        clusters = api.get("/api/v1/admin/clusters").json()["clusters"]
    (main,) = [c["id"] for c in clusters if c["num_ipus"] == 64]
    return main


def test_admin_logs_in_and_the_pod64_map_shows_64_labelled_ipus(console: Console) -> None:
    console.log_in_admin()
    cluster = _main_cluster(console)
    assert console.cells(cluster) == 64
    labels = console.browser.execute_script(
        f"return [...document.querySelectorAll('[data-cluster=\"{cluster}\"] .ipu')]"
        ".map(e => e.getAttribute('aria-label'))"
    )
    assert all(label and label.startswith("IPU ") for label in labels)
    assert "Open mode" not in console.browser.find_element("id", "banner").text
    assert console.browser.find_element("id", "banner").get_attribute("hidden") is not None
    assert console_errors(console.browser) == []


def test_a_partition_from_the_cli_appears_within_a_second_and_goes(console: Console) -> None:
    console.log_in_admin()
    cluster = _main_cluster(console)
    selector = '[data-partition="webp"]'
    console.pod.run("vipu", "create", "partition", "webp", "--size", "8")
    created = time.monotonic()
    wait_in_page(
        console.browser,
        f"return document.querySelectorAll('#map .ipu{selector}').length === 8",
        10,
    )
    shown_after = time.monotonic() - created
    screenshot(console.browser, "admin-map")
    console.pod.run("vipu", "remove", "partition", "webp")
    removed = time.monotonic()
    wait_in_page(
        console.browser,
        f"return document.querySelectorAll('#map .ipu{selector}').length === 0",
        10,
    )
    gone_after = time.monotonic() - removed
    assert console.cells(cluster, selector) == 0
    assert shown_after <= UPDATE_LIMIT_S, f"shown {shown_after:.2f} s after the CLI returned"
    assert gone_after <= UPDATE_LIMIT_S, f"gone {gone_after:.2f} s after the CLI returned"


def test_faults_links_down_and_unreachable_agents_show_on_the_map(console: Console) -> None:
    console.log_in_admin()
    browser = console.browser
    faults = [
        ("ag3", {"kind": "ipu", "device_id": 1, "reason": "web test"}),
        ("ag5", {"kind": "link-down", "link_id": "gwlink0", "reason": "cable pulled"}),
        ("ag6", {"kind": "agent-hang"}),
    ]
    with console.api() as api:
        try:
            for agent, fault in faults:
                injected = api.post(f"/api/v1/admin/agents/{agent}/faults", json=fault)
                assert injected.status_code == 200, injected.text
            label = wait_in_page(
                browser,
                "const cell = document.querySelector('.machine[data-agent=\"ag3\"] .ipu.fault');"
                " return cell && cell.getAttribute('aria-label')",
                15,
            )
            assert "faulty" in label
            assert "web test" in label
            row = appears(browser, '.machine[data-agent="ag5"].links-down', 15)
            assert "gwlink0" in row.get_attribute("aria-label")
            hung = appears(browser, '.machine[data-agent="ag6"].unreachable', 20)
            assert "unreachable" in hung.get_attribute("aria-label")
            screenshot(browser, "admin-map-faults")
        finally:
            for agent, _ in faults:
                assert api.delete(f"/api/v1/admin/agents/{agent}/faults").status_code == 200
    for selector in (
        '.machine[data-agent="ag3"] .ipu.fault',
        '.machine[data-agent="ag5"].links-down',
        '.machine[data-agent="ag6"].unreachable',
    ):
        wait_in_page(browser, f"return !document.querySelector({selector!r})", 30)


def test_a_running_workload_shows_its_utilisation_and_holder(console: Console) -> None:
    """An application attached over IPUoF shows on its IPUs: who holds them, how busy."""
    console.log_in_admin()
    browser = console.browser
    console.pod.run("vipu", "create", "partition", "busy", "--size", "4")
    env = console.pod.env() | {
        "IPUOF_VIPU_API_HOST": "127.0.0.1",
        "IPUOF_VIPU_API_PORT": str(console.pod.user_port),
        "IPUOF_VIPU_API_PARTITION_ID": "busy",
    }
    workload = subprocess.Popen(
        [str(BIN / "vpod-workload"), "--seconds", "60", "--load", "0.8"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        label = wait_in_page(
            browser,
            "const cells = [...document.querySelectorAll('#map .ipu[data-partition=\"busy\"]')];"
            " const busy = cells.filter(c => c.classList.contains('attached')"
            " && c.firstChild.style.height !== '0px' && c.firstChild.style.height !== '0');"
            " return busy.length === 4 && busy[0].getAttribute('aria-label')",
            30,
        )
        assert "held by" in label
        assert "vpod-workload" in label
        assert re.search(r"utilisation [1-9]\d*%", label)
        screenshot(browser, "admin-map-workload")
        browser.find_element("css selector", '#map .ipu[data-partition="busy"]').click()
        attached = wait_in_page(
            browser,
            "const p = document.getElementById('panel');"
            " return !p.hidden && p.textContent.includes('vpod-workload') && p.textContent",
            15,
        )
        assert "Attached processes" in attached
    finally:
        workload.terminate()
        workload.wait(30)
        console.pod.run("vipu", "remove", "partition", "busy", "--force", check=False)


def test_the_map_works_from_the_keyboard(console: Console) -> None:
    from selenium.webdriver.common.keys import Keys

    console.log_in_admin()
    browser = console.browser
    grid = browser.find_element("css selector", "#map [role=grid]")
    assert "Arrow keys" in grid.get_attribute("aria-label")
    stops = browser.execute_script(
        "return [...document.querySelectorAll('#map [role=grid]')]"
        ".map(g => g.querySelectorAll('.ipu[tabindex=\"0\"]').length)"
    )
    assert stops
    assert set(stops) == {1}
    browser.find_element("id", "logout").send_keys("")  # focus in the header
    for _ in range(40):
        active = browser.switch_to.active_element
        if active.get_attribute("role") == "gridcell":
            break
        active.send_keys(Keys.TAB)
    first = browser.switch_to.active_element
    assert first.get_attribute("role") == "gridcell"
    slot = int(first.get_attribute("data-slot"))
    first.send_keys(Keys.ARROW_RIGHT)
    assert int(browser.switch_to.active_element.get_attribute("data-slot")) == slot + 1
    browser.switch_to.active_element.send_keys(Keys.ARROW_DOWN)
    assert int(browser.switch_to.active_element.get_attribute("data-slot")) == slot + 5
    browser.switch_to.active_element.send_keys(Keys.ENTER)
    heading = wait_in_page(
        browser,
        "const p = document.getElementById('panel'); const h = p.querySelector('h2');"
        " return !p.hidden && h && h.textContent",
        15,
    )
    assert heading.startswith(("Machine", "Partition"))


def test_operator_tables_and_fragmentation(console: Console) -> None:
    console.log_in_admin()
    browser = console.browser
    for page, table in (("agents", "agents"), ("users", "users"), ("clusters", "clusters")):
        console.open(f"/admin/{page}")
        rows = wait_in_page(
            browser, f"return document.querySelectorAll('#{table} tbody tr').length", 15
        )
        assert rows >= 1
        screenshot(browser, f"admin-{page}")
    console.open("/admin/agents")
    wait_in_page(browser, "return document.querySelectorAll('#agents tbody tr').length >= 16", 15)
    search = browser.find_element("css selector", "[data-filter=text]")
    search.send_keys("ag16")
    assert (
        browser.execute_script("return document.querySelectorAll('#agents tbody tr').length") == 1
    )
    console.open("/admin/allocations")
    wait_in_page(browser, "return document.querySelector('#allocations tbody button')", 15)
    browser.find_element("css selector", "#allocations tbody button").click()
    sizes = wait_in_page(
        browser, "return document.querySelectorAll('#fragmentation tbody tr').length", 15
    )
    assert sizes >= 4
    screenshot(browser, "admin-allocations")
    console.open("/admin/clusters")
    wait_in_page(browser, "return document.querySelector('#clusters tbody button')", 15)
    browser.find_element("css selector", "#clusters tbody button").click()
    tests = wait_in_page(browser, "return document.querySelectorAll('#tests tbody tr').length", 60)
    assert tests == 5


def test_the_audit_log_streams_live(console: Console) -> None:
    console.log_in_admin()
    console.open("/admin/events")
    wait_in_page(console.browser, "return document.querySelector('.live.on')", 30)
    console.pod.run("vipu", "create", "partition", "audited", "--size", "1")
    console.pod.run("vipu", "remove", "partition", "audited")
    wait_in_page(
        console.browser,
        "return [...document.querySelectorAll('#events tr.fresh')]"
        ".some(r => r.textContent.includes('audited'))",
        10,
    )
    screenshot(console.browser, "admin-events")


def _run_action(console: Console, cluster: str, action: str) -> str:
    browser = console.browser
    button = wait_in_page(
        browser,
        f'return document.querySelector(\'[data-cluster="{cluster}"] [data-action="{action}"]\')',
        60,
    )
    button.click()
    return str(
        wait_in_page(
            browser,
            "const s = document.querySelector('#task .task-state');"
            " return s && ['FINISHED', 'ERROR'].includes(s.dataset.state) && s.dataset.state",
            120,
        )
    )


def test_a_tenant_creates_a_vpod_follows_its_phases_suspends_and_resumes(
    console: Console,
) -> None:
    console.log_in_tenant()
    browser = console.browser
    assert "Open mode" not in browser.find_element("id", "banner").text
    appears(browser, "#clusters")
    options = browser.execute_script(
        "return [...document.querySelectorAll('#flavor option')].map(o => o.textContent)"
    )
    assert any("/h" in o and "/month" in o and "available now" in o for o in options)
    browser.find_element("css selector", "#create-cluster [name=name]").send_keys("webpod")
    browser.find_element("css selector", "#create-cluster button[type=submit]").click()
    final = wait_in_page(
        browser,
        "const s = document.querySelector('#task .task-state');"
        " return s && ['FINISHED', 'ERROR'].includes(s.dataset.state) && s.dataset.state",
        120,
    )
    assert final == "FINISHED"
    phases = browser.execute_script(
        "return [...document.querySelectorAll('#task li[data-phase]')]"
        ".map(li => [li.dataset.phase, li.className])"
    )
    assert len(phases) >= 3
    assert all(state == "done" for _, state in phases)
    # The list catches up with the finished task on the open page, no reload.
    status = wait_in_page(
        browser,
        "const row = [...document.querySelectorAll('#clusters tbody tr')]"
        ".find(tr => tr.cells[0].textContent === 'webpod');"
        " return row && row.cells[2].textContent",
        UPDATE_LIMIT_S,
    )
    assert status == "ACTIVE"
    assert browser.find_element("css selector", "#cluster-list .filters .muted").text == "1 of 1"
    screenshot(browser, "tenant-clusters")
    assert _run_action(console, "webpod", "suspend") == "FINISHED"
    wait_in_page(
        browser,
        'return document.querySelector(\'[data-cluster="webpod"] [data-action="resume"]\')',
        30,
    )
    assert _run_action(console, "webpod", "resume") == "FINISHED"
    wait_in_page(
        browser,
        'return document.querySelector(\'[data-cluster="webpod"] [data-action="suspend"]\')',
        30,
    )
    for page in ("quotas", "invoice", "volumes"):
        console.open(f"/tenant/{page}")
        wait_in_page(browser, "return document.querySelector('main h1')", 30)
        if page == "invoice":
            wait_in_page(browser, "return document.getElementById('invoice-chart')", 60)
            assert (
                browser.find_element("id", "invoice-csv").get_attribute("download").endswith(".csv")
            )
        if page == "quotas":
            meters = browser.execute_script(
                "return document.querySelectorAll('[role=meter]').length"
            )
            assert meters >= 5
        screenshot(browser, f"tenant-{page}")
    assert console_errors(browser) == []


def test_a_tenant_reaches_no_admin_page_and_nothing_of_another_project(console: Console) -> None:
    admin_token = (console.pod.data_dir / "cloud-admin.token").read_text().strip()
    cloud = httpx.Client(
        base_url=console.url, headers={"Authorization": f"Bearer {admin_token}"}, timeout=60
    )
    with cloud:
        made = cloud.post("/api/cloud/v1/admin/projects", json={"id": "rival"})
        assert made.status_code == 201, made.text
        rival_token = made.json()["token"]["token"]
    with httpx.Client(
        base_url=console.url, headers={"Authorization": f"Bearer {rival_token}"}, timeout=60
    ) as rival:
        task = rival.post("/api/cloud/v1/volumes", json={"name": "secret-data", "size_gib": 1})
        assert task.status_code == 202, task.text
        volume_id = task.json()["resource_id"]
    console.log_in_tenant()
    browser = console.browser
    for path in ("/admin/map", "/admin/users", "/user/partitions"):
        console.open(path)
        assert browser.find_element("tag name", "h1").text == "Not permitted"
    console.open(f"/api/cloud/v1/volumes/{volume_id}")
    assert "NOT_FOUND" in browser.find_element("tag name", "body").text
    console.open("/api/v1/admin/pod-map")
    assert "UNAUTHENTICATED" in browser.find_element("tag name", "body").text
    console.open("/tenant/volumes")
    wait_in_page(browser, "return document.querySelector('#volumes')", 30)
    assert "secret-data" not in browser.find_element("id", "view").text
    status = browser.execute_async_script(
        "const done = arguments[0]; fetch('/api/v1/admin/agents').then(r => done(r.status));"
    )
    assert status == 401
    console.log_in_admin()
    console.open("/tenant/clusters")
    assert browser.find_element("tag name", "h1").text == "Not permitted"


def _log_in_admin_to(console: Console, path: str) -> str:
    """Log in as the operator from ``/login?next=...``; the URL the browser ends on."""
    console.log_out()
    console.open(path)
    form = appears(console.browser, "#login-vipu")
    form.find_element("name", "user_id").send_keys(console.admin_id)
    form.find_element("name", "access_key").send_keys(console.admin_key)
    form.find_element("css selector", "button").click()
    eventually(lambda: "/login" not in console.browser.current_url, 30, "the login is left")
    return str(console.browser.current_url)


def test_login_follows_next_only_to_this_site(console: Console) -> None:
    """``next`` that a browser reads as another host (backslash, tab, //) leads home."""
    for target in (
        "/%5Cevil.example",
        "/%09/evil.example",
        "//evil.example",
        "/%5C%09evil.example",
    ):
        landed = _log_in_admin_to(console, f"/login?next={target}")
        assert landed == f"{console.url}/admin/map", (target, landed)
    assert _log_in_admin_to(console, "/login?next=/admin/agents") == f"{console.url}/admin/agents"


def test_the_map_says_where_faults_and_partitions_are(console: Console) -> None:
    """The heading names the V-IPU cluster once; the summary names the faulty IPU and a click
    scrolls to it; partition names are written beside their machines; the legend wears the
    colours of the partitions drawn; the map's JSON came gzip-compressed."""
    console.log_in_admin()
    browser = console.browser
    cluster = _main_cluster(console)
    heading = browser.execute_script(
        "return document.querySelector(`[data-cluster='${arguments[0]}'] h2`).textContent",
        cluster,
    )
    assert heading.startswith(f"V-IPU cluster “{cluster}”"), heading
    assert not re.search(r"(?i)\bcluster\s+cluster\b", heading)
    sizes = browser.execute_script(
        "const e = performance.getEntriesByType('resource')"
        ".find(r => r.name.endsWith('/api/v1/admin/pod-map'));"
        " return e && [e.encodedBodySize, e.decodedBodySize]"
    )
    assert sizes is not None
    assert 0 < sizes[0] < sizes[1], f"the pod map came uncompressed: {sizes}"
    (agent, device) = ("ag15", 2)  # near the end of the pod64: below the fold
    console.pod.run("vipu", "create", "partition", "named", "--size", "8")
    with console.api() as api:
        try:
            fault = {"kind": "ipu", "device_id": device, "reason": "far down"}
            injected = api.post(f"/api/v1/admin/agents/{agent}/faults", json=fault)
            assert injected.status_code == 200, injected.text
            link = appears(browser, "#map-summary .fault-link", 15)
            summary = browser.find_element("id", "map-summary").text
            assert f"1 faulty IPU(s): {agent} IPU {device}" in summary, summary
            assert f"cluster {cluster}" in link.text
            browser.execute_script("window.scrollTo(0, 0)")
            link.click()
            shown = wait_in_page(
                browser,
                "const cell = document.activeElement;"
                " if (!cell || !cell.classList.contains('ipu')) return null;"
                " const box = cell.getBoundingClientRect();"
                " return cell.classList.contains('fault') && cell.classList.contains('located')"
                " && box.top >= 0 && box.bottom <= innerHeight"
                " && cell.closest('.machine').dataset.agent",
                10,
            )
            assert shown == agent
            names = wait_in_page(
                browser,
                "const boxes = [...document.querySelectorAll('#map .pnames')]"
                ".filter(b => b.textContent.split(', ').includes('named'));"
                " return boxes.length && boxes.map(b => b.closest('.machine').dataset.agent)",
                10,
            )
            held = browser.execute_script(
                "const cells = document.querySelectorAll('#map .ipu[data-partition=named]');"
                " return [...new Set([...cells].map(c => c.closest('.machine').dataset.agent))]"
            )
            assert sorted(names) == sorted(held)
            same = wait_in_page(
                browser,
                "const probe = document.createElement('i'); document.body.append(probe);"
                " const rgb = (c) => {"
                " probe.style.color = c; return getComputedStyle(probe).color; };"
                " const legend = document.getElementById('legend-partition');"
                " const worn = (legend.dataset.colours || '').split('|').filter(Boolean).map(rgb);"
                " const drawn = new Set([...document.querySelectorAll('#map .ipu.held')]"
                ".map(c => getComputedStyle(c).backgroundColor));"
                " probe.remove();"
                " return worn.length > 0 && worn.every(c => drawn.has(c))",
                10,
            )
            assert same
            screenshot(browser, "admin-map-located-fault")
        finally:
            assert api.delete(f"/api/v1/admin/agents/{agent}/faults").status_code == 200
            console.pod.run("vipu", "remove", "partition", "named")
    assert console_errors(browser) == []


def test_a_new_reservation_is_on_the_invoice_at_once_priced_by_the_month(
    console: Console,
) -> None:
    with httpx.Client(
        base_url=console.url + "/api/cloud/v1",
        headers={"Authorization": f"Bearer {console.token}"},
        timeout=60,
    ) as cloud:
        bought = cloud.post(
            "/reservations", json={"flavor": "g2a-ai-fast-v1pod-4", "units": 1, "term": "1y"}
        )
        assert bought.status_code == 201, bought.text
        reservation = bought.json()
        try:
            console.log_in_tenant()
            console.open("/tenant/invoice")
            browser = console.browser
            cells = wait_in_page(
                browser,
                "const row = [...document.querySelectorAll('#invoice-lines tbody tr')]"
                ".find(tr => tr.textContent.includes('reserved:g2a-ai-fast-v1pod-4'));"
                " return row && [...row.cells].map(c => c.textContent)",
                30,
            )
            price = f"{reservation['price_per_unit_month']}/unit-month"
            assert price in cells, cells
            headers = browser.execute_script(
                "return [...document.querySelectorAll('#invoice-lines th')].map(t => t.textContent)"
            )
            assert "Unit price" in headers
            assert "Price/hour" not in headers
        finally:
            assert cloud.delete(f"/reservations/{reservation['id']}").status_code == 200
