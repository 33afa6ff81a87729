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
 * - The offload's threshold and preview are the daemon's settings (source_offload_above_chars, source_preview_chars),
 *   learned from it; the plugin keys extractAboveChars and previewChars of earlier versions are not read, and a
 *   config that sets them has them named in movedKeys, for one warning at registration.
 */
import { readFileSync, statSync } from "node:fs";

/** @typedef {{info?: (m: string) => void, warn: (m: string) => void, error?: (m: string) => void}} Logger */
/**
 * @typedef {{daemonUrl: string, apiKeyFile?: string, apiKeyEnv: string, offload: boolean, timeoutMs: number,
 *   toolTimeoutMs: number, assembleTimeoutMs: number, compactTimeoutMs: number, urlProblem?: string,
 *   movedKeys: string[]}} Config
 */

/** Plugin config keys of earlier versions that are daemon settings now, each with the daemon setting's name. */
export const MOVED_KEYS = Object.freeze({ extractAboveChars: "source_offload_above_chars", previewChars: "source_preview_chars" });

/** The largest API key file read (a key is 64 hex characters). */
const MAX_KEY_FILE_BYTES = 4096;

/** @type {Omit<Config, "urlProblem" | "movedKeys">} */
export const DEFAULTS = Object.freeze({
  daemonUrl: "http://127.0.0.1:8000",
  apiKeyEnv: "BRAINSURGEON_API_KEY",
  offload: true,
  timeoutMs: 3000,
  toolTimeoutMs: 20000,
  assembleTimeoutMs: 5000,
  compactTimeoutMs: 120000,
});

/**
 * Returns the plugin config with the defaults filled in. OpenClaw validates it against the manifest's schema
 * before loading; a value of the wrong type here still falls back to its default. A daemonUrl that is not
 * loopback http is kept but recorded in urlProblem, and every call then fails open. Keys of MOVED_KEYS that the
 * config sets are listed in movedKeys and otherwise ignored.
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
    timeoutMs: int("timeoutMs", 100, DEFAULTS.timeoutMs),
    toolTimeoutMs: int("toolTimeoutMs", 100, DEFAULTS.toolTimeoutMs),
    assembleTimeoutMs: int("assembleTimeoutMs", 100, DEFAULTS.assembleTimeoutMs),
    compactTimeoutMs: int("compactTimeoutMs", 1000, DEFAULTS.compactTimeoutMs),
    movedKeys: Object.keys(MOVED_KEYS).filter((k) => r[k] !== undefined),
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

/**
 * The warning for a config that sets keys of MOVED_KEYS, or undefined when it sets none.
 * @param {Config} cfg
 */
export function movedKeysWarning(cfg) {
  if (cfg.movedKeys.length === 0) return undefined;
  const names = cfg.movedKeys.map((k) => `${k} (now ${MOVED_KEYS[/** @type {keyof typeof MOVED_KEYS} */ (k)]})`).join(" and ");
  return `brainsurgeon: the plugin config sets ${names}, which this plugin no longer reads: the offload's threshold and preview are the daemon's settings (.brainsurgeon/config.json beside the agents dir, or the web UI's settings); remove them from the plugin config`;
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
