// Boots every page: who is logged in, the navigation, the open-mode banner, then the view.
import { ApiError, api, get, setCsrf } from "./api.js";
import { clear, h, toast } from "./ui.js";

const NAV = {
  admin: [["/admin/map", "Pod map"], ["/admin/agents", "Agents"], ["/admin/gpus", "GPUs"], ["/admin/clusters", "Clusters"],
    ["/admin/allocations", "Allocations"], ["/admin/users", "Users"], ["/admin/events", "Audit log"]],
  tenant: [["/tenant/clusters", "Clusters"], ["/tenant/volumes", "Volumes"],
    ["/tenant/quotas", "Quotas"], ["/tenant/invoice", "Invoice"]],
  user: [["/user/partitions", "Partitions"]],
};

const VIEWS = {
  "/admin/map": () => import("./map.js").then((m) => m.showMap),
  "/admin/agents": () => import("./admin.js").then((m) => m.showAgents),
  "/admin/gpus": () => import("./admin.js").then((m) => m.showGpus),
  "/admin/clusters": () => import("./admin.js").then((m) => m.showClusters),
  "/admin/allocations": () => import("./admin.js").then((m) => m.showAllocations),
  "/admin/users": () => import("./admin.js").then((m) => m.showUsers),
  "/admin/events": () => import("./admin.js").then((m) => m.showEvents),
  "/tenant/clusters": () => import("./tenant.js").then((m) => m.showClusters),
  "/tenant/volumes": () => import("./tenant.js").then((m) => m.showVolumes),
  "/tenant/quotas": () => import("./tenant.js").then((m) => m.showQuotas),
  "/tenant/invoice": () => import("./tenant.js").then((m) => m.showInvoice),
  "/tenant/terminal": () => import("./terminal.js").then((m) => m.showTerminal),
  "/user/partitions": () => import("./admin.js").then((m) => m.showMyPartitions),
};

function banner(secure) {
  const box = document.getElementById("banner");
  if (secure === false) {
    box.hidden = false;
    box.textContent = "Open mode: this controller runs without --secure, so anyone who can"
      + " reach it may do anything. Start it with --secure to require credentials.";
  }
}

function navigation(kind, path) {
  const nav = document.getElementById("nav");
  for (const [href, label] of NAV[kind] || []) {
    nav.append(h("a", { href, "aria-current": href === path ? "page" : null }, label));
  }
}

// A path of this site as the browser reads it (the WHATWG URL parser: "/\\x" and "/<tab>/x"
// are "//x", another host), or null: the server answers the same, and both must agree.
export function sameSitePath(target) {
  if (typeof target !== "string" || target.trim() === "") return null;
  let url;
  try {
    url = new URL(target, location.origin);
  } catch {
    return null;
  }
  if (url.origin !== location.origin) return null;
  return url.pathname + url.search + url.hash;
}

async function showLogin(view, secure) {
  document.title = "Log in - vpod";
  const next = new URLSearchParams(location.search).get("next") || "";
  const message = h("p", { class: "error", role: "alert", id: "login-error" });
  async function logIn(body) {
    message.textContent = "";
    try {
      const session = await api("POST", "/web/session", { ...body, next });
      location.assign(sameSitePath(session.next) || session.home);
    } catch (error) {
      message.textContent = error.message;
    }
  }
  const vipu = h("form", { id: "login-vipu", onsubmit: (e) => {
    e.preventDefault();
    const form = new FormData(e.target);
    logIn({ kind: "vipu", user_id: form.get("user_id"), access_key: form.get("access_key") });
  } },
  h("h2", {}, "Operators and V-IPU users"),
  h("label", {}, "User id", h("input", { name: "user_id", autocomplete: "username", required: true })),
  h("label", {}, "Access key", h("input", { name: "access_key", type: "password",
    autocomplete: "current-password", required: true })),
  h("button", { type: "submit" }, "Log in"));
  const cloud = h("form", { id: "login-cloud", onsubmit: (e) => {
    e.preventDefault();
    logIn({ kind: "cloud", token: new FormData(e.target).get("token") });
  } },
  h("h2", {}, "Cloud projects"),
  h("label", {}, "Project token", h("input", { name: "token", type: "password",
    placeholder: "vpod_…", required: true })),
  h("button", { type: "submit" }, "Log in"));
  const forms = h("div", { class: "login" }, vipu, cloud);
  if (secure === false) {
    forms.prepend(h("form", { id: "login-open", onsubmit: (e) => { e.preventDefault(); logIn({ kind: "open" }); } },
      h("h2", {}, "Open mode"),
      h("p", {}, "No credentials are needed on this controller."),
      h("button", { type: "submit" }, "Enter as operator")));
  }
  view.append(h("h1", {}, "Log in to vpod"),
    h("p", { class: "muted" }, "The same credentials as the APIs: the user id and access key"
      + " from vipu-admin create user, or a cloud project's token."),
    message, forms);
}

async function boot() {
  const view = document.getElementById("view");
  const path = location.pathname.replace(/\/$/, "") || "/";
  let session = null;
  let secure = true;
  try {
    session = await get("/web/session");
    secure = session.identity.secure;
  } catch (error) {
    if (!(error instanceof ApiError) || error.status !== 401) throw error;
    secure = error.data ? error.data.secure : true;
  }
  banner(secure);
  clear(view);
  if (path === "/login" || session === null) {
    await showLogin(view, secure);
    return;
  }
  setCsrf(session.csrf);
  const kind = session.kind === "cloud" ? "tenant" : session.identity.admin ? "admin" : "user";
  navigation(kind, path);
  const identity = session.identity;
  document.getElementById("who").textContent = kind === "tenant"
    ? `project ${identity.project_id}` : `${identity.user_id}${identity.admin ? " (admin)" : ""}`;
  const logout = document.getElementById("logout");
  logout.hidden = false;
  logout.addEventListener("click", async () => {
    await api("DELETE", "/web/session");
    location.assign("/login");
  });
  const load = VIEWS[path];
  const allowed = path.startsWith("/" + kind + "/");
  if (!load || !allowed) {
    view.append(h("h1", {}, "Not found"), h("p", {}, h("a", { href: session.home }, "Back to your console")));
    return;
  }
  const show = await load();
  await show(view, session);
}

boot().catch((error) => {
  toast(error.message || String(error));
  console.error(error);
});
