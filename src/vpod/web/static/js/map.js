// The live pod map: clusters → IPU-Link domains → machines in ladder order → 4 IPUs each.
// Drawn once from GET /api/v1/admin/pod-map, then kept current by the server-sent events of
// /api/v1/admin/stream; changes are queued and applied once per animation frame.
import { get } from "./api.js";
import { clear, h, toast } from "./ui.js";
import { showFragmentation, showMachine, showPartition } from "./details.js";

const map = {
  clusters: new Map(), // id -> {cells: [el], slotOwner: Map slot->partition id, partitions: Map}
  agents: new Map(), // agent id -> {cluster, machine, row, faults, state, reason, links}
  queue: [],
  frame: 0,
  applied: 0,
  flushMaxMs: 0, // the longest frame's work, for benchmarks/web_console.py
};
window.vpodMap = map;

// A stable colour per id (FNV-1a, then spread round the hue circle by the golden angle), so
// neighbouring partitions p1, p2, p3 look different.
export function colourOf(id) {
  let hash = 2166136261;
  for (const char of id) hash = Math.imul(hash ^ char.charCodeAt(0), 16777619) >>> 0;
  const hue = Math.round((hash % 1000) * 137.508) % 360;
  return `hsl(${hue} 65% ${44 + ((hash >>> 12) % 4) * 6}%)`;
}

const esc = (text) => String(text).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

function domainLabel(cluster, domain) {
  const peers = cluster.gw_links.filter((l) => l.a === domain.index || l.b === domain.index)
    .map((l) => (l.a === domain.index ? l.b : l.a));
  const gw = peers.length ? `, GW-Links to domain ${[...new Set(peers)].join(" and ")}` : "";
  return `IPU-Link domain ${domain.index} (${domain.topology})${gw}`;
}

function clusterHtml(cluster) {
  const parts = [];
  parts.push(`<section class="cluster" data-cluster="${esc(cluster.id)}">`);
  // The id in quotes after what it is: "V-IPU cluster “cluster”", never "Cluster cluster".
  parts.push(`<h2>V-IPU cluster “${esc(cluster.id)}” <span class="muted">${esc(cluster.machine_type)} · `
    + `${cluster.num_ipus} IPUs · ${cluster.domains.length} IPU-Link domain(s), `
    + `${esc(cluster.ild_topology)} · ${esc(cluster.gw_topology)} GW-Links</span></h2>`);
  const roomy = cluster.num_ipus <= 256 ? " roomy" : "";
  parts.push(`<div class="fabric${roomy}" role="grid" aria-label="Pod map of cluster ${esc(cluster.id)}: `
    + `IPU-Link domains, machines in ladder order, four IPUs each. Arrow keys move, Enter opens.">`);
  cluster.domains.forEach((domain, index) => {
    if (index > 0) {
      const looped = cluster.gw_links.some((l) => l.a === index - 1 && l.b === index);
      parts.push(`<div class="gw${looped ? "" : " none"}" aria-hidden="true"><span>GW</span></div>`);
    }
    parts.push(`<div class="domain" role="rowgroup" aria-label="${esc(domainLabel(cluster, domain))}">`);
    parts.push(`<div class="domain-head" aria-hidden="true">ILD ${domain.index} · ${esc(domain.topology)}</div>`);
    let group = undefined;
    for (const machine of domain.machines) {
      if (machine.allocation_id !== group) {
        if (group !== undefined) parts.push("</div>");
        group = machine.allocation_id;
        const id = group || "";
        const style = group ? ` style="--alloc:${colourOf(group)}"` : "";
        parts.push(`<div class="alloc${group ? "" : " unallocated"}"${style} data-alloc="${esc(id)}">`);
        if (group) {
          parts.push(`<button type="button" class="alloc-label" data-alloc="${esc(id)}" `
            + `aria-label="Allocation ${esc(id)}: fragmentation">${esc(id)}</button>`);
        }
      }
      parts.push(`<div class="machine" role="row" data-agent="${esc(machine.agent_id)}" `
        + `data-machine="${machine.index}"><span class="mlabel" role="rowheader" `
        + `data-agent="${esc(machine.agent_id)}">${esc(machine.agent_id)}</span>`);
      for (const ipu of machine.ipus) {
        parts.push(`<div class="ipu" role="gridcell" tabindex="-1" data-slot="${ipu.slot}"><i></i></div>`);
      }
      parts.push(`<span class="pnames" aria-hidden="true"></span>`
        + `<span class="mstate" aria-hidden="true"></span></div>`);
    }
    if (group !== undefined) parts.push("</div>");
    parts.push("</div>");
  });
  if (cluster.gw_topology === "looped" && cluster.domains.length > 2) {
    parts.push(`<div class="gw loop" aria-hidden="true"><span>GW ↺ ${cluster.domains.length - 1}→0</span></div>`);
  }
  parts.push("</div></section>");
  return parts.join("");
}

