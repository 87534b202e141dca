// Small DOM helpers shared by every view: elements, tables with filters, dialogs, toasts.

export function h(tag, attrs, ...children) {
  const element = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on")) element.addEventListener(key.slice(2), value);
    else if (key === "class") element.className = value;
    else if (key === "text") element.textContent = value;
    else element.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    element.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return element;
}

export function clear(element) {
  while (element.firstChild) element.firstChild.remove();
  return element;
}

export function toast(message, kind = "error") {
  const box = document.getElementById("toast");
  box.textContent = message;
  box.className = "show " + kind;
  clearTimeout(toast.timer);
  toast.timer = setTimeout(() => (box.className = ""), 6000);
}

export function confirmDialog(text, action = "Confirm") {
  const dialog = document.getElementById("confirm");
  document.getElementById("confirm-text").textContent = text;
  document.getElementById("confirm-ok").textContent = action;
  return new Promise((resolve) => {
    dialog.addEventListener("close", () => resolve(dialog.returnValue === "ok"), { once: true });
    dialog.showModal();
  });
}

export function fmtTime(value) {
  if (!value) return "—";
  const date = new Date(value);
  return isNaN(date) ? String(value) : date.toLocaleString();
}

// A table whose rows can be narrowed by a free-text filter and per-column choices.
// columns: [{key, label, render?(row), choices?: true}]
export function filteredTable(columns, rows, { caption, id } = {}) {
  const state = { text: "", choice: {} };
  const tbody = h("tbody");
  const count = h("span", { class: "muted", "aria-live": "polite" });
  const filters = h("div", { class: "filters" },
    h("label", {}, "Filter ", h("input", {
      type: "search", placeholder: "any column", "data-filter": "text",
      oninput: (e) => { state.text = e.target.value.toLowerCase(); draw(); },
    })));
  for (const column of columns.filter((c) => c.choices)) {
    const values = [...new Set(rows.map((r) => String(r[column.key] ?? "")))].sort();
    const select = h("select", {
      "data-filter": column.key,
      onchange: (e) => { state.choice[column.key] = e.target.value; draw(); },
    }, h("option", { value: "" }, "all"), values.map((v) => h("option", { value: v }, v || "—")));
    filters.append(h("label", {}, column.label + " ", select));
  }
  filters.append(count);
  const table = h("table", { class: "data", id },
    caption ? h("caption", {}, caption) : null,
    h("thead", {}, h("tr", {}, columns.map((c) => h("th", { scope: "col" }, c.label)))),
    tbody);
  function matches(row) {
    for (const [key, value] of Object.entries(state.choice)) {
      if (value && String(row[key] ?? "") !== value) return false;
    }
    if (!state.text) return true;
    return columns.some((c) => String(row[c.key] ?? "").toLowerCase().includes(state.text));
  }
  function draw() {
    clear(tbody);
    const shown = rows.filter(matches);
    for (const row of shown) {
      tbody.append(h("tr", {}, columns.map((c) => h("td", {}, c.render ? c.render(row) : row[c.key] ?? "—"))));
    }
    count.textContent = `${shown.length} of ${rows.length}`;
  }
  draw();
  return h("div", { class: "table-wrap" }, filters, table);
}

export function meter(label, used, limit) {
  const unlimited = limit < 0;
  const share = unlimited || limit === 0 ? 0 : Math.min(1, used / limit);
  return h("div", { class: "meter-row" },
    h("span", { class: "meter-label" }, label),
    h("div", {
      class: "meter" + (share >= 0.9 ? " high" : ""), role: "meter", "aria-label": label,
      "aria-valuemin": 0, "aria-valuemax": unlimited ? used : limit, "aria-valuenow": used,
    }, h("div", { class: "meter-fill", style: `width:${(share * 100).toFixed(1)}%` })),
    h("span", { class: "meter-text" }, unlimited ? `${used} (no limit)` : `${used} / ${limit}`));
}

export function openPanel(title, ...content) {
  const panel = document.getElementById("panel");
  clear(panel);
  panel.hidden = false;
  const close = h("button", { type: "button", class: "close", "aria-label": "Close details",
    onclick: () => { panel.hidden = true; } }, "×");
  panel.append(h("div", { class: "panel-head" }, h("h2", { tabindex: "-1" }, title), close), ...content);
  panel.querySelector("h2").focus();
  return panel;
}

export function section(title, ...content) {
  return h("section", {}, h("h3", {}, title), ...content);
}

export function keyValues(pairs) {
  return h("dl", { class: "kv" }, pairs.flatMap(([k, v]) => [h("dt", {}, k), h("dd", {}, v ?? "—")]));
}
