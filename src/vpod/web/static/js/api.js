// Calls to the public REST API with the session cookie; state changes carry the CSRF token.
let csrf = "";

export function setCsrf(token) {
  csrf = token || "";
}

export class ApiError extends Error {
  constructor(status, code, message, data) {
    super(message);
    this.status = status;
    this.code = code;
    this.data = data;
  }
}

export async function api(method, path, body) {
  const headers = { Accept: "application/json" };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (method !== "GET" && method !== "HEAD") headers["X-CSRF-Token"] = csrf;
  const request = () => fetch(path, {
    method,
    headers,
    credentials: "same-origin",
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  let answer;
  try {
    answer = await request();
  } catch (error) {
    // A read that met a dropped connection (a kept-alive one the server closed as it was
    // reused, a restarting controller) is asked once more; a change is never repeated unseen.
    if (method !== "GET") throw error;
    await new Promise((resolve) => setTimeout(resolve, 250));
    answer = await request();
  }
  if (answer.status === 204) return null;
  const text = await answer.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (!answer.ok) {
    const error = (data && data.error) || {};
    if (answer.status === 401 && !path.startsWith("/web/session")) {
      location.assign("/login?next=" + encodeURIComponent(location.pathname));
    }
    throw new ApiError(answer.status, error.code || String(answer.status),
      error.message || answer.statusText, data);
  }
  return data;
}

export const get = (path) => api("GET", path);
export const post = (path, body) => api("POST", path, body === undefined ? {} : body);
export const del = (path) => api("DELETE", path);
export const put = (path, body) => api("PUT", path, body);

export function query(params) {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    if (value !== undefined && value !== null && value !== "") search.set(key, value);
  }
  const text = search.toString();
  return text ? "?" + text : "";
}