function remember(cluster, root) {
  const cells = [];
  for (const el of root.querySelectorAll(".ipu")) cells[Number(el.dataset.slot)] = el;
  const entry = { id: cluster.id, cells, slotOwner: new Map(), partitions: new Map(), ipus: [] , dirty: new Set() };
  for (const domain of cluster.domains) {
    for (const machine of domain.machines) {
      const row = root.querySelector(`.machine[data-machine="${machine.index}"]`);
      const faults = {};
      for (const ipu of machine.ipus) {
        entry.ipus[ipu.slot] = { ...ipu, agent: machine.agent_id, machine: machine.index,
          allocation: machine.allocation_id };
        if (ipu.fault) faults[ipu.device_id] = ipu.fault;
        entry.dirty.add(ipu.slot);
      }
      map.agents.set(machine.agent_id, { cluster: entry, machine, row, faults,
        state: machine.state, reason: machine.reason, links: machine.links_down });
      paintMachine(machine.agent_id);
    }
  }
  for (const partition of cluster.partitions) setPartition(entry, partition);
  map.clusters.set(cluster.id, entry);
  return entry;
}

function setPartition(entry, partition) {
  const before = entry.partitions.get(partition.id);
  if (before) for (const slot of before.slots) {
    if (entry.slotOwner.get(slot) === partition.id) { entry.slotOwner.delete(slot); entry.dirty.add(slot); }
  }
  if (partition.change === "removed") {
    entry.partitions.delete(partition.id);
    return;
  }
  entry.partitions.set(partition.id, partition);
  for (const slot of partition.slots) { entry.slotOwner.set(slot, partition.id); entry.dirty.add(slot); }
}

function cellText(entry, slot) {
  const ipu = entry.ipus[slot];
  const agent = map.agents.get(ipu.agent);
  const owner = entry.slotOwner.get(slot);
  const partition = owner ? entry.partitions.get(owner) : null;
  const words = [`IPU ${slot}, device ${ipu.device_id} of machine ${ipu.machine} (${ipu.agent})`];
  words.push(partition ? `partition ${owner}, ${partition.ready_state}/${partition.operation_state}` : "free");
  if (ipu.allocation) words.push(`allocation ${ipu.allocation}`);
  const fault = agent && agent.faults[ipu.device_id];
  if (fault) words.push(`faulty: ${fault}`);
  if (agent && agent.state === "unreachable") words.push("agent unreachable");
  if (ipu.utilisation !== null && ipu.utilisation !== undefined) words.push(`utilisation ${Math.round(ipu.utilisation)}%`);
  if (ipu.process) words.push(`held by ${ipu.process}`);
  return { text: words.join("; "), partition, owner, fault, agent };
}

