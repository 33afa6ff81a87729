// @ts-check
/**
 * Lossless offload of huge tool results: the tool-result middleware sends a result whose text is longer than the
 * daemon's source_offload_above_chars to the daemon, which stores it under the key `tc-<toolCallId>` and answers the
 * placeholder (its text, with a preview, and the shrunk details: the daemon owns their wording); only then does the
 * placeholder take the result's place.
 *
 * Rules this file keeps:
 * - Fail open, never throw. OpenClaw turns a throwing tool-result middleware into "Tool output unavailable", so
 *   the middleware returns `undefined` (the result passes unchanged) on any failure and logs why.
 * - The threshold is the daemon's: the plugin learns it from GET /api/plugin/v1/health (awaited while it knows
 *   none, refreshed in the background once it is SETTINGS_FRESH_MS old, at most every SETTINGS_RETRY_MS after a
 *   failure) and from each /source answer, per daemon for the whole process (globalThis), and uses the latest it
 *   saw. Until it knows one, every result passes through: a daemon that sends none (older than this plugin) gets
 *   one warning, a daemon it cannot reach one per failed attempt.
 * - OpenClaw 2026.7 gives the middleware no agent or session, so a before_tool_call hook remembers the run identity
 *   of the last 1,000 tool calls by run id and tool-call id (an OpenAI-compatible server may reuse a tool-call id
 *   such as call_0 in another run or session; when the id alone is recently known from two sessions, the result
 *   passes through).
 * - The middleware leaves alone: results of our own tools (restoring a value must not offload it again), the
 *   host's `message`, `sessions_*`, `tool_search` and `tool_describe` (their details carry facts the host reads),
 *   a `tool_call` wrapper around any of those, error results, results at or below the threshold (characters:
 *   code points of the text blocks), and results whose side key `tc-<toolCallId>` would not be a valid key (or
 *   whose id holds "[", "]", '"', "<", ">" or "&", which would break the placeholder).
 * - The label the placeholder names is the plugin's to find (tool_label): a Tool Search `tool_call` is labelled by
 *   the tool it ran, which only the host's result shape tells (innerToolName).
 * - The daemon refuses other content under a key it already holds (409: a reused tool-call id) and the result
 *   then passes through; its answer's sha256 and bytes must match the plugin's own, and it must hold the
 *   placeholder, else the result passes too.
 */
import { createHash } from "node:crypto";
import { callDaemon, errText, getDaemon } from "./client.js";
import { safeWarn } from "./config.js";
import { TOOL_NAMES } from "./tools.js";

/** @typedef {import("./config.js").Config} Config */
/** @typedef {import("./config.js").Logger} Logger */
/** @typedef {import("./tools.js").TextBlock} TextBlock */
/** @typedef {import("./tools.js").ContentBlock} ContentBlock */

/** @typedef {{content: ContentBlock[], details?: unknown}} ToolResult a result as the middleware sees it */
/**
 * @typedef {{toolCallId: string, toolName: string, args?: Record<string, unknown>, isError?: boolean,
 *   result: ToolResult}} MiddlewareEvent
 */
/** @typedef {{runtime?: string, agentId?: string, sessionId?: string, sessionKey?: string, runId?: string}} MiddlewareContext */

/** Host tools whose results are never offloaded (besides ours and `sessions_*`). */
const HOST_SKIP = new Set(["message", "tool_search", "tool_describe"]);

/**
 * Reports whether s is a valid side key: 1 to 200 bytes of printable ASCII other than space, "/" and "\",
 * and not "." or "..".
 * @param {string} s
 */
export function isValidSideKey(s) {
  return s.length >= 1 && s.length <= 200 && s !== "." && s !== ".." && /^[\x21-\x7e]+$/.test(s) && !/[/\\]/.test(s);
}

/** Reports whether s is a tool-call id the placeholder [[extracted-tc-<id>]] can hold: "tc-<id>" is a valid side
 * key and the id has none of "[", "]" (they would end or confuse the placeholder), '"', "<", ">", "&" (some JSON
 * encoders escape them, so the placeholder would not appear verbatim in the transcript).
 * @param {string} id */
