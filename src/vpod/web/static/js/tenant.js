// A cloud project's console: clusters (with their tasks' phases), volumes, quotas, invoices.
// Every call goes to /api/cloud/v1 with the project's token (held by the session).
import { del, get, post, query } from "./api.js";
import { clear, confirmDialog, filteredTable, fmtTime, h, keyValues, meter, openPanel, section, toast } from "./ui.js";

const CLOUD = "/api/cloud/v1";
const GPU_KINDS = new Set(["gpu_baremetal", "gpu_vm"]);

// Follow a task's phases as they happen (one small request while it runs).
export async function followTask(task, box) {
  const list = h("ol", { class: "phases", "aria-live": "polite" });
  const state = h("p", { class: "task-state" });
  clear(box).append(h("h2", {}, `Task ${task.operation} ${task.resource_name}`), state, list);
  for (;;) {
    const seen = new Set(task.phases.map((p) => p.phase));
    clear(list);
    const expected = task.expected_phases.length ? task.expected_phases : task.phases.map((p) => p.phase);
    for (const phase of expected) {
      const at = task.phases.find((p) => p.phase === phase);
      const current = task.detailed_state === phase && task.state === "RUNNING";
      list.append(h("li", { class: seen.has(phase) ? (current ? "current" : "done") : "todo", "data-phase": phase },
        phase, at ? h("time", { datetime: at.at }, " " + fmtTime(at.at)) : ""));
    }
    state.textContent = `${task.state}${task.detailed_state ? ` (${task.detailed_state})` : ""}${task.error ? `: ${task.error}` : ""}`;
    state.dataset.state = task.state;
    if (task.state === "FINISHED" || task.state === "ERROR") return task;
    await new Promise((resolve) => setTimeout(resolve, 300));
    task = await get(`${CLOUD}/tasks/${encodeURIComponent(task.id)}`);
  }
}

function flavorLabel(f) {
  return `${f.name}: ${f.accelerators || f.description} · ${f.currency} ${f.price_per_hour}/h, `
    + `${f.price_per_month}/month · ${f.capacity} available now`;
}

