// Talking to the server's admin routes. The app may be served under any
// handler_prefix, so every path is relative to where the bundle itself was loaded
// from: BASE/assets/app-HASH.js → BASE/admin/...

const TOKEN_KEY = 'gyre-admin-token';

/** base is the app's root URL (ends with "/"). */
export const base = new URL('../', import.meta.url);

/** Unauthorized is thrown when the server answers 401: the session is over. */
export class Unauthorized extends Error {
  constructor() {
    super('Your session has ended; log in again.');
  }
}

/** HTTPError carries a non-2xx answer with its parsed body, if any. */
export class HTTPError extends Error {
  constructor(status, body, message) {
    super(message);
    this.status = status;
    this.body = body;
  }
}

let onUnauthorized = () => {};

/** setUnauthorizedHandler sets what happens when any call gets a 401. */
export function setUnauthorizedHandler(fn) {
  onUnauthorized = fn;
}

export function getToken() {
  return sessionStorage.getItem(TOKEN_KEY) || '';
}

export function setToken(token) {
  if (token) sessionStorage.setItem(TOKEN_KEY, token);
  else sessionStorage.removeItem(TOKEN_KEY);
}

/** url returns the absolute URL of a path under the app's root. */
export function url(path) {
  return new URL(path, base).toString();
}

/**
 * request calls an admin route and returns the parsed JSON body. A 401 ends the
 * session; any other non-2xx status throws an HTTPError.
 */
export async function request(path, { method = 'GET', json, form, signal } = {}) {
  const headers = { Accept: 'application/json' };
  const token = getToken();
  if (token) headers.Authorization = `token ${token}`;
  let body;
  if (json !== undefined) {
    headers['Content-Type'] = 'application/json';
    body = JSON.stringify(json);
  } else if (form) {
    body = new URLSearchParams(form);
  }
  let resp;
  try {
    resp = await fetch(url(path), { method, headers, body, signal, cache: 'no-store' });
  } catch (err) {
    if (err.name === 'AbortError') throw err;
    throw new HTTPError(0, null, `The server cannot be reached (${err.message}).`);
  }
  const text = await resp.text();
  let parsed = null;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    parsed = null;
  }
  if (resp.status === 401) {
    onUnauthorized();
    throw new Unauthorized();
  }
  if (!resp.ok) {
    const message = (parsed && parsed.error && parsed.error.message) || text.trim() || resp.statusText;
    const err = new HTTPError(resp.status, parsed, `${resp.status}: ${message}`);
    err.retryAfter = resp.headers.get('Retry-After');
    throw err;
  }
  return parsed;
}

/**
 * callAPI runs a server API method through POST admin/api in the legacy form
 * {"method", "params"} and returns the whole reply ({"result"} or {"error"}).
 */
export function callAPI(method, params, options = {}) {
  return request('admin/api', { method: 'POST', json: { method, params }, ...options });
}

/** apiResult runs a method and returns its result, throwing on an API error. */
export async function apiResult(method, params, options) {
  const reply = await callAPI(method, params, options);
  if (reply && reply.error) {
    throw new Error(`${method}: ${reply.error.message || 'error'} (code ${reply.error.code})`);
  }
  return (reply && reply.result) || {};
}