export function isValidSourceId(id) {
  return typeof id === "string" && isValidSideKey(`tc-${id}`) && !/[[\]"<>&]/.test(id);
}

/** The run identity of recent tool calls by run id and tool-call id (oldest first), shared through globalThis
 * because OpenClaw may load this module more than once. */
const IDENTITY_MAX = 1000;
/** How long a remembered identity counts as fresh when two sessions claim the same tool-call id. */
const IDENTITY_FRESH_MS = 10 * 60 * 1000;
const IDENTITY_KEY = Symbol.for("brainsurgeon.toolCallIdentity");
/** @typedef {MiddlewareContext & {toolCallId: string, at: number}} Remembered */
/** @type {Map<string, Remembered>} */
const identities = (/** @type {any} */ (globalThis)[IDENTITY_KEY] ??= new Map());

/** The key of a remembered identity: the tool-call id, after the run id when there is one.
 * @param {string} toolCallId @param {string | undefined} runId */
function identityKey(toolCallId, runId) {
  return runId ? `${runId}\u0000${toolCallId}` : toolCallId;
}

/**
 * Remembers who runs a tool call (the before_tool_call hook's ctx), dropping the oldest beyond IDENTITY_MAX.
 * @param {unknown} toolCallId @param {MiddlewareContext | undefined} ctx
 */
export function rememberIdentity(toolCallId, ctx) {
  if (typeof toolCallId !== "string" || !toolCallId || !ctx || !(ctx.sessionId || ctx.sessionKey)) return;
  const runId = typeof ctx.runId === "string" && ctx.runId ? ctx.runId : undefined;
  const k = identityKey(toolCallId, runId);
  identities.delete(k);
  identities.set(k, { agentId: ctx.agentId, sessionId: ctx.sessionId, sessionKey: ctx.sessionKey, runId, toolCallId, at: Date.now() });
  while (identities.size > IDENTITY_MAX) identities.delete(/** @type {string} */ (identities.keys().next().value));
}

/**
 * The identity of a tool result's run: the middleware's ctx when it names a session (2026.8+), else what the
 * before_tool_call hook remembered for the tool call (2026.7), by run id and tool-call id when the ctx has a run
 * id, else by tool-call id alone; that one is used once. When the id alone is remembered fresh from two
 * sessions, it returns {why} instead: the result must pass through.
 * @param {string} toolCallId @param {MiddlewareContext | undefined} ctx
 * @returns {{who: MiddlewareContext, why?: undefined} | {who?: undefined, why: string}}
 */
export function takeIdentity(toolCallId, ctx) {
  if (ctx && (ctx.sessionId || ctx.sessionKey)) return { who: ctx };
  if (ctx && typeof ctx.runId === "string" && ctx.runId) {
    const k = identityKey(toolCallId, ctx.runId);
    const m = identities.get(k);
    if (m) {
      identities.delete(k);
      return { who: m };
    }
  }
  /** @type {[string, Remembered][]} */
  const same = [];
  for (const e of identities) if (e[1].toolCallId === toolCallId) same.push(e);
  if (same.length === 0) return { who: ctx ?? {} };
  const [k, newest] = /** @type {[string, Remembered]} */ (same.at(-1));
  const now = Date.now();
  const sessionOf = (/** @type {Remembered} */ m) => `${m.agentId ?? ""}\u0000${m.sessionId ?? ""}\u0000${m.sessionKey ?? ""}`;
  const other = same.find(([, m]) => now - m.at < IDENTITY_FRESH_MS && sessionOf(m) !== sessionOf(newest));
  identities.delete(k);
  if (other) {
    return { why: `tool call id ${JSON.stringify(toolCallId)} was used recently in two sessions (${other[1].sessionKey ?? other[1].sessionId} and ${newest.sessionKey ?? newest.sessionId}) and the host named neither for this result` };
  }
  return { who: newest };
}

/** Names the skip rule a tool result falls under, or returns "" when it may be offloaded.
 * @param {MiddlewareEvent} event
 */
export function skipReason(event) {
  const name = String(event.toolName ?? "");
  if (isOursOrHostSkip(name)) return `tool ${name} is never offloaded`;
  if (name === "tool_call") {
    const inner = innerToolName(event);
    if (inner && isOursOrHostSkip(inner)) return `tool_call of ${inner} is never offloaded`;
  }
  if (event.isError === true) return "error results are never offloaded";
  return "";
}

/** @param {string} name */
function isOursOrHostSkip(name) {
  return TOOL_NAMES.includes(name) || HOST_SKIP.has(name) || name.startsWith("sessions_");
}

/**
 * The tool a Tool Search `tool_call` ran: details.tool.name, else the last ":" segment of details.tool.id or of
 * args.id ("openclaw:brainsurgeon:purge_control" names purge_control).
 * @param {MiddlewareEvent} event
 */
function innerToolName(event) {
  const d = /** @type {any} */ (event.result?.details);
  if (d && typeof d === "object" && d.tool && typeof d.tool === "object") {
    if (typeof d.tool.name === "string" && d.tool.name) return d.tool.name;
    if (typeof d.tool.id === "string" && d.tool.id) return d.tool.id.split(":").pop();
  }
  const id = event.args?.id;
  return typeof id === "string" && id ? id.split(":").pop() : "";
}

/** Whether the text blocks hold more than limit characters (code points, the daemon's measure of
 * source_offload_above_chars); counts code units first, which is never less.
 * @param {ContentBlock[]} content @param {number} limit */
export function textAbove(content, limit) {
  let units = 0;
  for (const b of content) if (b && b.type === "text" && typeof b.text === "string") units += b.text.length;
  if (units <= limit) return false;
  let cps = 0;
  for (const b of content) if (b && b.type === "text" && typeof b.text === "string") cps += Array.from(b.text).length;
  return cps > limit;
}

/** How long settings learned from the daemon are used before they are refreshed (in the background). */
export const SETTINGS_FRESH_MS = 60 * 1000;
/** How long after a failed attempt to learn the settings the next one waits (results pass through meanwhile). */
export const SETTINGS_RETRY_MS = 10 * 1000;

/** @typedef {{aboveChars: number, previewChars: number, at: number}} Settings the daemon's offload settings */

/**
 * The offload settings of a daemon answer (GET /api/plugin/v1/health, POST /api/plugin/v1/source), or undefined
 * when it carries none (a daemon older than this plugin).
 * @param {unknown} json
 * @returns {Settings | undefined}
 */
export function settingsOf(json) {
  const j = /** @type {any} */ (json);
  if (!j || typeof j !== "object") return undefined;
  const above = j.source_offload_above_chars, preview = j.source_preview_chars;
  if (!Number.isInteger(above) || above < 0 || !Number.isInteger(preview) || preview < 0) return undefined;
  return { aboveChars: above, previewChars: preview, at: Date.now() };
}

/**
 * @typedef {{known?: Settings, pending?: Promise<void>, failedAt: number, oldWarned: boolean}} SettingsState
 * what the plugin knows of one daemon's settings
 */
/** The settings learned per daemon (URL and key source), shared through globalThis: OpenClaw may load this module
 * more than once and register the plugin several times, and every middleware must use the latest settings seen. */
const SETTINGS_KEY = Symbol.for("brainsurgeon.daemonSettings");
/** @type {Map<string, SettingsState>} */
const settingsByDaemon = (/** @type {any} */ (globalThis)[SETTINGS_KEY] ??= new Map());

/** Forgets every daemon's settings (for tests). */
export function forgetDaemonSettings() {
  settingsByDaemon.clear();
}

/**
 * The daemon's offload settings for a middleware: get() answers the latest seen ({settings}), or {} when there are
 * none, after warning (through log, naming the result) when learning them failed; learn() takes them from an answer.
 * @param {Config} cfg @param {Logger} log
 */
function daemonSettings(cfg, log) {
  const id = `${cfg.daemonUrl}\u0000${cfg.apiKeyFile ?? ""}\u0000${cfg.apiKeyEnv}`;
  const state = () => {
    let st = settingsByDaemon.get(id);
    if (!st) settingsByDaemon.set(id, (st = { failedAt: -Infinity, oldWarned: false }));
    return st;
  };
  /** Asks the daemon; warns through log as the result named `what` when that leaves no settings known.
   * @param {string} [what] */
  const refresh = (what) => {
    const st = state();
    st.pending ??= getDaemon(cfg, "/api/plugin/v1/health", cfg.timeoutMs).then((res) => {
      st.pending = undefined;
      const got = res.ok ? settingsOf(res.json) : undefined;
      if (got) {
        st.known = got;
        return;
      }
      st.failedAt = Date.now();
      if (st.known || what === undefined) return; // the settings seen last stay in force; a failing /source call says why
      if (!res.ok) {
        safeWarn(log, `brainsurgeon: ${what} passed through unchanged: cannot learn the offload settings from the daemon: ${res.error}`);
      } else if (!st.oldWarned) {
        st.oldWarned = true;
        safeWarn(log, `brainsurgeon: ${what} passed through unchanged: the daemon at ${cfg.daemonUrl} did not send its offload settings (source_offload_above_chars, source_preview_chars): it is older than this plugin; tool results pass through unchanged until it is upgraded`);
      }
    });
    return st.pending;
  };
  return {
    /** @param {string} what the result, for a warning @returns {Promise<{settings?: Settings}>} */
    async get(what) {
      const st = state(), now = Date.now();
      if (st.known) {
        if (now - st.known.at >= SETTINGS_FRESH_MS && now - st.failedAt >= SETTINGS_RETRY_MS) void refresh();
        return { settings: st.known };
      }
      if (now - st.failedAt >= SETTINGS_RETRY_MS) await refresh(what);
      return { settings: state().known };
    },
    /** @param {unknown} json */
    learn(json) {
      const got = settingsOf(json);
      if (got) state().known = got;
    },
  };
}

/**
 * Makes the tool-result middleware. It returns {result} with the placeholder the daemon answered once the daemon
 * has stored the original, or undefined (the result passes unchanged).
 * @param {Config} cfg @param {Logger} log
 */
export function makeMiddleware(cfg, log) {
  const settings = daemonSettings(cfg, log);
  /** @param {MiddlewareEvent} event @param {MiddlewareContext} [ctx] */
  return async function brainsurgeonOffload(event, ctx) {
    try {
      if (!cfg.offload || !event || !event.result) return undefined;
      // Take the remembered identity of every result, offloaded or not, so that none lingers for a reused id.
      const ident = typeof event.toolCallId === "string" ? takeIdentity(event.toolCallId, ctx) : { who: ctx ?? {} };
      if (skipReason(event)) return undefined;
      const content = event.result.content;
      if (!Array.isArray(content)) return undefined;
      // Without a daemon to ask nothing is offloaded (register() warned of the URL once).
      if (cfg.urlProblem) return undefined;
      const st = await settings.get(`${event.toolName} result ${event.toolCallId}`);
      if (!st.settings) return undefined; // the daemon's settings are unknown: get() warned when asking failed
      if (!textAbove(content, st.settings.aboveChars)) return undefined;
      const why = (/** @type {string} */ m) => log.warn(`brainsurgeon: ${event.toolName} result ${event.toolCallId} passed through unchanged: ${m}`);
      const key = `tc-${event.toolCallId}`;
      if (typeof event.toolCallId !== "string" || !isValidSourceId(event.toolCallId)) {
        why(`side key ${JSON.stringify(key)} is not valid (expected 1 to 200 bytes of printable ASCII other than space, "/", "\\", "[", "]", '"', "<", ">" and "&")`);
        return undefined;
      }
      if (ident.why !== undefined) return void why(ident.why);
      const who = ident.who;
      if (!who.sessionId && !who.sessionKey) return void why("the host named no session for this tool call");
      const contentJSON = JSON.stringify(content);
      const bytes = Buffer.byteLength(contentJSON);
      const sha256 = createHash("sha256").update(contentJSON).digest("hex");
      const label = event.toolName === "tool_call" ? innerToolName(event) || "tool_call" : event.toolName;
      // JSON.stringify drops absent members, and serializes content to the same bytes as contentJSON. Without
      // placeholder_content the daemon builds the placeholder and answers it.
      const body = JSON.stringify({
        agent_id: who.agentId, session_id: who.sessionId, session_key: who.sessionKey, run_id: who.runId,
        tool_call_id: event.toolCallId, tool_name: event.toolName, tool_label: label, key,
        content, details: event.result.details,
      });
      const res = await callDaemon(cfg, "/api/plugin/v1/source", body, cfg.timeoutMs);
      if (!res.ok) return void why(res.error);
      const ans = /** @type {any} */ (res.json);
      if (!ans || ans.key !== key) return void why(`the daemon answered key ${JSON.stringify(ans?.key)}, expected ${JSON.stringify(key)}`);
      if (ans.sha256 !== sha256 || ans.bytes !== bytes) {
        return void why(`the daemon stored ${JSON.stringify(ans.bytes)} bytes with sha256 ${String(ans.sha256).slice(0, 16)}…, expected ${bytes} bytes with sha256 ${sha256.slice(0, 16)}…`);
      }
      settings.learn(ans);
      const phContent = ans.placeholder_content, phDetails = ans.placeholder_details;
      if (!Array.isArray(phContent) || phContent.length === 0 || !phDetails || typeof phDetails !== "object" || Array.isArray(phDetails)) {
        return void why("the daemon answered no placeholder_content and placeholder_details (expected them from a daemon as new as this plugin)");
      }
      return { result: { content: /** @type {ContentBlock[]} */ (phContent), details: phDetails } };
    } catch (err) {
      safeWarn(log, `brainsurgeon: ${event?.toolName} result ${event?.toolCallId} passed through unchanged: ${errText(err)}`);
      return undefined;
    }
  };
}
