// The side panel: a partition, a machine, an allocation's fragmentation.
import { ApiError, del, get, post, query } from "./api.js";
import { confirmDialog, fmtTime, h, keyValues, openPanel, section, toast } from "./ui.js";

function eventsList(events) {
  if (!events.length) return h("p", { class: "muted" }, "No events.");
  return h("ol", { class: "events" }, events.map((e) => h("li", {},
    h("time", { datetime: e.time }, fmtTime(e.time)), ` ${e.actor} ${e.action} ${e.target} → `,
    h("strong", {}, e.outcome), e.detail ? ` (${e.detail})` : "")));
}

async function recentEvents(target) {
  try {
    return (await get("/api/v1/admin/events" + query({ target, limit: 20 }))).events;
  } catch (error) {
    return [];
  }
}

export async function showPartition(id) {
  const panel = openPanel(`Partition ${id}`, h("p", { class: "muted" }, "Loading…"));
  let partition;
  try {
    partition = await get(`/api/v1/partitions/${encodeURIComponent(id)}`);
  } catch (error) {
    panel.lastChild.textContent = error instanceof ApiError && error.status === 404
      ? `Partition ${id} no longer exists.` : error.message;
    return;
  }
  const [status, events] = await Promise.all([
    get(`/api/v1/partitions/${encodeURIComponent(id)}/status`), recentEvents(id)]);
  let ipuof = h("p", { class: "muted" }, "Only an ACTIVE partition has IPUoF configs.");
  if (partition.ready_state === "ACTIVE") {
    try {
      const configs = await get(`/api/v1/partitions/${encodeURIComponent(id)}/ipuof-config`);
      ipuof = h("div", {}, Object.entries(configs.files).map(([name, file]) => h("details", {},
        h("summary", {}, name), h("pre", {}, JSON.stringify(file, null, 2)))));
    } catch (error) {
      ipuof = h("p", { class: "error" }, error.message);
    }
  }
  const gcds = {};
  for (const ipu of partition.ipus) (gcds[ipu.gcd] ||= []).push(ipu);
  const attached = (window.vpodMap ? [...window.vpodMap.clusters.values()] : [])
    .flatMap((c) => partition.ipus.map((i) => c.ipus.find((x) => x && x.agent === i.agent_id
      && x.device_id === i.device_id))).filter((x) => x && x.process);
  const reset = h("button", { type: "button", onclick: async () => {
    if (!await confirmDialog(`Reset partition ${id}? Every IPU goes back to its initial state.`, "Reset")) return;
    try { await post(`/api/v1/partitions/${encodeURIComponent(id)}/reset`); toast(`Partition ${id} reset`, "ok"); showPartition(id); } catch (error) { toast(error.message); }
  } }, "Reset…");
  const remove = h("button", { type: "button", class: "danger", onclick: async () => {
    if (!await confirmDialog(`Remove partition ${id}? Its IPUs are freed and applications lose them.`, "Remove")) return;
    try { await del(`/api/v1/partitions/${encodeURIComponent(id)}`); toast(`Partition ${id} removed`, "ok"); openPanel(`Partition ${id}`, h("p", {}, "Removed.")); } catch (error) { toast(error.message); }
  } }, "Remove…");
  openPanel(`Partition ${id}`,
    h("div", { class: "actions" }, reset, remove),
    section("Spec", keyValues([
      ["Allocation", partition.allocation_id], ["Cluster", partition.cluster_id],
      ["Size", `${partition.size} IPUs`], ["IPU-Link segments", partition.num_ipulink_segments],
      ["GCDs", partition.num_gcds], ["Replicas", partition.num_replicas],
      ["Reconfigurable", String(partition.reconfigurable)],
      ["Routing", `${partition.ipulink_routing_type || "—"} / GW ${partition.gw_routing_type || "—"}`],
      ["Sync", partition.sync_type], ["Created", fmtTime(partition.created_at)]])),
    section("State", keyValues([
      ["Ready", status.ready_state], ["Operation", status.operation_state],
      ["Errors", status.errors.join("; ") || "none"],
      ["Auto-resets", `${status.auto_reset_retry_count} of ${status.max_auto_reset_retries}`]])),
    section("GCDs", h("ul", {}, Object.entries(gcds).map(([gcd, ipus]) => h("li", {},
      `GCD ${gcd}: `, ipus.map((i) => `${i.agent_id}/IPU ${i.device_id}`).join(", "))))),
    section("IPUoF config", ipuof),
    section("Attached processes", attached.length
      ? h("ul", {}, attached.map((a) => h("li", {}, `${a.agent}/IPU ${a.device_id}: `
        + `${a.process || "no process"}${a.utilisation != null ? `, ${Math.round(a.utilisation)}% busy` : ""}`)))
      : h("p", { class: "muted" }, "None reported by the agents.")),
    section("Events", eventsList(events)));
}

