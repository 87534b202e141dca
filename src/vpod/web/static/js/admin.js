// Operators' tables: agents, clusters (with their tests), allocations (with fragmentation),
// users, and the audit log as a live stream.
import { get, post, query } from "./api.js";
import { clear, filteredTable, fmtTime, h, toast } from "./ui.js";
import { fragmentationView, showMachine } from "./details.js";

export async function showAgents(view) {
  document.title = "Agents - vpod";
  const { agents } = await get("/api/v1/admin/agents");
  const rows = agents.map((a) => ({ ...a, address: `${a.host}:${a.port}`,
    reach: a.reachable ? "reachable" : "unreachable", fault_count: a.faults.length }));
  view.append(h("h1", {}, "Agents"), filteredTable([
    { key: "id", label: "Agent", render: (r) => h("a", { href: "#", onclick: (e) => { e.preventDefault(); showMachine(r.id); } }, r.id) },
    { key: "address", label: "Address" },
    { key: "machine_type", label: "Type", choices: true },
    { key: "cluster_id", label: "Cluster", choices: true },
    { key: "allocation_id", label: "Allocation", choices: true },
    { key: "reach", label: "State", choices: true },
    { key: "last_seen", label: "Last heartbeat", render: (r) => fmtTime(r.last_seen) },
    { key: "fault_count", label: "Faults", render: (r) => r.faults.map((f) => f.description).join("; ") || "none" },
  ], rows, { id: "agents" }));
}

export async function showGpus(view) {
  // The cloud's GPU hosts that run an agent: every GPU with its health and last sample.
  document.title = "GPUs - vpod";
  const hosts = await get("/api/cloud/v1/admin/gpus");
  const value = (v, unit) => (v === null || v === undefined ? "—" : `${v}${unit}`);
  const rows = hosts.flatMap((host) => host.gpus.map((g) => ({ ...g, host: host.host_id,
    model: host.model, driver: host.driver_version,
    agent: host.silent_for_s === null ? "reporting" : `silent ${Math.round(host.silent_for_s)} s`,
    health: g.healthy ? "healthy" : "unhealthy", use: g.in_use ? "in use" : "free" })));
  view.append(h("h1", {}, "GPUs"), filteredTable([
    { key: "host", label: "Host", choices: true }, { key: "index", label: "GPU" },
    { key: "uuid", label: "UUID" }, { key: "name", label: "Model", choices: true },
    { key: "agent", label: "Agent", choices: true }, { key: "use", label: "Use", choices: true },
    { key: "health", label: "Health", choices: true, render: (g) => (g.healthy ? "healthy" : `unhealthy: ${g.problems}`) },
    { key: "utilization_pct", label: "Util", render: (g) => value(g.utilization_pct, "%") },
    { key: "memory_used_mib", label: "Memory used", render: (g) => value(g.memory_used_mib, " MiB") },
    { key: "temperature_c", label: "Temp", render: (g) => value(g.temperature_c, " °C") },
    { key: "power_w", label: "Power", render: (g) => value(g.power_w, " W") },
    { key: "last_xid", label: "Last XID", render: (g) => value(g.last_xid || null, "") },
    { key: "driver", label: "Driver", choices: true },
  ], rows, { id: "gpus" }));
}

export async function showClusters(view) {
  document.title = "Clusters - vpod";
  const { clusters } = await get("/api/v1/admin/clusters");
  const results = h("div", { id: "test-results", "aria-live": "polite" });
  async function runTests(cluster) {
    clear(results).append(h("p", { class: "muted" }, `Testing cluster ${cluster}…`));
    try {
      const report = await post(`/api/v1/admin/clusters/${encodeURIComponent(cluster)}/test`);
      clear(results).append(h("h2", {}, `Tests of ${cluster}: ${report.passed ? "passed" : "FAILED"}`),
        filteredTable([
          { key: "test", label: "Test" }, { key: "outcome", label: "Result", choices: true },
          { key: "summary", label: "Summary" }, { key: "agents_tested", label: "Agents tested" },
          { key: "agents_failed", label: "Failed" }, { key: "details_text", label: "Details" },
        ], report.results.map((r) => ({ ...r, outcome: r.passed ? "passed" : "failed",
          details_text: r.details.join("; ") })), { id: "tests" }));
    } catch (error) {
      clear(results).append(h("p", { class: "error" }, error.message));
    }
  }
  const rows = clusters.map((c) => ({ ...c, machines: c.agent_ids.length }));
  view.append(h("h1", {}, "Clusters"), filteredTable([
    { key: "id", label: "Cluster" }, { key: "machine_type", label: "Type", choices: true },
    { key: "machines", label: "Machines" }, { key: "num_ipus", label: "IPUs" },
    { key: "num_ipulinkdomains", label: "IPU-Link domains" }, { key: "topology", label: "Topology" },
    { key: "cluster_topology", label: "GW-Links", choices: true },
    { key: "test", label: "Tests", render: (r) => h("button", { type: "button", onclick: () => runTests(r.id) }, `Run tests on ${r.id}`) },
  ], rows, { id: "clusters" }), results);
}