export async function showClusters(view) {
  document.title = "Clusters - vpod";
  const taskBox = h("div", { id: "task", "aria-live": "polite" });
  const listBox = h("div", { id: "cluster-list" });
  const flavors = await get(`${CLOUD}/flavors`);
  let select = null;
  async function run(promise, what) {
    try {
      const task = await promise;
      const done = await followTask(task, taskBox);
      if (done.state === "ERROR") toast(`${what} failed: ${done.error}`);
      await refresh();
    } catch (error) {
      toast(error.message);
    }
  }
  function act(cluster, name, label, body) {
    return h("button", { type: "button", "data-action": name, onclick: async () => {
      if (["delete", "rebuild"].includes(name) && !await confirmDialog(`${label} cluster ${cluster.name}?`, label)) return;
      const path = `${CLOUD}/clusters/${encodeURIComponent(cluster.id)}`;
      run(name === "delete" ? del(path) : post(`${path}/${name}`, body ? body() : undefined), `${label} ${cluster.name}`);
    } }, label);
  }
  async function shell(cluster) {
    // The cluster's console address (a browser terminal), and how to ssh from a machine.
    try {
      const path = `${CLOUD}/clusters/${encodeURIComponent(cluster.id)}`;
      const [console, ssh] = await Promise.all([get(`${path}/console`), get(`${path}/ssh`)]);
      const keys = ssh.servers.flatMap((s) => s.host_keys.map((k) => [s.name, `${k.key.split(" ")[0]} ${k.fingerprint}`]));
      openPanel(`Shell of ${cluster.name}`,
        h("p", {}, h("a", { href: new URL(console.url).pathname + new URL(console.url).search, id: "open-terminal" }, "Open a terminal in the browser")),
        keyValues([["Server", console.server], ["User", ssh.servers.length ? ssh.servers[0].user : "—"],
          ["Keypairs", ssh.keypairs.join(", ") || "none (add one to ssh in)"]]),
        section("SSH host keys", keys.length ? keyValues(keys) : h("p", { class: "muted" }, "none yet")),
        section("From your machine", h("pre", {}, `vpod cluster ssh ${cluster.name}\nvpod cluster ssh-config ${cluster.name} >> ~/.ssh/config`)));
    } catch (error) { toast(error.message); }
  }
  function gpus(cluster) {
    // Each server's GPUs by UUID, with health and the last sample its host's agent sent.
    const rows = cluster.servers.flatMap((s) => s.gpus.map((g) => ({ server: s.name, ...g,
      health: g.healthy === null ? "—" : g.healthy ? "healthy" : `unhealthy: ${g.problems}` })));
    const value = (v, unit) => (v === null || v === undefined ? "—" : `${v}${unit}`);
    openPanel(`GPUs of ${cluster.name}`, filteredTable([
      { key: "server", label: "Server", choices: true }, { key: "index", label: "GPU" },
      { key: "uuid", label: "UUID" }, { key: "name", label: "Model" },
      { key: "health", label: "Health", choices: true },
      { key: "utilization_pct", label: "Util", render: (g) => value(g.utilization_pct, "%") },
      { key: "memory_used_mib", label: "Memory used", render: (g) => value(g.memory_used_mib, " MiB") },
      { key: "temperature_c", label: "Temp", render: (g) => value(g.temperature_c, " °C") },
      { key: "power_w", label: "Power", render: (g) => value(g.power_w, " W") },
    ], rows, { id: "server-gpus" }));
  }
  async function refresh() {
    const [clusters, latest] = await Promise.all([get(`${CLOUD}/clusters`), get(`${CLOUD}/flavors`)]);
    for (const option of select.options) {
      const flavor = latest.find((f) => f.name === option.value);
      if (flavor) { option.textContent = flavorLabel(flavor); option.disabled = flavor.capacity < 1; }
    }
    clear(listBox).append(filteredTable([
      { key: "name", label: "Cluster" }, { key: "flavor", label: "Flavor", choices: true },
      { key: "status", label: "Status", choices: true },
      { key: "size", label: "Size" },
      { key: "created_at", label: "Created", render: (c) => fmtTime(c.created_at) },
      { key: "actions", label: "Actions", render: (c) => {
        const active = c.status === "ACTIVE";
        return h("div", { class: "actions", "data-cluster": c.name },
          active ? act(c, "suspend", "Suspend") : null,
          c.status === "SUSPENDED" ? act(c, "resume", "Resume") : null,
          active ? act(c, "reboot", "Reboot") : null,
          active ? act(c, "rebuild", "Rebuild", () => ({})) : null,
          active && GPU_KINDS.has(c.kind) ? act(c, "resize", "Resize", () => ({ server_count: Number(prompt("Servers", c.server_count)) || c.server_count })) : null,
          active ? h("button", { type: "button", onclick: () => shell(c) }, "Shell") : null,
          c.servers.some((s) => s.gpus.length) ? h("button", { type: "button", onclick: () => gpus(c) }, "GPUs") : null,
          c.task_id ? h("span", { class: "muted" }, "busy…") : act(c, "delete", "Delete"));
      } },
    ], clusters.map((c) => ({ ...c, size: c.ipus ? `${c.ipus} IPUs` : `${c.server_count} × ${c.gpus} GPUs` })),
    { id: "clusters" }));
  }
  const serverCount = h("input", { name: "server_count", type: "number", min: 1, value: 1, disabled: true });
  select = h("select", { name: "flavor", id: "flavor", required: true, onchange: (e) => {
    const flavor = flavors.find((f) => f.name === e.target.value);
    serverCount.disabled = !flavor || !GPU_KINDS.has(flavor.kind);
  } }, flavors.map((f) => h("option", { value: f.name, disabled: f.capacity < 1 }, flavorLabel(f))));
  const form = h("form", { id: "create-cluster", class: "card", onsubmit: (e) => {
    e.preventDefault();
    const data = new FormData(e.target);
    const body = { name: data.get("name"), flavor: data.get("flavor") };
    if (!serverCount.disabled) body.server_count = Number(data.get("server_count"));
    run(post(`${CLOUD}/clusters`, body), `Creating ${body.name}`);
  } },
  h("h2", {}, "New cluster"),
  h("label", {}, "Name ", h("input", { name: "name", required: true, minlength: 3, maxlength: 63, pattern: "[A-Za-z0-9][A-Za-z0-9._\\-]*" })),
  h("label", {}, "Flavor ", select), h("label", {}, "Servers ", serverCount),
  h("button", { type: "submit" }, "Create"));
  select.dispatchEvent(new Event("change"));
  view.append(h("h1", {}, "Clusters"), listBox, form, taskBox);
  await refresh();
}