function paintCell(entry, slot) {
  const el = entry.cells[slot];
  if (!el) return;
  const { text, partition, owner, fault, agent } = cellText(entry, slot);
  if (el.title !== text) { // only what changed touches the DOM
    el.setAttribute("aria-label", text);
    el.title = text;
  }
  if (el.dataset.partition !== (owner || "")) {
    el.style.background = owner ? colourOf(owner) : "";
    el.dataset.partition = owner || "";
  }
  el.classList.toggle("held", Boolean(owner));
  el.classList.toggle("fault", Boolean(fault));
  el.classList.toggle("error", Boolean(partition && partition.ready_state === "ERROR"));
  el.classList.toggle("busy", Boolean(partition && partition.operation_state !== "IDLE"));
  el.classList.toggle("down", Boolean(agent && agent.state === "unreachable"));
  const util = entry.ipus[slot].utilisation;
  el.firstChild.style.height = util === null || util === undefined ? "0" : `${Math.max(0, Math.min(100, util))}%`;
  el.classList.toggle("attached", Boolean(entry.ipus[slot].process));
}

// The names of the partitions on a machine, beside its four IPUs (as many as fit; the whole
// list on hover), so a partition is found on the map without pointing at each cell.
function paintNames(entry, machineSlots) {
  for (const first of machineSlots) {
    const agent = map.agents.get(entry.ipus[first].agent);
    if (!agent || !agent.row) continue;
    const names = [];
    for (let slot = first; slot < first + 4; slot += 1) {
      const owner = entry.slotOwner.get(slot);
      if (owner && !names.includes(owner)) names.push(owner);
    }
    const box = agent.row.querySelector(".pnames");
    const text = names.join(", ");
    if (box && box.textContent !== text) {
      box.textContent = text;
      box.title = text ? `partition(s) ${text}` : "";
    }
  }
}

function paintDirty(entry) {
  const machines = new Set();
  for (const slot of entry.dirty) {
    paintCell(entry, slot);
    machines.add(slot - (slot % 4));
  }
  entry.dirty.clear();
  paintNames(entry, machines);
}

function paintMachine(agentId) {
  const agent = map.agents.get(agentId);
  if (!agent || !agent.row) return;
  const row = agent.row;
  row.classList.toggle("unreachable", agent.state === "unreachable");
  row.classList.toggle("unknown", agent.state === "unknown");
  row.classList.toggle("links-down", agent.links.length > 0);
  const badges = [];
  if (agent.state === "unreachable") badges.push("unreachable");
  if (agent.links.length) badges.push(`${agent.links.length} link(s) down`);
  row.lastChild.textContent = badges.join(" · ");
  row.setAttribute("aria-label", `Machine ${agent.machine.index}, agent ${agentId}`
    + (agent.machine.allocation_id ? `, allocation ${agent.machine.allocation_id}` : ", not allocated")
    + (badges.length ? `: ${badges.join(", ")}` : "")
    + (agent.links.length ? `. ${agent.links.join(". ")}` : ""));
}

const SHOWN_FAULTS = 5;

// Scroll the map to an IPU and focus it (the cell is a grid cell: Enter opens its details).
function reveal(cell) {
  cell.scrollIntoView({ block: "center", inline: "center" });
  for (const other of document.querySelectorAll(".ipu.located")) other.classList.remove("located");
  cell.classList.add("located");
  cell.tabIndex = 0;
  cell.focus({ preventScroll: true });
}

function faultyIpus() {
  const found = [];
  for (const [agentId, agent] of map.agents) {
    for (const ipu of agent.machine.ipus) {
      if (agent.faults[ipu.device_id]) {
        found.push({ agentId, cluster: agent.cluster, slot: ipu.slot, device: ipu.device_id,
          fault: agent.faults[ipu.device_id] });
      }
    }
  }
  return found.sort((a, b) => a.cluster.id.localeCompare(b.cluster.id) || a.slot - b.slot);
}

// The partition sample of the legend wears the colours of partitions on the map now.
function paintLegend() {
  const sample = document.getElementById("legend-partition");
  if (!sample) return;
  const owners = [];
  for (const entry of map.clusters.values()) {
    for (const id of entry.partitions.keys()) if (owners.length < 4) owners.push(id);
  }
  const colours = owners.map(colourOf);
  const key = colours.join("|");
  if (sample.dataset.colours === key) return;
  sample.dataset.colours = key;
  sample.style.background = colours.length === 0 ? ""
    : colours.length === 1 ? colours[0]
      : `linear-gradient(90deg, ${colours.map((c, i) => `${c} ${(i * 100) / colours.length}% ${((i + 1) * 100) / colours.length}%`).join(", ")})`;
}