export async function showAllocations(view) {
  document.title = "Allocations - vpod";
  const { allocations } = await get("/api/v1/admin/allocations");
  const outlook = h("div", { id: "fragmentation", "aria-live": "polite" });
  const rows = allocations.map((a) => ({ ...a, users: (a.user_ids || []).join(", "), machines: a.agent_ids.join(", ") }));
  const table = filteredTable([
    { key: "id", label: "Allocation" }, { key: "cluster_id", label: "Cluster", choices: true },
    { key: "size", label: "IPUs", choices: true }, { key: "num_partitions", label: "Partitions" },
    { key: "largest", label: "Largest free block", render: (r) => h("span", { "data-largest": r.id }, "…") },
    { key: "users", label: "Users" }, { key: "machines", label: "Machines" },
    { key: "frag", label: "Fragmentation", render: (r) => h("button", { type: "button", onclick: async () => {
      clear(outlook).append(h("h2", {}, `Allocation ${r.id}`),
        fragmentationView(await get(`/api/v1/admin/allocations/${encodeURIComponent(r.id)}/fragmentation`)));
    } }, `What fits in ${r.id}`) },
  ], rows, { id: "allocations" });
  view.append(h("h1", {}, "Allocations"), table, outlook);
  for (const row of rows) {
    get(`/api/v1/admin/allocations/${encodeURIComponent(row.id)}/fragmentation`).then((f) => {
      for (const cell of view.querySelectorAll(`[data-largest="${CSS.escape(row.id)}"]`)) {
        cell.textContent = `${f.largest_free_block} of ${f.free_ipus} free`;
      }
    }).catch(() => {});
  }
}

export async function showUsers(view) {
  document.title = "Users - vpod";
  const { users } = await get("/api/v1/admin/users");
  view.append(h("h1", {}, "Users"), filteredTable([
    { key: "id", label: "User" }, { key: "role", label: "Role", choices: true },
    { key: "allocations", label: "Allocations" },
  ], users.map((u) => ({ ...u, role: u.admin ? "admin" : "user", allocations: u.allocation_ids.join(", ") || "—" })),
  { id: "users" }));
}

export async function showEvents(view) {
  document.title = "Audit log - vpod";
  const filters = { actor: "", action: "", target: "", outcome: "" };
  const tbody = h("tbody");
  const live = h("span", { class: "live", "aria-live": "polite" }, "connecting…");
  function row(e, fresh) {
    return h("tr", { class: fresh ? "fresh" : "" }, h("td", {}, h("time", { datetime: e.time }, fmtTime(e.time))),
      h("td", {}, e.actor), h("td", {}, e.action), h("td", {}, e.target), h("td", {}, e.outcome),
      h("td", {}, e.source), h("td", {}, e.detail));
  }
  const matches = (e) => Object.entries(filters).every(([k, v]) => !v || e[k] === v);
  async function load() {
    try {
      const { events } = await get("/api/v1/admin/events" + query({ ...filters, limit: 200 }));
      clear(tbody).append(...events.map((e) => row(e, false)));
    } catch (error) { toast(error.message); }
  }
  const form = h("form", { class: "filters", onsubmit: (e) => { e.preventDefault(); load(); } },
    Object.keys(filters).map((key) => h("label", {}, key + " ", h("input", { name: key, "data-filter": key,
      oninput: (e) => { filters[key] = e.target.value.trim(); } }))),
    h("button", { type: "submit" }, "Apply"), live);
  view.append(h("h1", {}, "Audit log"), form, h("table", { class: "data", id: "events" },
    h("thead", {}, h("tr", {}, ["Time", "Actor", "Action", "Target", "Outcome", "Source", "Detail"]
      .map((c) => h("th", { scope: "col" }, c)))), tbody));
  const stream = new EventSource("/api/v1/admin/stream");
  stream.addEventListener("hello", () => { live.textContent = "live"; live.className = "live on"; });
  stream.addEventListener("error", () => { live.textContent = "reconnecting…"; live.className = "live off"; });
  stream.addEventListener("audit", (message) => {
    const event = JSON.parse(message.data);
    if (matches(event)) tbody.prepend(row(event, true));
    while (tbody.children.length > 500) tbody.lastChild.remove();
  });
  await load();
}

export async function showMyPartitions(view) {
  document.title = "Partitions - vpod";
  const [{ partitions }, { allocations }] = await Promise.all([get("/api/v1/partitions"), get("/api/v1/allocations")]);
  view.append(h("h1", {}, "Your partitions"), filteredTable([
    { key: "id", label: "Partition" }, { key: "allocation_id", label: "Allocation", choices: true },
    { key: "size", label: "IPUs" }, { key: "ready_state", label: "State", choices: true },
    { key: "created_at", label: "Created", render: (r) => fmtTime(r.created_at) },
  ], partitions, { id: "partitions" }),
  h("h2", {}, "Your allocations"), filteredTable([
    { key: "id", label: "Allocation" }, { key: "cluster_id", label: "Cluster" },
    { key: "size", label: "IPUs" }, { key: "num_partitions", label: "Partitions" },
  ], allocations, { id: "my-allocations" }));
}