export async function showVolumes(view) {
  document.title = "Volumes - vpod";
  const box = h("div", { id: "volume-list" });
  const taskBox = h("div", { id: "task" });
  const { followTask: follow } = { followTask };
  async function run(promise) {
    try { await follow(await promise, taskBox); await refresh(); } catch (error) { toast(error.message); }
  }
  async function refresh() {
    const [volumes, clusters] = await Promise.all([get(`${CLOUD}/volumes`), get(`${CLOUD}/clusters`)]);
    clear(box).append(filteredTable([
      { key: "name", label: "Volume" }, { key: "size_gib", label: "GiB" },
      { key: "volume_type", label: "Type", choices: true }, { key: "status", label: "Status", choices: true },
      { key: "cluster_id", label: "Attached to", render: (v) => (clusters.find((c) => c.id === v.cluster_id) || {}).name || "—" },
      { key: "actions", label: "Actions", render: (v) => v.boot ? "boot volume" : h("div", { class: "actions" },
        v.cluster_id
          ? h("button", { type: "button", onclick: () => run(post(`${CLOUD}/volumes/${encodeURIComponent(v.id)}/detach`)) }, "Detach")
          : h("form", { onsubmit: (e) => { e.preventDefault(); run(post(`${CLOUD}/volumes/${encodeURIComponent(v.id)}/attach`, { cluster: new FormData(e.target).get("cluster") })); } },
            h("select", { name: "cluster", "aria-label": `Cluster to attach ${v.name} to` }, clusters.map((c) => h("option", { value: c.id }, c.name))),
            h("button", { type: "submit", disabled: !clusters.length }, "Attach")),
        h("button", { type: "button", class: "danger", onclick: async () => {
          if (await confirmDialog(`Delete volume ${v.name} and its data?`, "Delete")) run(del(`${CLOUD}/volumes/${encodeURIComponent(v.id)}`));
        } }, "Delete")) },
    ], volumes, { id: "volumes" }));
  }
  const form = h("form", { id: "create-volume", class: "card", onsubmit: (e) => {
    e.preventDefault();
    const data = new FormData(e.target);
    run(post(`${CLOUD}/volumes`, { name: data.get("name"), size_gib: Number(data.get("size_gib")), volume_type: data.get("volume_type") }));
  } }, h("h2", {}, "New volume"),
  h("label", {}, "Name ", h("input", { name: "name", required: true })),
  h("label", {}, "Size (GiB) ", h("input", { name: "size_gib", type: "number", min: 1, value: 10, required: true })),
  h("label", {}, "Type ", h("select", { name: "volume_type" }, h("option", {}, "standard"), h("option", {}, "ssd"))),
  h("button", { type: "submit" }, "Create"));
  view.append(h("h1", {}, "Volumes"), box, form, taskBox);
  await refresh();
}

export async function showQuotas(view) {
  document.title = "Quotas - vpod";
  const project = await get(`${CLOUD}/project`);
  view.append(h("h1", {}, `Quotas of ${project.name}`), h("div", { id: "quotas", class: "card" },
    Object.entries(project.quotas).map(([name, limit]) => meter(name.replace(/_/g, " "), project.usage[name] || 0, limit))));
}

const DAY_MS = 86400000;
const MAX_CHART_DAYS = 366; // the API's longest daily breakdown
const isoDay = (date) => date.toISOString().slice(0, 10);