export async function showMachine(agentId) {
  openPanel(`Machine ${agentId}`, h("p", { class: "muted" }, "Loading…"));
  const [agents, attributes, events] = await Promise.all([
    get("/api/v1/admin/agents"),
    get("/api/v1/admin/ipu-attributes" + query({ agent: agentId })).catch(() => ({ agents: [] })),
    recentEvents(agentId)]);
  const agent = agents.agents.find((a) => a.id === agentId);
  if (!agent) { openPanel(`Machine ${agentId}`, h("p", {}, "This agent no longer exists.")); return; }
  const ipus = (attributes.agents[0] || { ipus: [] }).ipus;
  const clear = h("button", { type: "button", onclick: async () => {
    if (!await confirmDialog(`Clear every injected fault of ${agentId}?`, "Clear faults")) return;
    try { await del(`/api/v1/admin/agents/${encodeURIComponent(agentId)}/faults`); toast("Faults cleared", "ok"); showMachine(agentId); } catch (error) { toast(error.message); }
  } }, "Clear faults…");
  openPanel(`Machine ${agentId}`,
    section("Agent", keyValues([
      ["Address", `${agent.host}:${agent.port}`], ["Type", agent.machine_type],
      ["Serial", agent.serial || "—"], ["Cluster", agent.cluster_id], ["Allocation", agent.allocation_id],
      ["Reachable", agent.reachable ? "yes" : `no: ${agent.state_detail}`],
      ["Last heartbeat", fmtTime(agent.last_seen)]])),
    section("Faults", agent.faults.length
      ? h("div", {}, h("ul", {}, agent.faults.map((f) => h("li", { class: "error" }, f.description))), clear)
      : h("p", { class: "muted" }, "None.")),
    section("IPU attributes", ipus.length ? h("div", {}, ipus.map((ipu) => h("details", {},
      h("summary", {}, `IPU ${ipu.device_id}`),
      keyValues(Object.entries(ipu.attributes))))) : h("p", { class: "muted" }, "The agent did not answer.")),
    section("Events", eventsList(events)));
}

export async function showFragmentation(allocationId) {
  openPanel(`Allocation ${allocationId}`, h("p", { class: "muted" }, "Loading…"));
  try {
    openPanel(`Allocation ${allocationId}`, fragmentationView(
      await get(`/api/v1/admin/allocations/${encodeURIComponent(allocationId)}/fragmentation`)));
  } catch (error) {
    openPanel(`Allocation ${allocationId}`, h("p", { class: "error" }, error.message));
  }
}

export function fragmentationView(f) {
  return h("div", { class: "fragmentation" },
    keyValues([["Size", `${f.size} IPUs`], ["Free", `${f.free_ipus} IPUs`],
      ["Unavailable", `${f.unavailable_ipus} IPUs`],
      ["Largest free aligned block", `${f.largest_free_block} IPUs`
        + (f.largest_free_block_slots.length ? ` (slots ${f.largest_free_block_slots[0]}–${f.largest_free_block_slots.at(-1)})` : "")],
      ["Free blocks", Object.entries(f.free_blocks).map(([s, n]) => `${n} × ${s}`).join(", ") || "none"]]),
    h("table", { class: "data" }, h("caption", {}, "A partition of each size, right now"),
      h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Size"), h("th", { scope: "col" }, "Fits"),
        h("th", { scope: "col" }, "Where or why not"))),
      h("tbody", {}, f.sizes.map((s) => h("tr", { class: s.fits ? "" : "no" },
        h("td", {}, s.size), h("td", {}, s.fits ? "yes" : "no"),
        h("td", {}, s.fits ? `slots ${s.slots[0]}–${s.slots.at(-1)}` : s.reasons.join(" ")))))));
}
