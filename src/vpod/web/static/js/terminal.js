// A terminal in the browser: a real interactive shell on a tenant's server, through the cloud
// API's shell relay (the WebSocket `vpod cluster ssh --relay` uses), drawn by xterm.js
// (vendored under /web/static/vendor/xterm, MIT). The page is /tenant/terminal?cluster=&server=,
// the address `GET /api/cloud/v1/clusters/{cluster}/console` answers.
import { h, toast } from "./ui.js";

const CLOUD = "/api/cloud/v1";
const STDIN = 0;

function stylesheet(href) {
  if (!document.querySelector(`link[href="${href}"]`)) {
    document.head.append(h("link", { rel: "stylesheet", href }));
  }
}

export async function showTerminal(view, session) {
  const params = new URLSearchParams(location.search);
  const cluster = params.get("cluster") || "";
  const server = params.get("server") || "1";
  document.title = `Terminal of ${cluster} - vpod`;
  stylesheet("/web/static/vendor/xterm/xterm.css");
  const [{ Terminal }, { FitAddon }] = await Promise.all([
    import("/web/static/vendor/xterm/xterm.js"), import("/web/static/vendor/xterm/addon-fit.js"),
  ]);
  const status = h("p", { id: "terminal-status", class: "muted", "aria-live": "polite" }, "Connecting…");
  const box = h("div", { id: "terminal", class: "terminal", "data-cluster": cluster });
  view.append(
    h("h1", {}, `Terminal of ${cluster} (server ${server})`),
    h("p", { class: "muted" }, "From your machine: ", h("code", {}, `vpod cluster ssh ${cluster} --server ${server}`),
      " or ", h("code", {}, `vpod cluster ssh-config ${cluster}`), " for ssh, scp and rsync."),
    box, status);
  const term = new Terminal({ cursorBlink: true, convertEol: false, fontSize: 14 });
  const fit = new FitAddon();
  term.loadAddon(fit);
  term.open(box);
  fit.fit();
  window.vpodTerminal = term; // for scripts and tests: what the terminal shows
  const scheme = location.protocol === "https:" ? "wss:" : "ws:";
  const path = `${CLOUD}/clusters/${encodeURIComponent(cluster)}/shell/connect`;
  const url = `${scheme}//${location.host}${path}?server=${encodeURIComponent(server)}`
    + `&csrf=${encodeURIComponent(session.csrf)}`;
  const socket = new WebSocket(url);
  socket.binaryType = "arraybuffer";
  const encoder = new TextEncoder();
  const send = (bytes) => {
    if (socket.readyState !== WebSocket.OPEN) return;
    const message = new Uint8Array(bytes.length + 1);
    message[0] = STDIN;
    message.set(bytes, 1);
    socket.send(message);
  };
  socket.addEventListener("open", () => {
    socket.send(JSON.stringify({ command: null, tty: true, rows: term.rows, cols: term.cols, term: "xterm-256color" }));
    status.textContent = "Connected.";
    box.dataset.state = "open";
    term.focus();
  });
  socket.addEventListener("message", (event) => {
    if (typeof event.data === "string") {
      const control = JSON.parse(event.data);
      if ("exit" in control) {
        status.textContent = `The shell ended (exit status ${control.exit}).`;
        box.dataset.state = "ended";
      } else if (control.error) {
        status.textContent = control.error.message;
        toast(control.error.message);
      }
      return;
    }
    const bytes = new Uint8Array(event.data);
    if (bytes.length > 1) term.write(bytes.subarray(1));
  });
  socket.addEventListener("close", () => {
    if (box.dataset.state !== "ended") {
      status.textContent = "Disconnected (is the cluster ACTIVE? reload to connect again).";
      box.dataset.state = "closed";
    }
  });
  term.onData((text) => send(encoder.encode(text)));
  term.onBinary((text) => send(Uint8Array.from(text, (c) => c.charCodeAt(0))));
  term.onResize(({ rows, cols }) => {
    if (socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify({ resize: [rows, cols] }));
  });
  window.addEventListener("resize", () => fit.fit());
}