function summary() {
  let ipus = 0; let held = 0; let down = 0; let partitions = 0;
  for (const entry of map.clusters.values()) {
    ipus += entry.cells.filter(Boolean).length;
    held += entry.slotOwner.size;
    partitions += entry.partitions.size;
  }
  for (const agent of map.agents.values()) if (agent.state === "unreachable") down += 1;
  const faulty = faultyIpus();
  paintLegend();
  const box = document.getElementById("map-summary");
  if (!box) return;
  const key = `${ipus}|${held}|${partitions}|${down}|`
    + faulty.map((f) => `${f.cluster.id}/${f.slot}/${f.fault}`).join(",");
  if (box.dataset.key === key) return; // nothing changed: leave the links alone
  box.dataset.key = key;
  const where = faulty.slice(0, SHOWN_FAULTS).map((f) => h("button", {
    type: "button", class: "link fault-link", "data-cluster": f.cluster.id, "data-slot": String(f.slot),
    title: `${f.fault}: show it on the map`,
    onclick: () => { const cell = f.cluster.cells[f.slot]; if (cell) reveal(cell); },
  }, `${f.agentId} IPU ${f.device} (cluster ${f.cluster.id}, slot ${f.slot})`));
  const more = faulty.length > SHOWN_FAULTS ? [` and ${faulty.length - SHOWN_FAULTS} more`] : [];
  const listed = where.flatMap((b, i) => (i ? [", ", b] : [b]));
  clear(box).append(`${ipus} IPUs · ${held} in ${partitions} partition(s) · ${faulty.length} faulty IPU(s)`,
    ...(faulty.length ? [": ", ...listed, ...more] : []), ` · ${down} unreachable agent(s)`);
}

function apply(kind, data) {
  if (kind === "partition") {
    const entry = map.clusters.get(data.cluster_id);
    if (entry) setPartition(entry, data);
  } else if (kind === "agent") {
    const agent = map.agents.get(data.id);
    if (!agent) return;
    agent.state = data.state;
    agent.reason = data.reason;
    agent.faults = data.faults;
    agent.links = data.links_down;
    for (const ipu of agent.machine.ipus) agent.cluster.dirty.add(ipu.slot);
    paintMachine(data.id);
  } else if (kind === "telemetry") {
    for (const sample of data.ipus) {
      const agent = map.agents.get(sample.agent_id);
      if (!agent) continue;
      const ipu = agent.machine.ipus.find((i) => i.device_id === sample.device_id);
      if (!ipu) continue;
      const cell = agent.cluster.ipus[ipu.slot];
      cell.utilisation = sample.utilisation;
      cell.process = sample.process;
      agent.cluster.dirty.add(ipu.slot);
    }
  }
  map.applied += 1;
}

function flush() {
  const began = performance.now();
  map.frame = 0;
  const batch = map.queue.splice(0);
  for (const [kind, data] of batch) apply(kind, data);
  for (const entry of map.clusters.values()) paintDirty(entry);
  summary();
  map.flushMaxMs = Math.max(map.flushMaxMs, performance.now() - began);
  if (batch.length) {
    document.body.dataset.mapApplied = String(map.applied);
    document.body.dataset.mapAppliedAt = String(performance.now());
  }
}

function enqueue(kind, data) {
  map.queue.push([kind, data]);
  if (!map.frame) map.frame = requestAnimationFrame(flush);
}
map.enqueue = enqueue;

