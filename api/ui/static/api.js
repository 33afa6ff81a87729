// The REST API client: every request of the UI goes through api(), which
// sends the API key and turns an error answer ({"error": "…"}) into an
// ApiError carrying the server's message.

const KEY = 'brainsurgeon_api_key';

// ApiError is an error answer of the API (status 0: no answer at all).
export class ApiError extends Error {
  constructor(status, message, body) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.body = body;
  }
}

// getKey returns the API key kept in this tab, or "".
export function getKey() {
  try { return sessionStorage.getItem(KEY) || ''; } catch { return ''; }
}

// setKey keeps (or, with "", forgets) the API key in this tab.
export function setKey(key) {
  try {
    if (key) sessionStorage.setItem(KEY, key); else sessionStorage.removeItem(KEY);
  } catch { /* storage disabled: the key lives until the page reloads */ memoryKey = key; }
}
let memoryKey = '';

let authHook = () => {};

// onAuthNeeded sets the function called when the API answers 401 (or 403
// for a wrong key).
export function onAuthNeeded(fn) { authHook = fn; }

// api sends a request and returns the decoded JSON answer (or the text,
// with opts.text). body, when given, is sent as JSON.
export async function api(method, path, body, opts = {}) {
  const headers = { Accept: 'application/json' };
  const key = getKey() || memoryKey;
  if (key) headers['X-API-Key'] = key;
  const init = { method, headers, cache: 'no-store', credentials: 'same-origin' };
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  let resp;
  try {
    resp = await fetch(path, init);
  } catch (e) {
    throw new ApiError(0, `No answer from the server (${e.message}). Is BrainSurgeon still running?`);
  }
  const text = await resp.text();
  let data = null;
  if (text && (resp.headers.get('Content-Type') || '').includes('json')) {
    try { data = JSON.parse(text); } catch { data = null; }
  }
  if (!resp.ok) {
    const msg = data && typeof data.error === 'string' ? data.error
      : `HTTP ${resp.status} ${resp.statusText}${text ? ': ' + text.slice(0, 300) : ''}`;
    const err = new ApiError(resp.status, msg, data);
    if (resp.status === 401 || (resp.status === 403 && !(data && data.read_only))) authHook(err);
    throw err;
  }
  if (opts.text) return text;
  if (data === null && text) throw new ApiError(resp.status, `${method} ${path}: the answer is not JSON`);
  return data;
}