function csvOf(invoice) {
  const cell = (v) => /[",\n]/.test(String(v)) ? `"${String(v).replace(/"/g, '""')}"` : String(v);
  const head = ["resource_type", "resource_id", "resource_name", "item", "quantity", "unit_price_per_hour", "minutes", "amount"];
  const lines = invoice.lines.map((l) => head.map((k) => cell(l[k])).join(","));
  return [head.join(","), ...lines, `total,,,,,,${invoice.minutes},${invoice.total}`].join("\n") + "\n";
}

function chart(days, currency) {
  const width = 640; const height = 180; const pad = 28;
  const most = Math.max(0.01, ...days.map((d) => d.amount));
  const step = (width - pad) / Math.max(1, days.length);
  const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
  svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
  svg.setAttribute("role", "img");
  svg.setAttribute("aria-label", `Charges per day: ${days.map((d) => `${d.day} ${currency} ${d.amount.toFixed(2)}`).join(", ")}`);
  svg.id = "invoice-chart";
  days.forEach((d, i) => {
    const bar = document.createElementNS(svg.namespaceURI, "rect");
    const barHeight = (d.amount / most) * (height - pad);
    bar.setAttribute("x", pad + i * step + 1);
    bar.setAttribute("y", height - pad - barHeight);
    bar.setAttribute("width", Math.max(1, step - 2));
    bar.setAttribute("height", barHeight);
    bar.setAttribute("class", "bar");
    const title = document.createElementNS(svg.namespaceURI, "title");
    title.textContent = `${d.day}: ${currency} ${d.amount.toFixed(2)}`;
    bar.append(title);
    svg.append(bar);
  });
  for (const [y, text] of [[height - pad, "0"], [10, most.toFixed(2)]]) {
    const label = document.createElementNS(svg.namespaceURI, "text");
    label.setAttribute("x", 0); label.setAttribute("y", y); label.textContent = text;
    svg.append(label);
  }
  return svg;
}

// A reserved line is priced by the unit-month (its hourly price is 0: the reservation pays),
// an on-demand line by the hour.
function priced(line) {
  const price = line.billing === "reserved"
    ? `${line.unit_price_per_month}/unit-month` : `${line.unit_price_per_hour}/hour`;
  return { ...line, unit_price: price };
}

export async function showInvoice(view) {
  document.title = "Invoice - vpod";
  const now = new Date();
  const first = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
  const tomorrow = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1));
  const out = h("div", { id: "invoice", "aria-live": "polite" });
  async function load(start, end) {
    clear(out).append(h("p", { class: "muted" }, "Loading…"));
    const period = { start: `${start}T00:00:00Z`, end: `${end}T00:00:00Z` };
    try {
      // The invoice, and its total day by day in one answer (the days add up to it).
      const span = (Date.parse(period.end) - Date.parse(period.start)) / DAY_MS;
      const [invoice, daily] = await Promise.all([
        get(`${CLOUD}/invoice` + query(period)),
        span <= MAX_CHART_DAYS ? get(`${CLOUD}/invoice/days` + query(period)) : null,
      ]);
      const days = daily ? daily.days.map((d) => ({ day: isoDay(new Date(d.start)), amount: Number(d.total) })) : [];
      const blob = new Blob([csvOf(invoice)], { type: "text/csv" });
      clear(out).append(
        h("p", { class: "total" }, `Total ${invoice.currency} ${invoice.total} for ${start} to ${end} (end excluded)`),
        daily ? chart(days, invoice.currency)
          : h("p", { class: "muted" }, `The chart shows periods of up to ${MAX_CHART_DAYS} days.`),
        h("p", {}, h("a", { href: URL.createObjectURL(blob), download: `invoice-${start}-${end}.csv`, id: "invoice-csv" }, "Download CSV")),
        filteredTable([
          { key: "resource_name", label: "Resource" }, { key: "item", label: "Item", choices: true },
          { key: "quantity", label: "Quantity" }, { key: "unit_price", label: "Unit price" },
          { key: "minutes", label: "Minutes" }, { key: "amount", label: "Amount" },
        ], invoice.lines.map(priced), { id: "invoice-lines" }));
    } catch (error) {
      clear(out).append(h("p", { class: "error" }, error.message));
    }
  }
  const form = h("form", { class: "filters", id: "invoice-period", onsubmit: (e) => {
    e.preventDefault();
    const data = new FormData(e.target);
    load(data.get("start"), data.get("end"));
  } },
  h("label", {}, "From ", h("input", { type: "date", name: "start", value: isoDay(first), required: true })),
  h("label", {}, "To (excluded) ", h("input", { type: "date", name: "end", value: isoDay(tomorrow), required: true })),
  h("button", { type: "submit" }, "Show"));
  view.append(h("h1", {}, "Invoice"), form, out);
  await load(isoDay(first), isoDay(tomorrow));
}
