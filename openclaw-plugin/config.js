// @ts-check
/**
 * The plugin's configuration: the plugin config OpenClaw hands register() (api.pluginConfig) with the defaults filled
 * in, the daemon URL's check, the API key, and the logger every module warns through.
 *
 * Rules this file keeps:
 * - A value of the wrong type falls back to its default; a daemonUrl that is not loopback http is kept but recorded
 *   in urlProblem, and every call then fails open.
 * - The key file is read at each call, never cached: its first line, trimmed, at most MAX_KEY_FILE_BYTES.
 * - A logger that throws never breaks the caller (safeWarn).
 */
import { readFileSync, statSync } from "node:fs";

/** @typedef {{info?: (m: string) => void, warn: (m: string) => void, error?: (m: string) => void}} Logger */
/**
 * @typedef {{daemonUrl: string, apiKeyFile?: string, apiKeyEnv: string, offload: boolean, extractAboveChars: number,
 *   previewChars: number, timeoutMs: number, toolTimeoutMs: number, assembleTimeoutMs: number, compactTimeoutMs: number,
 *   urlProblem?: string}} Config
 */

/** The largest API key file read (a key is 64 hex characters). */
const MAX_KEY_FILE_BYTES = 4096;

/** @type {Omit<Config, "urlProblem">} */
export const DEFAULTS = Object.freeze({
  daemonUrl: "http://127.0.0.1:8000",
  apiKeyEnv: "BRAINSURGEON_API_KEY",
  offload: true,
  extractAboveChars: 40000,
  previewChars: 400,
  timeoutMs: 3000,
  toolTimeoutMs: 20000,
  assembleTimeoutMs: 5000,
  compactTimeoutMs: 120000,
});

/**
 * Returns the plugin config with the defaults filled in. OpenClaw validates it against the manifest's schema
 * before loading; a value of the wrong type here still falls back to its default. A daemonUrl that is not
 * loopback http is kept but recorded in urlProblem, and every call then fails open.
 * @param {unknown} raw api.pluginConfig
 * @returns {Config}
 */
export function resolveConfig(raw) {
  const r = /** @type {Record<string, unknown>} */ (raw && typeof raw === "object" ? raw : {});
  /** @param {string} k @param {number} min @param {number} def */
  const int = (k, min, def) => (Number.isInteger(r[k]) && /** @type {number} */ (r[k]) >= min ? /** @type {number} */ (r[k]) : def);
  /** @param {string} k */
  const str = (k) => (typeof r[k] === "string" && r[k] !== "" ? /** @type {string} */ (r[k]) : undefined);
  /** @type {Config} */
  const cfg = {
    daemonUrl: str("daemonUrl") ?? DEFAULTS.daemonUrl,
    apiKeyFile: str("apiKeyFile"),
    apiKeyEnv: str("apiKeyEnv") ?? DEFAULTS.apiKeyEnv,
    offload: typeof r.offload === "boolean" ? r.offload : DEFAULTS.offload,
    extractAboveChars: int("extractAboveChars", 1000, DEFAULTS.extractAboveChars),
    previewChars: int("previewChars", 0, DEFAULTS.previewChars),
    timeoutMs: int("timeoutMs", 100, DEFAULTS.timeoutMs),
    toolTimeoutMs: int("toolTimeoutMs", 100, DEFAULTS.toolTimeoutMs),
    assembleTimeoutMs: int("assembleTimeoutMs", 100, DEFAULTS.assembleTimeoutMs),
    compactTimeoutMs: int("compactTimeoutMs", 1000, DEFAULTS.compactTimeoutMs),
  };
  cfg.urlProblem = checkDaemonUrl(cfg.daemonUrl);
  return cfg;
}

/**
 * Says what is wrong with a daemon URL, or returns undefined when it is http on a loopback address.
 * @param {string} s
 */
export function checkDaemonUrl(s) {
  let u;
  try {
    u = new URL(s);
  } catch {
    return `daemonUrl ${JSON.stringify(s)} is not a URL (expected http://127.0.0.1:<port>)`;
  }
  if (u.protocol !== "http:" || !["127.0.0.1", "localhost", "[::1]"].includes(u.hostname) || u.username || u.password) {
    return `daemonUrl ${JSON.stringify(s)} is not loopback http (expected http://127.0.0.1…, http://localhost… or http://[::1]…)`;
  }
  return undefined;
}

/**
 * Reads the API key: the first line of apiKeyFile (trimmed) when it is set, else the apiKeyEnv variable.
 * Returns "" for no key. Throws when apiKeyFile is set but cannot be read (callers turn that into a failure).
 * @param {Config} cfg
 */
export function readApiKey(cfg) {
  if (cfg.apiKeyFile) {
    const st = statSync(cfg.apiKeyFile);
    if (!st.isFile()) throw new Error(`${cfg.apiKeyFile} is not a regular file`);
    if (st.size > MAX_KEY_FILE_BYTES) throw new Error(`${cfg.apiKeyFile} holds ${st.size} bytes, expected at most ${MAX_KEY_FILE_BYTES} (one key)`);
    return readFileSync(cfg.apiKeyFile, "utf8").split(/\r?\n/, 1)[0].trim();
  }
  const v = process.env[cfg.apiKeyEnv];
  return typeof v === "string" ? v.trim() : "";
}

/** Warns through log, swallowing what a throwing logger throws.
 * @param {Logger} log @param {string} m */
export function safeWarn(log, m) {
  try {
    log.warn(m);
  } catch {
    // a logger that throws must not break the tool result
  }
}