function keyboard(grid) {
  const cells = [...grid.querySelectorAll(".ipu")];
  let current = 0;
  if (cells.length) cells[0].tabIndex = 0;
  function focus(index) {
    const next = Math.max(0, Math.min(cells.length - 1, index));
    cells[current].tabIndex = -1;
    current = next;
    cells[current].tabIndex = 0;
    cells[current].focus();
  }
  grid.addEventListener("keydown", (event) => {
    const at = cells.indexOf(document.activeElement);
    if (at < 0) return;
    current = at;
    const moves = { ArrowRight: 1, ArrowLeft: -1, ArrowDown: 4, ArrowUp: -4,
      PageDown: 64, PageUp: -64 };
    if (event.key in moves) focus(at + moves[event.key]);
    else if (event.key === "Home") focus(0);
    else if (event.key === "End") focus(cells.length - 1);
    else if (event.key === "Enter" || event.key === " ") open(cells[at]);
    else return;
    event.preventDefault();
  });
}

function open(target) {
  const cell = target.closest(".ipu");
  if (cell) {
    const clusterId = cell.closest(".cluster").dataset.cluster;
    const entry = map.clusters.get(clusterId);
    const slot = Number(cell.dataset.slot);
    const owner = entry.slotOwner.get(slot);
    if (owner) showPartition(owner);
    else showMachine(entry.ipus[slot].agent);
    return;
  }
  const label = target.closest(".mlabel");
  if (label) { showMachine(label.dataset.agent); return; }
  const alloc = target.closest(".alloc-label");
  if (alloc) showFragmentation(alloc.dataset.alloc);
}

async function draw(root) {
  const picture = await get("/api/v1/admin/pod-map");
  map.clusters.clear();
  map.agents.clear();
  root.innerHTML = picture.clusters.map(clusterHtml).join("")
    || "<p>No clusters yet: vipu-admin create cluster makes one.</p>";
  picture.clusters.forEach((cluster, i) => remember(cluster, root.children[i]));
  for (const entry of map.clusters.values()) paintDirty(entry);
  for (const grid of root.querySelectorAll(".fabric")) keyboard(grid);
  summary();
}

export async function showMap(view) {
  document.title = "Pod map - vpod";
  const live = h("span", { class: "live", id: "map-live", "aria-live": "polite" }, "connecting…");
  const root = h("div", { id: "map", onclick: (e) => open(e.target) });
  view.append(h("div", { class: "map-head" }, h("h1", {}, "Pod map"), live),
    h("p", { id: "map-summary", class: "muted" }),
    h("div", { class: "legend", "aria-hidden": "true" },
      h("span", { class: "ipu sample" }), "free ",
      h("span", { class: "ipu sample held", id: "legend-partition" }), "in a partition (colour per partition) ",
      h("span", { class: "ipu sample fault" }), "faulty ",
      h("span", { class: "ipu sample down" }), "agent unreachable ",
      h("span", { class: "alloc sample" }), "allocation outline ",
      h("span", { class: "ipu sample util" }, h("i", { style: "height:60%" })), "utilisation ",
      h("span", { class: "ipu sample attached" }), "an application attached"),
    root);
  // Open the stream first: every event carries whole state, so one that arrives while the
  // picture loads is simply applied on top of it.
  let reconnecting = false;
  const stream = new EventSource("/api/v1/admin/stream");
  for (const kind of ["partition", "agent", "telemetry"]) {
    stream.addEventListener(kind, (e) => enqueue(kind, JSON.parse(e.data)));
  }
  const redraw = () => draw(root).catch((error) => toast(error.message));
  stream.addEventListener("inventory", redraw);
  stream.addEventListener("resync", redraw);
  stream.addEventListener("hello", () => {
    live.textContent = "live";
    live.className = "live on";
    if (reconnecting) { reconnecting = false; redraw(); }
  });
  stream.addEventListener("error", () => {
    live.textContent = "reconnecting…";
    live.className = "live off";
    reconnecting = true;
  });
  await draw(root);
  const took = performance.now(); // since the navigation started
  document.body.dataset.mapRenderedMs = took.toFixed(1);
  document.body.dataset.mapReady = "true";
}
