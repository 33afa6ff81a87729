// @ts-check
/**
 * The daemon client: how the plugin talks to the BrainSurgeon daemon (`brainsurgeon serve`, on loopback), which owns
 * all storage, policy and wording. Every tool call and every offload is ONE HTTP POST of JSON to it (callDaemon);
 * assemble and compact post the same way; the offload learns the daemon's settings with a GET of its plugin health
 * (getDaemon). agentIdOf names the agent the daemon is told when the host names none.
 *
 * Rules this file keeps:
 * - callDaemon and getDaemon never reject: what went wrong comes back as {ok: false, error} (refused, timeout, abort, HTTP status
 *   with the daemon's error, a body that is not JSON), so that callers fail open.
 * - The API key is read at each call (readApiKey); nothing is cached between calls.
 */
import { request } from "node:http";
import { readApiKey } from "./config.js";

/** @typedef {import("./config.js").Config} Config */

/**
 * @typedef {{ok: true, json: unknown} | {ok: false, error: string, status?: number, json?: unknown}} DaemonAnswer
 * a daemon's JSON answer, or what went wrong; a failure that is an HTTP answer carries its status and its JSON body
 */
/**
 * POSTs body to the daemon and reads a JSON answer. Never rejects: resolves {ok:false, error} with what went wrong
 * (refused, timeout, HTTP status with the daemon's error, a body that is not JSON); an answer other than 200 also
 * gives its status, and its body when that is JSON.
 * @param {Config} cfg @param {string} path @param {string} body @param {number} timeoutMs @param {AbortSignal} [signal]
 * @returns {Promise<DaemonAnswer>}
 */
export function callDaemon(cfg, path, body, timeoutMs, signal) {
  return requestDaemon(cfg, "POST", path, body, timeoutMs, signal);
}

/**
 * GETs path from the daemon and reads a JSON answer, as callDaemon does (never rejects).
 * @param {Config} cfg @param {string} path @param {number} timeoutMs
 * @returns {Promise<DaemonAnswer>}
 */
export function getDaemon(cfg, path, timeoutMs) {
  return requestDaemon(cfg, "GET", path, undefined, timeoutMs);
}

/**
 * Sends one request to the daemon (a POST of body as JSON, or a GET without one) and reads a JSON answer.
 * @param {Config} cfg @param {"GET" | "POST"} method @param {string} path @param {string | undefined} body
 * @param {number} timeoutMs @param {AbortSignal} [signal]
 * @returns {Promise<DaemonAnswer>}
 */
function requestDaemon(cfg, method, path, body, timeoutMs, signal) {
  return new Promise((resolve) => {
    /** @type {Record<string, string | number>} */
    const headers = body === undefined ? {} : { "content-type": "application/json", "content-length": Buffer.byteLength(body) };
    try {
      const apiKey = readApiKey(cfg);
      if (apiKey) headers["x-api-key"] = apiKey;
    } catch (err) {
      return resolve({ ok: false, error: `cannot read apiKeyFile ${cfg.apiKeyFile}: ${errText(err)}` });
    }
    if (signal?.aborted) return resolve({ ok: false, error: "the call was aborted" });
    const url = new URL(path, cfg.daemonUrl);
    let done = false;
    /** @param {DaemonAnswer} r */
    const finish = (r) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
      resolve(r);
    };
    const req = request(url, { method, headers }, (res) => {
      /** @type {Buffer[]} */
      const chunks = [];
      res.on("data", (c) => chunks.push(c));
      res.on("error", (err) => finish({ ok: false, error: `reading the daemon's answer: ${errText(err)}` }));
      res.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8");
        let json;
        try {
          json = JSON.parse(text);
        } catch {
          json = undefined;
        }
        if (res.statusCode !== 200) {
          const msg = json && typeof json.error === "string" ? json.error : text.slice(0, 200);
          return finish({ ok: false, error: `the daemon answered HTTP ${res.statusCode}: ${msg}`, status: res.statusCode, json });
        }
        if (json === undefined) return finish({ ok: false, error: "the daemon's answer is not JSON" });
        finish({ ok: true, json });
      });
    });
    // Listen for errors first: a request destroyed before this would raise an uncaught 'error' event.
    req.on("error", (err) => {
      const code = /** @type {any} */ (err).code;
      const hint = code === "ECONNREFUSED" ? " (is `brainsurgeon serve` running?)" : "";
      finish({ ok: false, error: `cannot reach the daemon at ${cfg.daemonUrl}: ${errText(err)}${hint}` });
    });
    const timer = setTimeout(() => {
      finish({ ok: false, error: `the daemon at ${cfg.daemonUrl} did not answer within ${timeoutMs} ms` });
      req.destroy();
    }, timeoutMs);
    const onAbort = () => {
      finish({ ok: false, error: "the call was aborted" });
      req.destroy();
    };
    signal?.addEventListener("abort", onAbort, { once: true });
    req.end(body);
  });
}

/** The text of a thrown value: an Error's message (else its code or name), anything else as a string.
 * @param {unknown} err */
export function errText(err) {
  return err instanceof Error ? err.message || String(/** @type {any} */ (err).code ?? err.name) : String(err);
}

/**
 * The agent id of a session key "agent:<id>:…", else "main".
 * @param {unknown} sessionKey
 */
export function agentIdOf(sessionKey) {
  if (typeof sessionKey !== "string") return "main";
  const parts = sessionKey.split(":");
  return parts.length >= 3 && parts[0] === "agent" && parts[1] !== "" ? parts[1] : "main";
}
