// @ts-check
/**
 * BrainSurgeon's OpenClaw plugin (id "brainsurgeon"): the agent's tools, lossless offload of huge tool results, and
 * the context engine "brainsurgeon" (selected with plugins.slots.contextEngine) that shows the model a layered,
 * lossless view of the session: old large values collapsed to placeholders, older spans summarized.
 *
 * Rules this file keeps:
 * - Stateless. The BrainSurgeon daemon (`brainsurgeon serve`, on loopback) owns all storage, policy and wording;
 *   every tool call and every offload is ONE HTTP POST to it. Nothing is cached between calls (the key file is
 *   read at each call). Two exceptions: OpenClaw 2026.7 gives the tool-result middleware no agent or session, so
 *   a before_tool_call hook remembers the run identity of the last 1,000 tool calls by run id and tool-call id
 *   (an OpenAI-compatible server may reuse a tool-call id such as call_0 in another run or session; when the id
 *   alone is recently known from two sessions, the result passes through); and assemble remembers, per session
 *   and kind of host call, the list of messages the daemon last acknowledged (at most 16 lists and 400,000
 *   messages), so that the next call sends only the messages after it (see makeEngine).
 * - Fail open, never throw. OpenClaw turns a throwing tool-result middleware into "Tool output unavailable", so
 *   the middleware returns `undefined` (the result passes unchanged) on any failure and logs why; a tool returns
 *   a normal tool result saying what went wrong, with `details.ok: false`.
 * - `register(api)` is synchronous, cheap and idempotent: OpenClaw calls it several times (gateway start,
 *   discovery, tool catalog). It only registers; it starts nothing and does no I/O.
 * - Loads with no node_modules: only node: built-ins are imported at run time; the SDK appears in JSDoc types.
 * - The middleware leaves alone: results of our own tools (restoring a value must not offload it again), the
 *   host's `message`, `sessions_*`, `tool_search` and `tool_describe` (their details carry facts the host reads),
 *   a `tool_call` wrapper around any of those, error results, results at or below `extractAboveChars`
 *   characters, and results whose side key `tc-<toolCallId>` would not be a valid key (or whose id holds "[", "]",
 *   '"', "<", ">" or "&", which would break the placeholder).
 * - The daemon refuses other content under a key it already holds (409: a reused tool-call id) and the result
 *   then passes through; its answer's sha256 and bytes must match the plugin's own, else the result passes too.
 * - A tool's details are small metadata (the host keeps them in the transcript): above 8 KB only {ok, error} stay.
 * - The context engine never throws (OpenClaw quarantines a throwing engine for the gateway's lifetime) and never
 *   writes the host's transcript. assemble sends the daemon a skeleton of the host's messages (role, timestamp,
 *   tool-call ids, size; never content), checks the view it answers, and applies it; on any failure the host's
 *   messages pass through unchanged. Either way the system prompt gets the memory guidance OpenClaw gives only the
 *   legacy engine by itself (from the SDK, when it can be imported), before the daemon's own addition.
 *   commitTurn answers locally. compact asks the daemon, else delegates to OpenClaw's own compaction when the SDK
 *   can be imported, else reports that it did not compact. The SDK is imported once per process.
 */
import * as nodeCrypto from "node:crypto";
import { createHash } from "node:crypto";
import { readFileSync, realpathSync, statSync } from "node:fs";
import { request } from "node:http";
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";

/** @typedef {import("openclaw/plugin-sdk/plugin-entry").OpenClawPluginApi} OpenClawPluginApi */
/** @typedef {{type: "text", text: string}} TextBlock */
/** @typedef {TextBlock | {type: "image", data: string, mimeType: string}} ContentBlock */
/** @typedef {{content: ContentBlock[], details?: unknown}} ToolResult a result as the middleware sees it */
/** @typedef {{content: ContentBlock[], details: unknown}} ToolReturn what our tools' execute returns */
/** @typedef {{agentId?: string, sessionId?: string, sessionKey?: string}} ToolContext */
/**
 * @typedef {{toolCallId: string, toolName: string, args?: Record<string, unknown>, isError?: boolean,
 *   result: ToolResult}} MiddlewareEvent
 */
/** @typedef {{runtime?: string, agentId?: string, sessionId?: string, sessionKey?: string, runId?: string}} MiddlewareContext */
/** @typedef {{info?: (m: string) => void, warn: (m: string) => void, error?: (m: string) => void}} Logger */
/**
 * @typedef {{daemonUrl: string, apiKeyFile?: string, apiKeyEnv: string, offload: boolean, extractAboveChars: number,
 *   previewChars: number, timeoutMs: number, toolTimeoutMs: number, assembleTimeoutMs: number, compactTimeoutMs: number,
 *   urlProblem?: string}} Config
 */

export const PLUGIN_ID = "brainsurgeon";
export const TOOL_NAMES = ["purge_control", "recall_grep", "recall_describe", "recall_expand"];
/** Keys of a result's details that OpenClaw reads to grade a call; an offloaded result keeps them verbatim. */
export const RESERVED_DETAILS_KEYS = ["status", "ok", "success", "error", "timedOut", "exitCode"];
/** The most bytes of JSON a tool's details may take; larger details shrink to {ok, error}. */
export const MAX_DETAILS_BYTES = 8192;
/** The largest API key file read (a key is 64 hex characters). */
const MAX_KEY_FILE_BYTES = 4096;
/** Host tools whose results are never offloaded (besides ours and `sessions_*`). */
const HOST_SKIP = new Set(["message", "tool_search", "tool_describe"]);

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

/**
 * Cuts the first and last n code points of s (never splitting a surrogate pair).
 * @param {string} s @param {number} n
 */
export function headTail(s, n) {
  const cps = Array.from(s);
  return { head: cps.slice(0, n).join(""), tail: n > 0 ? cps.slice(-n).join("") : "" };
}

/**
 * Quotes s for a POSIX shell when it holds anything but the characters that need no quoting.
 * @param {string} s
 */
export function shellArg(s) {
  return /^[A-Za-z0-9_./:@%+=,-]+$/.test(s) ? s : `'${s.replaceAll("'", `'\\''`)}'`;
}

/**
 * The session as `brainsurgeon restore` names it: "<agent>/<sessionId>" when the host named the session id,
 * else its session key, else "<session>".
 * @param {{agentId?: string, sessionId?: string, sessionKey?: string}} who
 */
export function cliSession(who) {
  if (who.sessionId) return `${who.agentId || agentIdOf(who.sessionKey)}/${who.sessionId}`;
  return who.sessionKey || "<session>";
}

/**
 * Builds what stands in for an offloaded result: the placeholder text block (key, size, restore hints for the
 * agent and for the CLI, head and tail preview) and the shrunk details (our member plus the reserved keys of the
 * original, verbatim). "Characters" are code points. The preview is at most a quarter of the text each side, so it
 * stays small. session names the session for the CLI hint (cliSession; default "<session>").
 * @param {{key: string, toolName: string, content: ContentBlock[], details: unknown, previewChars: number,
 *   bytes: number, sha256: string, session?: string}} p
 */
export function buildPlaceholder(p) {
  const texts = p.content.filter((b) => b && b.type === "text" && typeof b.text === "string").map((b) => /** @type {{text: string}} */ (b).text);
  const images = p.content.filter((b) => b && b.type === "image").length;
  const chars = texts.reduce((n, t) => n + Array.from(t).length, 0);
  const text = texts.join("\n");
  const n = Math.min(p.previewChars, Math.floor(chars / 4));
  const size = images > 0 ? `${chars} characters and ${images} image${images === 1 ? "" : "s"}` : `${chars} characters`;
  const lines = [
    `[[extracted-${p.key}]] BrainSurgeon stored this ${p.toolName} result (${size}) outside the transcript.`,
    `Restore it exactly with purge_control {"action":"restore","value_id":"${p.key}"} (a long result comes in pages: follow each page's Next:).`,
    `Without the plugin: brainsurgeon restore ${p.session && p.session !== "<session>" ? shellArg(p.session) : "<session>"} ${shellArg(p.key)} prints it and writes it back here.`,
  ];
  if (n > 0) {
    const { head, tail } = headTail(text, n);
    lines.push(`--- first ${n} characters ---`, head, `--- last ${n} characters ---`, tail);
  }
  /** @type {Record<string, unknown>} */
  const details = { brainsurgeon: { key: p.key, bytes: p.bytes, sha256: p.sha256 } };
  if (p.details && typeof p.details === "object" && !Array.isArray(p.details)) {
    const d = /** @type {Record<string, unknown>} */ (p.details);
    for (const k of RESERVED_DETAILS_KEYS) if (Object.hasOwn(d, k)) details[k] = d[k];
  }
  /** @type {TextBlock[]} */
  const content = [{ type: "text", text: lines.join("\n") }];
  return { content, details };
}

/** Sum of the lengths (code points) of the text blocks; counts code units first, which is never less.
 * @param {ContentBlock[]} content @param {number} limit */
function textAbove(content, limit) {
  let units = 0;
  for (const b of content) if (b && b.type === "text" && typeof b.text === "string") units += b.text.length;
  if (units <= limit) return false;
  let cps = 0;
  for (const b of content) if (b && b.type === "text" && typeof b.text === "string") cps += Array.from(b.text).length;
  return cps > limit;
}

/**
 * Makes the tool-result middleware. It returns {result} with the placeholder once the daemon has stored the
 * original, or undefined (the result passes unchanged).
 * @param {Config} cfg @param {Logger} log
 */
export function makeMiddleware(cfg, log) {
  /** @param {MiddlewareEvent} event @param {MiddlewareContext} [ctx] */
  return async function brainsurgeonOffload(event, ctx) {
    try {
      if (!cfg.offload || !event || !event.result) return undefined;
      // Take the remembered identity of every result, offloaded or not, so that none lingers for a reused id.
      const ident = typeof event.toolCallId === "string" ? takeIdentity(event.toolCallId, ctx) : { who: ctx ?? {} };
      if (skipReason(event)) return undefined;
      const content = event.result.content;
      if (!Array.isArray(content) || !textAbove(content, cfg.extractAboveChars)) return undefined;
      const why = (/** @type {string} */ m) => log.warn(`brainsurgeon: ${event.toolName} result ${event.toolCallId} passed through unchanged: ${m}`);
      const key = `tc-${event.toolCallId}`;
      if (typeof event.toolCallId !== "string" || !isValidSourceId(event.toolCallId)) {
        why(`side key ${JSON.stringify(key)} is not valid (expected 1 to 200 bytes of printable ASCII other than space, "/", "\\", "[", "]", '"', "<", ">" and "&")`);
        return undefined;
      }
      if (cfg.urlProblem) return void why(cfg.urlProblem);
      if (ident.why !== undefined) return void why(ident.why);
      const who = ident.who;
      if (!who.sessionId && !who.sessionKey) return void why("the host named no session for this tool call");
      const contentJSON = JSON.stringify(content);
      const bytes = Buffer.byteLength(contentJSON);
      const sha256 = createHash("sha256").update(contentJSON).digest("hex");
      const label = event.toolName === "tool_call" ? innerToolName(event) || "tool_call" : event.toolName;
      const ph = buildPlaceholder({ key, toolName: label, content, details: event.result.details, previewChars: cfg.previewChars, bytes, sha256, session: cliSession(who) });
      // JSON.stringify drops absent members, and serializes content to the same bytes as contentJSON.
      const body = JSON.stringify({
        agent_id: who.agentId, session_id: who.sessionId, session_key: who.sessionKey, run_id: who.runId,
        tool_call_id: event.toolCallId, tool_name: event.toolName, key,
        content, details: event.result.details,
        placeholder_content: ph.content, placeholder_details: ph.details,
      });
      const res = await callDaemon(cfg, "/api/plugin/v1/source", body, cfg.timeoutMs);
      if (!res.ok) return void why(res.error);
      const ans = /** @type {any} */ (res.json);
      if (!ans || ans.key !== key) return void why(`the daemon answered key ${JSON.stringify(ans?.key)}, expected ${JSON.stringify(key)}`);
      if (ans.sha256 !== sha256 || ans.bytes !== bytes) {
        return void why(`the daemon stored ${JSON.stringify(ans.bytes)} bytes with sha256 ${String(ans.sha256).slice(0, 16)}…, expected ${bytes} bytes with sha256 ${sha256.slice(0, 16)}…`);
      }
      return { result: { content: ph.content, details: ph.details } };
    } catch (err) {
      safeWarn(log, `brainsurgeon: ${event?.toolName} result ${event?.toolCallId} passed through unchanged: ${errText(err)}`);
      return undefined;
    }
  };
}

/**
 * Old names of tool arguments, still accepted and forwarded to the daemon: OpenClaw masks an argument named like a
 * secret in its transcript ("***"), so the specs name none (purge_control's key became value_id), but older
 * placeholders in transcripts still say key. A tool with old names has no additionalProperties: false, or the
 * host would refuse such a call before the plugin sees it.
 * @type {Record<string, string[]>}
 */
export const OLD_ARGUMENT_NAMES = { purge_control: ["key"] };

/** The tools' JSON-Schema parameters and descriptions. @type {Record<string, {label: string, description: string, parameters: object}>} */
const TOOL_SPECS = {
  purge_control: {
    label: "BrainSurgeon purge control",
    description:
      "Get back content BrainSurgeon moved out of this conversation, and control what it moves. " +
      "A placeholder [[extracted-<key>]] (for example [[extracted-tc-call_1]] or [[extracted-a1b2c3d4]]) means the " +
      "value was stored outside the transcript without loss: call this tool with {\"action\":\"restore\",\"value_id\":\"<key>\"} " +
      "(the key is what follows \"extracted-\") and the exact content comes back in the result, ready to use at once. " +
      "A long value comes in pages of max_chars characters (default 15000): the answer then starts with a line " +
      "\"[BrainSurgeon <key>: characters A–B of N …]\"; if that line says Next:, call again with the offset it gives " +
      "until it says the last page, and put the pages together in order. " +
      "Only restore what you need now. action get_context lists what was extracted from this session; " +
      "action set_extractable with value_id=<entry id> and value \"false\" (never extract), \"true\" (may extract) or N " +
      "(keep while among the last N messages) controls one entry.",
    parameters: {
      type: "object",
      required: ["action"],
      properties: {
        action: { type: "string", enum: ["get_context", "restore", "set_extractable"], description: "What to do." },
        value_id: { type: "string", description: "restore: the key from [[extracted-<key>]]; set_extractable: the entry id." },
        keys: { type: "string", description: "restore only, optional: comma-separated value keys to restore (e.g. \"text\", \"content/0/text\"); default all." },
        offset: { type: "integer", minimum: 0, description: "restore of a tc- key only, optional: the first character of the page to return (the offset the previous page's Next: gives); default 0." },
        max_chars: { type: "integer", minimum: 1000, maximum: 100000, description: "restore of a tc- key only, optional: the page length in characters; default 15000. Keep the default unless asked otherwise: the host cuts longer tool results." },
        value: { type: "string", description: "set_extractable only: \"true\", \"false\" or a whole number N." },
      },
    },
  },
  recall_grep: {
    label: "BrainSurgeon recall grep",
    description:
      "Search everything this session still holds, including what you no longer see: entries compacted away, " +
      "abandoned branches and values BrainSurgeon extracted. One line per hit with where it was found and the entry " +
      "id; get an extracted hit back with purge_control restore.",
    parameters: {
      type: "object",
      additionalProperties: false,
      required: ["pattern"],
      properties: {
        pattern: { type: "string", description: "Text to find (a RE2 regular expression when regex is true)." },
        regex: { type: "boolean", description: "Treat pattern as a regular expression." },
        ignore_case: { type: "boolean", description: "Match letters of either case." },
        max: { type: "integer", minimum: 1, description: "Stop after this many hits." },
        in: { type: "string", description: "Only these places, comma-separated: active, compacted, off_path, extracted." },
      },
    },
  },
  recall_describe: {
    label: "BrainSurgeon recall describe",
    description:
      "Describe one entry of this session by id: type, role, time, size, whether it is compacted away or off the " +
      "active path, and what was extracted from it; for a compaction summary also what it stands for.",
    parameters: {
      type: "object",
      additionalProperties: false,
      required: ["id"],
      properties: { id: { type: "string", description: "The entry id." } },
    },
  },
  recall_expand: {
    label: "BrainSurgeon recall expand",
    description:
      "Show the original entries a compaction summary stands for (by the summary's entry id), to read what was " +
      "summarized away. resolve puts extracted values back in the output (the transcript is not changed).",
    parameters: {
      type: "object",
      additionalProperties: false,
      required: ["id"],
      properties: {
        id: { type: "string", description: "The compaction summary's entry id." },
        resolve: { type: "boolean", description: "Replace placeholders with the extracted values in the output." },
        max: { type: "integer", minimum: 1, description: "Show at most this many entries." },
      },
    },
  },
};

/**
 * Makes one tool bound to the run's identity. execute never throws: failures are tool results with details.ok false.
 * @param {string} name @param {Config} cfg @param {ToolContext} ctx
 */
export function makeTool(name, cfg, ctx) {
  const spec = TOOL_SPECS[name];
  const props = [...Object.keys(/** @type {any} */ (spec.parameters).properties), ...(OLD_ARGUMENT_NAMES[name] ?? [])];
  return {
    name,
    label: spec.label,
    description: spec.description,
    parameters: spec.parameters,
    catalogMode: /** @type {const} */ ("direct-only"),
    /** @param {string} toolCallId @param {unknown} params @param {AbortSignal} [signal] @returns {Promise<ToolReturn>} */
    async execute(toolCallId, params, signal) {
      try {
        if (cfg.urlProblem) return failure(cfg.urlProblem);
        /** @type {Record<string, unknown>} */
        const picked = {};
        const p = /** @type {Record<string, unknown>} */ (params && typeof params === "object" ? params : {});
        for (const k of props) {
          if (p[k] === undefined || p[k] === null) continue;
          picked[k] = k === "value" && typeof p[k] !== "string" ? String(p[k]) : p[k];
        }
        const body = JSON.stringify({
          agent_id: ctx?.agentId, session_id: ctx?.sessionId, session_key: ctx?.sessionKey,
          tool_call_id: toolCallId, tool: name, params: picked,
        });
        const res = await callDaemon(cfg, "/api/plugin/v1/tool", body, cfg.toolTimeoutMs, signal);
        if (!res.ok) return failure(res.error);
        const ans = /** @type {any} */ (res.json);
        if (!ans || typeof ans !== "object") return failure("the daemon's answer is not a JSON object");
        const content = Array.isArray(ans.content) && ans.content.length > 0 ? ans.content : undefined;
        if (ans.ok === true && content) return { content, details: smallDetails(ans.details ?? {}, true) };
        if (ans.ok === false) {
          const error = typeof ans.error === "string" ? ans.error : "the call failed";
          return { content: content ?? [{ type: "text", text: `BrainSurgeon: ${error}` }], details: smallDetails({ ok: false, error }, false, error) };
        }
        return failure("the daemon's answer has no ok flag and content blocks");
      } catch (err) {
        return failure(errText(err));
      }
    },
  };
}

/**
 * Returns details when their JSON is at most MAX_DETAILS_BYTES, else only {ok, error?}: the host keeps a tool's
 * details in the transcript, so they must stay small metadata.
 * @param {unknown} details @param {boolean} ok @param {string} [error]
 */
export function smallDetails(details, ok, error) {
  let n;
  try {
    n = Buffer.byteLength(JSON.stringify(details) ?? "");
  } catch {
    n = Infinity;
  }
  if (n <= MAX_DETAILS_BYTES) return details;
  return error === undefined ? { ok } : { ok, error: error.slice(0, 2000) };
}

/** @param {string} error @returns {ToolReturn} */
function failure(error) {
  return { content: [{ type: "text", text: `BrainSurgeon: ${error}. Try again later; stored values are kept.` }], details: { ok: false, error } };
}

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
  return new Promise((resolve) => {
    /** @type {Record<string, string | number>} */
    const headers = { "content-type": "application/json", "content-length": Buffer.byteLength(body) };
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
    const req = request(url, { method: "POST", headers }, (res) => {
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

/** @param {unknown} err */
function errText(err) {
  return err instanceof Error ? err.message || String(/** @type {any} */ (err).code ?? err.name) : String(err);
}

/** @param {Logger} log @param {string} m */
function safeWarn(log, m) {
  try {
    log.warn(m);
  } catch {
    // a logger that throws must not break the tool result
  }
}

/** The engine's version: package.json's (a test keeps them equal). */
export const PLUGIN_VERSION = "0.1.0";
/** The context engine's id, the value of plugins.slots.contextEngine that selects it. */
export const ENGINE_ID = "brainsurgeon";
/** The most messages one assemble call sends the daemon (the daemon refuses more). */
export const MAX_ASSEMBLE_MESSAGES = 200000;

/**
 * A new copy of the engine's info. It owns compaction (the host's compaction would write summaries into its transcript and
 * break the lossless view), declares the durable-turn contract of OpenClaw 2026.8+ (without it every turn would
 * degrade to the legacy engine), and declares no host requirements (a host that cannot run it then simply does
 * not, instead of failing the run).
 */
export function engineInfo() {
  return {
    id: ENGINE_ID,
    name: "BrainSurgeon",
    version: PLUGIN_VERSION,
    ownsCompaction: true,
    acceptedHostParams: ["sessionKey", "prompt", "runtimeContext", "runtimeSettings"],
    transcriptSemantics: {
      currentTurnFence: /** @type {const} */ ("before-current-turn-entry-v1"),
      turnAdvancementIdempotency: /** @type {const} */ ("atomic-idempotent-v1"),
    },
  };
}

/**
 * @typedef {{role: string, timestamp: number, tool_call_id?: string, tool_call_ids?: string[], chars: number,
 *   bootstrap?: true}} Skeleton
 * one host message as the daemon sees it: enough to match it to the stored entry, never its content
 */
/** @typedef {{sessionId?: string, sessionKey?: string, messages?: unknown, tokenBudget?: number, model?: string,
 *   prompt?: string, runtimeSettings?: any, runtimeContext?: any, availableTools?: unknown, citationsMode?: unknown}} AssembleParams */
/** @typedef {{messages: any[], estimatedTokens: number, systemPromptAddition?: string}} AssembleResult */
/** @typedef {{ok: boolean, compacted: boolean, reason?: string, result?: {summary?: string, tokensBefore: number,
 *   tokensAfter?: number}}} CompactResult */
/**
 * @typedef {{availableTools: Set<string>, citationsMode?: unknown, agentSessionKey?: string}} MemoryPromptParams
 * what OpenClaw's memory prompt functions take (its MemoryPromptSectionParams; agentId and sandboxed are left to the
 * host's run snapshot)
 */
/**
 * @typedef {() => Promise<{delegateCompactionToRuntime?: (p: any) => Promise<unknown>,
 *   buildMemorySystemPromptAddition?: (p: MemoryPromptParams) => string | undefined,
 *   prepareMemorySystemPromptAddition?: (p: MemoryPromptParams) => Promise<string | undefined>}>} SdkLoader
 */

/**
 * The agent id of a session key "agent:<id>:…", else "main".
 * @param {unknown} sessionKey
 */
export function agentIdOf(sessionKey) {
  if (typeof sessionKey !== "string") return "main";
  const parts = sessionKey.split(":");
  return parts.length >= 3 && parts[0] === "agent" && parts[1] !== "" ? parts[1] : "main";
}

/**
 * A message's timestamp in Unix milliseconds: a number as it is (truncated), a date string parsed, else 0.
 * @param {unknown} t
 */
function millis(t) {
  if (typeof t === "number" && Number.isFinite(t)) return Math.trunc(t);
  if (typeof t === "string") {
    const n = Date.parse(t);
    return Number.isFinite(n) ? n : 0;
  }
  return 0;
}

/**
 * The skeleton of one host message: role, timestamp (ms), a tool result's toolCallId, an assistant's tool-call
 * ids, and chars, the length of the JSON of its content (of its summary for a compactionSummary). Throws on a
 * message JSON cannot encode (the caller passes the messages through).
 * @param {unknown} message
 * @returns {Skeleton}
 */
export function skeletonOf(message) {
  const m = /** @type {Record<string, any>} */ (message && typeof message === "object" ? message : {});
  const role = typeof m.role === "string" ? m.role : "";
  /** @type {Skeleton} */
  const s = { role, timestamp: millis(m.timestamp), chars: 0 };
  if (role === "toolResult" && typeof m.toolCallId === "string" && m.toolCallId !== "") s.tool_call_id = m.toolCallId;
  if (role === "assistant" && Array.isArray(m.content)) {
    const ids = m.content.filter((b) => b && b.type === "toolCall" && typeof b.id === "string" && b.id !== "").map((b) => b.id);
    if (ids.length > 0) s.tool_call_ids = ids;
  }
  const json = JSON.stringify(m.content ?? m.summary ?? "");
  s.chars = typeof json === "string" ? json.length : 0;
  return s;
}

/** The text of the user message OpenClaw puts before a history that starts with an assistant message. */
const BOOTSTRAP_TEXT = "(session bootstrap)";

/**
 * The skeleton of the host's first message when it is OpenClaw's bootstrap message, else undefined. OpenClaw
 * (2026.7.35 and 2026.9.6, sanitizeGoogleAssistantFirstOrdering, for providers whose replay policy asks for it:
 * ollama, OpenAI-compatible completions, Google) puts {role: "user", content: "(session bootstrap)", timestamp:
 * Date.now()} before the history it loaded when that history starts with an assistant message (on 2026.9.6, a long
 * session's history is cut to its newest part). It is never stored, and made anew at each run, so the skeleton
 * says bootstrap: true and sends the timestamp as 0: the daemon lets it fall under its summary, and the same
 * bootstrap of two runs is the same message on the wire. Only an object of exactly the keys role, content and
 * timestamp, with role "user" and string content "(session bootstrap)" once trimmed, is one.
 * @param {unknown} message
 * @returns {Skeleton | undefined}
 */
export function bootstrapSkeleton(message) {
  if (!message || typeof message !== "object" || Array.isArray(message)) return undefined;
  const m = /** @type {Record<string, unknown>} */ (message);
  if (m.role !== "user" || typeof m.content !== "string" || m.content.trim() !== BOOTSTRAP_TEXT) return undefined;
  const keys = Object.keys(m);
  if (keys.length !== 3 || !("timestamp" in m)) return undefined;
  return { role: "user", timestamp: 0, chars: JSON.stringify(m.content).length, bootstrap: true };
}

/** The skeleton of the host's message i: bootstrapSkeleton for the first message when it is one, else
 * skeletonCached. Throws as skeletonOf does. @param {unknown[]} messages @param {number} i */
function skeletonAt(messages, i) {
  return (i === 0 ? bootstrapSkeleton(messages[0]) : undefined) ?? skeletonCached(messages[i]);
}

/** The SHA-256 of a string (UTF-8) in hex: crypto.hash where Node has it (one call, about three times faster),
 * else a Hash object. @type {(data: string) => string} */
const sha256Hex = typeof (/** @type {any} */ (nodeCrypto).hash) === "function"
  ? (data) => /** @type {any} */ (nodeCrypto).hash("sha256", data, "hex")
  : (data) => createHash("sha256").update(data).digest("hex");

/**
 * The chain fingerprint of a list of messages that extends the list whose fingerprint is prev ("" for the empty
 * list) by the message whose skeleton is s: the first 16 hexadecimal digits of the SHA-256 of prev, "\n", and the
 * skeleton's role, timestamp, tool_call_id, tool_call_ids (joined by U+0001) and chars, separated by U+0000; for a
 * bootstrap skeleton (bootstrapSkeleton) the timestamp counts as 0 and U+0000 "bootstrap" follows. The daemon
 * computes the same chain (engine.ChainFingerprint) and acknowledges a list by its fingerprint.
 * @param {string} prev @param {Skeleton} s
 */
export function chainFingerprint(prev, s) {
  const ids = s.tool_call_ids ? s.tool_call_ids.join("\u0001") : "";
  const boot = s.bootstrap === true;
  return sha256Hex(`${prev}\n${s.role}\u0000${boot ? 0 : s.timestamp}\u0000${s.tool_call_id ?? ""}\u0000${ids}\u0000${s.chars}${boot ? "\u0000bootstrap" : ""}`).slice(0, 16);
}

/** Whether two skeletons are equal. @param {Skeleton} a @param {Skeleton} b */
function sameSkeleton(a, b) {
  if (a.role !== b.role || a.timestamp !== b.timestamp || a.chars !== b.chars || a.tool_call_id !== b.tool_call_id) return false;
  if (a.bootstrap !== b.bootstrap) return false;
  const x = a.tool_call_ids, y = b.tool_call_ids;
  if (x === y) return true;
  if (!x || !y || x.length !== y.length) return false;
  for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) return false;
  return true;
}

/** The skeletons of the host's message objects already seen (OpenClaw copies a message it changes, never edits it
 * in place; see makeEngine), shared through globalThis like the remembered identities. */
const SKELETONS_KEY = Symbol.for("brainsurgeon.skeletons");
/** @type {WeakMap<object, Skeleton>} */
const skeletons = (/** @type {any} */ (globalThis)[SKELETONS_KEY] ??= new WeakMap());

/** skeletonOf, remembered by the message object's identity. Throws as skeletonOf does. @param {unknown} m */
function skeletonCached(m) {
  if (!m || typeof m !== "object") return skeletonOf(m);
  let s = skeletons.get(m);
  if (s === undefined) {
    s = skeletonOf(m);
    skeletons.set(m, s);
  }
  return s;
}

/**
 * @typedef {{objs: unknown[], skel: Skeleton[], chain: string[], chars: number[]}} HeldList
 * a list of the host's messages the daemon acknowledged: the message objects, their skeletons, the chain
 * fingerprint after each, and the running sum of chars after each
 */
/** The most lists of messages remembered, and the most messages in all of them (the oldest used go first). */
const HELD_MAX_LISTS = 16;
const HELD_MAX_MESSAGES = 2 * MAX_ASSEMBLE_MESSAGES;
const HELD_KEY = Symbol.for("brainsurgeon.assembleWire");
/** The acknowledged lists by daemon URL, agent, session and kind of host call (oldest used first), shared through
 * globalThis because OpenClaw may load this module more than once and makes an engine per run.
 * @type {Map<string, HeldList>} */
const heldLists = (/** @type {any} */ (globalThis)[HELD_KEY] ??= new Map());

/** Takes the list held under key out (a call owns it until it gives it back with holdList). @param {string} key */
function takeList(key) {
  const h = heldLists.get(key);
  if (h) heldLists.delete(key);
  return h;
}

/** Holds h under key as the newest, dropping the oldest beyond HELD_MAX_LISTS lists or HELD_MAX_MESSAGES messages.
 * @param {string} key @param {HeldList} h */
function holdList(key, h) {
  heldLists.delete(key);
  heldLists.set(key, h);
  let total = 0;
  for (const l of heldLists.values()) total += l.objs.length;
  while (heldLists.size > HELD_MAX_LISTS || total > HELD_MAX_MESSAGES) {
    const [k, l] = /** @type {[string, HeldList]} */ (heldLists.entries().next().value);
    heldLists.delete(k);
    total -= l.objs.length;
  }
}

/** Forgets every acknowledged list (tests and benchmarks start from a daemon that holds nothing). */
export function forgetAssembleLists() {
  heldLists.clear();
}

/** How deep sameJson follows arrays and objects before it gives up (and the caller encodes the message). */
const SAME_JSON_MAX_DEPTH = 64;

/**
 * Whether a and b have the same JSON, decided without encoding either; false means only "not decided here". True
 * when a === b and is no function or symbol; or when both are arrays with the prototype Array.prototype, of the
 * same length, whose items are so pairwise; or when both are plain objects (prototype Object.prototype or null)
 * with the same own enumerable keys in the same order whose values are so. Strings are compared with ===, which
 * reads their characters only when the lengths are equal. Anything else (a Date, a class instance, a function, a
 * NaN, a structure deeper than SAME_JSON_MAX_DEPTH, a cycle) is not decided.
 * @param {unknown} a @param {unknown} b @param {number} depth
 * @returns {boolean}
 */
function sameJson(a, b, depth) {
  if (a === b) return typeof a !== "function" && typeof a !== "symbol";
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null || depth >= SAME_JSON_MAX_DEPTH) return false;
  const proto = Object.getPrototypeOf(a);
  if (proto !== Object.getPrototypeOf(b)) return false;
  if (proto === Array.prototype) {
    const x = /** @type {unknown[]} */ (a), y = /** @type {unknown[]} */ (b);
    const n = x.length;
    if (n !== y.length) return false;
    for (let i = 0; i < n; i++) if (!sameJson(x[i], y[i], depth + 1)) return false;
    return true;
  }
  if (proto !== Object.prototype && proto !== null) return false;
  const x = /** @type {Record<string, unknown>} */ (a), y = /** @type {Record<string, unknown>} */ (b);
  const kx = Object.keys(x), ky = Object.keys(y);
  const n = kx.length;
  if (n !== ky.length) return false;
  for (let i = 0; i < n; i++) {
    const k = kx[i];
    if (k !== ky[i] || !sameJson(x[k], y[k], depth + 1)) return false;
  }
  return true;
}

/**
 * Whether the host's message a has the skeleton of the held message b, decided without encoding either: both are
 * objects with the same role, timestamp and toolCallId (===) and sameJson of what skeletonOf encodes (the content,
 * else the summary). False means only "not decided here" (the caller compares skeletons). Exact as long as the host
 * never edits a message object in place (see makeEngine), which the skeletons remembered per object rely on too.
 * @param {unknown} a @param {unknown} b
 */
function sameMessage(a, b) {
  if (!a || !b || typeof a !== "object" || typeof b !== "object") return false;
  const x = /** @type {Record<string, unknown>} */ (a), y = /** @type {Record<string, unknown>} */ (b);
  return x.role === y.role && x.timestamp === y.timestamp && x.toolCallId === y.toolCallId &&
    sameJson(x.content ?? x.summary ?? "", y.content ?? y.summary ?? "", 0);
}

/**
 * How many of the host's first messages are the ones of the list h holds: a message is the same when it is the
 * same object (no work beyond the comparison); or, past the first message, when it is a copy of the held object
 * with the same role, timestamp, tool-call id and content (sameMessage: the turn-start call's messages, which
 * OpenClaw re-reads from the transcript at each run; its strings are compared, not encoded); or when its skeleton
 * equals the one held (a copy OpenClaw made and changed). A copy takes the held object's place. The first message
 * is never judged by sameMessage, because its skeleton depends on more than those fields (OpenClaw's bootstrap
 * message). Throws as skeletonOf does.
 * @param {HeldList} h @param {unknown[]} messages
 */
function heldPrefix(h, messages) {
  const n = Math.min(h.objs.length, messages.length);
  const objs = h.objs;
  let i = 0;
  for (;;) {
    for (; i < n && (messages[i] === objs[i] || (i > 0 && sameMessage(messages[i], objs[i]))); i++) objs[i] = messages[i];
    if (i === n || !sameSkeleton(skeletonAt(messages, i), h.skel[i])) return i;
    objs[i] = messages[i];
    i++;
  }
}

/** The ack of a daemon's answer when it acknowledges exactly the list h (its length and chain fingerprint), else
 * undefined. @param {unknown} answer @param {HeldList} h */
function ackOf(answer, h) {
  const a = /** @type {any} */ (answer)?.ack;
  const n = h.objs.length;
  if (!a || typeof a !== "object" || a.messages !== n || n === 0 || a.fingerprint !== h.chain[n - 1]) return undefined;
  return /** @type {{messages: number, fingerprint: string}} */ (a);
}

/**
 * The context window the daemon measures its thresholds against: the host's runtimeSettings.limits.promptTokenBudget
 * (the model's context window as OpenClaw resolved it) when it is a positive integer, else the host's tokenBudget
 * (what is left for the messages after the reserve and the prompt), else 0 (the daemon's configured window). On the
 * host's turn-start call (see hostCallOf) promptTokenBudget is only the messages' budget; the daemon, told so by
 * host_call, uses the window of the session's last model-request call instead.
 * @param {AssembleParams} p
 */
export function windowOf(p) {
  const w = p.runtimeSettings?.limits?.promptTokenBudget;
  if (Number.isInteger(w) && w > 0) return /** @type {number} */ (w);
  return Number.isInteger(p.tokenBudget) && /** @type {number} */ (p.tokenBudget) > 0 ? /** @type {number} */ (p.tokenBudget) : 0;
}

/**
 * Which of the host's assemble calls p is. OpenClaw (2026.7 and 2026.9) calls assemble twice before a turn's first
 * model request: at the turn's start with the history it rebuilt from the transcript, and before each model request
 * with the view it was served (after its own pruning of old tool results) and the turn's new messages. Only the
 * turn-start call puts the reserve in runtimeSettings.limits.maxOutputTokens (its promptTokenBudget is then what the
 * host leaves the messages). Returns {host_call: "turn_start", max_output_tokens} when maxOutputTokens is a
 * non-negative number, {host_call: "model_request"} when runtimeSettings.limits is an object without it, else {}
 * (the host does not say; the daemon then treats every call alike).
 * @param {AssembleParams} p
 * @returns {{host_call?: "turn_start" | "model_request", max_output_tokens?: number}}
 */
export function hostCallOf(p) {
  const limits = p.runtimeSettings?.limits;
  if (!limits || typeof limits !== "object") return {};
  const mot = limits.maxOutputTokens;
  if (typeof mot === "number" && Number.isFinite(mot) && mot >= 0) return { host_call: "turn_start", max_output_tokens: Math.floor(mot) };
  return { host_call: "model_request" };
}

/**
 * Checks a daemon's view against the n messages it was asked about, and returns the messages the model gets, or
 * {why} when the view cannot be applied. A view applies when: ok is true; first_kept is an integer in [0, n];
 * replace indexes are integers, ascending, unique and in [first_kept, n), each with an array of content blocks
 * (objects with a string type); summary is null or has a string text, a non-negative tokens_before and a numeric
 * timestamp; estimated_tokens is a non-negative integer; system_prompt_addition is a string or absent. When the
 * view changes nothing, the host's own array comes back (same identity).
 * @param {unknown} answer @param {any[]} messages
 * @returns {{result: AssembleResult, why?: undefined} | {why: string, result?: undefined}}
 */
export function applyView(answer, messages) {
  const v = /** @type {Record<string, any>} */ (answer);
  if (!v || typeof v !== "object" || Array.isArray(v)) return { why: "the daemon's answer is not a JSON object" };
  if (v.ok !== true) return { why: `the daemon's answer has ok ${JSON.stringify(v.ok)}, expected true` };
  const n = messages.length;
  const fk = v.first_kept ?? 0;
  if (!Number.isInteger(fk) || fk < 0 || fk > n) return { why: `first_kept ${JSON.stringify(fk)} is not an integer in [0, ${n}]` };
  const replace = v.replace ?? [];
  if (!Array.isArray(replace)) return { why: "replace is not an array" };
  /** @type {Map<number, unknown[]>} */
  const byIndex = new Map();
  let prev = -1;
  for (const r of replace) {
    const i = r?.index;
    if (!Number.isInteger(i) || i < fk || i >= n) return { why: `replace index ${JSON.stringify(i)} is not an integer in [${fk}, ${n})` };
    if (i <= prev) return { why: `replace index ${i} follows ${prev}: expected ascending, unique indexes` };
    prev = i;
    const c = r.content;
    if (!Array.isArray(c)) return { why: `replace index ${i}: content is not an array of blocks` };
    if (!c.every((b) => b && typeof b === "object" && !Array.isArray(b) && typeof b.type === "string")) {
      return { why: `replace index ${i}: a content block is not an object with a string type` };
    }
    byIndex.set(i, c);
  }
  const sum = v.summary;
  if (sum !== null && sum !== undefined) {
    if (typeof sum !== "object" || typeof sum.text !== "string" || sum.text === "") return { why: "summary has no text" };
    if (!Number.isInteger(sum.tokens_before) || sum.tokens_before < 0) return { why: "summary.tokens_before is not a non-negative integer" };
    if (typeof sum.timestamp !== "number" || !Number.isFinite(sum.timestamp)) return { why: "summary.timestamp is not a number" };
  }
  const est = v.estimated_tokens;
  if (!Number.isInteger(est) || est < 0) return { why: `estimated_tokens ${JSON.stringify(est)} is not a non-negative integer` };
  const spa = v.system_prompt_addition;
  if (spa !== undefined && spa !== null && typeof spa !== "string") return { why: "system_prompt_addition is not a string" };
  const systemPromptAddition = typeof spa === "string" && spa !== "" ? spa : undefined;
  const hasSummary = sum !== null && sum !== undefined;
  if (!hasSummary && fk === 0 && byIndex.size === 0) {
    return { result: { messages, estimatedTokens: est, ...(systemPromptAddition ? { systemPromptAddition } : {}) } };
  }
  if (hasSummary === false && fk > 0) return { why: `first_kept is ${fk} but there is no summary` };
  /** @type {unknown[]} */
  const out = hasSummary ? [{ role: "compactionSummary", summary: sum.text, tokensBefore: sum.tokens_before, timestamp: sum.timestamp }] : [];
  for (let i = fk; i < n; i++) {
    const c = byIndex.get(i);
    const m = messages[i];
    if (c === undefined) out.push(m);
    else if (!m || typeof m !== "object") return { why: `replace index ${i}: the host's message is not an object` };
    else out.push({ ...m, content: c });
  }
  return { result: { messages: out, estimatedTokens: est, ...(systemPromptAddition ? { systemPromptAddition } : {}) } };
}

/** The one import of OpenClaw's plugin SDK core (see loadOpenClawSdk). @type {ReturnType<SdkLoader> | undefined} */
let sdkImport;

/**
 * Imports OpenClaw's plugin SDK core (where delegateCompactionToRuntime and the memory prompt functions live) once
 * per process and returns the same promise to every caller: from the plugin's own directory when an openclaw
 * package is reachable from there, else from the running OpenClaw (the package that holds the process's main
 * script, which resolves its own name). Rejects, saying why for each, when neither works.
 * @type {SdkLoader}
 */
export function loadOpenClawSdk() {
  sdkImport ??= importOpenClawSdk();
  return sdkImport;
}

/** @type {SdkLoader} */
async function importOpenClawSdk() {
  /** @type {string[]} */
  const why = [];
  try {
    return await import(/** @type {string} */ ("openclaw/plugin-sdk/core"));
  } catch (err) {
    why.push(`from the plugin: ${errText(err)}`);
  }
  try {
    const main = process.argv[1] ? realpathSync(process.argv[1]) : "";
    if (!main) throw new Error("the process has no main script");
    const resolved = createRequire(main).resolve("openclaw/plugin-sdk/core");
    return await import(pathToFileURL(resolved).href);
  } catch (err) {
    why.push(`from the running OpenClaw: ${errText(err)}`);
  }
  throw new Error(`cannot import openclaw/plugin-sdk/core (${why.join("; ")})`);
}

/** Loggers already told that the host's memory guidance is left out (it is said once per logger). */
const memoryWarned = new WeakSet();

/**
 * The system-prompt addition OpenClaw gives a context engine other than legacy, which then leaves out of its own
 * system prompt the memory section ("## Memory Recall") the legacy engine gets: buildMemorySystemPromptAddition of
 * the plugin SDK core (OpenClaw 2026.7.35 and 2026.9.6; synchronous, on 2026.9.6 it reads the memory section the
 * host prepared for this assemble call), else prepareMemorySystemPromptAddition (2026.9.6, asynchronous). It gets
 * the host's availableTools (an empty set when the host gave none), citationsMode and sessionKey as they came, as
 * OpenClaw's docs ask (on 2026.9.6 other values would not match the host's prepared section, and the function
 * throws). Returns "" when the SDK or both functions are missing, or when one throws or returns no string; a
 * missing SDK and a throwing function are logged once per logger. Never rejects.
 * @param {SdkLoader} loadSdk @param {AssembleParams} params @param {Logger} log
 * @returns {Promise<string>}
 */
export async function hostSystemPromptAddition(loadSdk, params, log) {
  /** @param {string} why */
  const once = (why) => {
    if (memoryWarned.has(log)) return;
    memoryWarned.add(log);
    safeWarn(log, `brainsurgeon: OpenClaw's memory guidance is left out of the system prompt: ${why}`);
  };
  try {
    let sdk;
    try {
      sdk = await loadSdk();
    } catch (err) {
      once(errText(err));
      return "";
    }
    const build = sdk?.buildMemorySystemPromptAddition;
    const prepare = sdk?.prepareMemorySystemPromptAddition;
    if (typeof build !== "function" && typeof prepare !== "function") return "";
    /** @type {MemoryPromptParams} */
    const p = {
      availableTools: params.availableTools instanceof Set ? params.availableTools : new Set(),
      citationsMode: params.citationsMode,
      ...(typeof params.sessionKey === "string" && params.sessionKey !== "" ? { agentSessionKey: params.sessionKey } : {}),
    };
    const text = typeof build === "function" ? build(p) : await /** @type {NonNullable<typeof prepare>} */ (prepare)(p);
    return typeof text === "string" ? text.trim() : "";
  } catch (err) {
    once(`${errText(err)} (from OpenClaw's memory prompt function)`);
    return "";
  }
}

/**
 * The assemble result with the system-prompt addition: the host's (hostSystemPromptAddition) first, then the
 * daemon's, separated by a blank line; no member when both are empty.
 * @param {AssembleResult} r @param {string} host
 * @returns {AssembleResult}
 */
function withHostAddition(r, host) {
  const text = [host, r.systemPromptAddition ?? ""].filter((t) => t !== "").join("\n\n");
  const out = { messages: r.messages, estimatedTokens: r.estimatedTokens };
  return text === "" ? out : { ...out, systemPromptAddition: text };
}

/**
 * Makes the context engine. Every method resolves (never rejects): assemble falls back to the host's messages,
 * compact to OpenClaw's runtime compaction or to {ok: false}. assemble adds the host's memory guidance to the system
 * prompt (hostSystemPromptAddition), on a view and on a pass-through alike.
 *
 * The wire. The daemon's answer acknowledges the list of messages it now holds for the session and kind of host
 * call ("ack": its length and chain fingerprint, see chainFingerprint). The next such call sends only the
 * skeletons of the messages after the part of that list the host's first messages still are, with
 * "base": {messages, fingerprint} naming that part; skeletons and the chain are computed only for the messages
 * after the base. The host's first messages are the acknowledged ones when they are the same objects (OpenClaw
 * 2026.7.35 and 2026.9.6 hand the same objects to every model-request call of a run: the agent's context array,
 * copied or not, with the turn's new messages pushed onto it; they re-read the transcript into new objects at each
 * run, and copy a message they change, e.g. an image pruned from history, never editing it in place), else when
 * they are copies with the same role, timestamp, tool-call id and content (heldPrefix: the turn-start call's
 * messages, compared with the held ones, never encoded), else when their skeletons are equal (a skeleton is
 * remembered per object, so a message object is encoded at most once).
 * The daemon answers 409 with need_full when it does not hold the base (it restarted or forgot the session): the
 * whole list is sent in the same call, once. An answer that does not acknowledge the list sent (a daemon that
 * predates the wire ignores the base) is never applied to a call that sent a base: the whole list is sent again,
 * and a daemon that never acknowledges never gets a base. Any other failure passes the host's messages through, as
 * before, and forgets the list.
 * @param {Config} cfg @param {Logger} log @param {SdkLoader} [loadSdk] how compact and assemble import the SDK (tests
 *   inject one)
 * @param {typeof callDaemon} [call] how the engine calls the daemon (benchmarks inject one)
 */
export function makeEngine(cfg, log, loadSdk = loadOpenClawSdk, call = callDaemon) {
  /**
   * The daemon's view of the host's messages (with the daemon's own system-prompt addition), or the host's
   * messages unchanged when it cannot be had.
   * @param {AssembleParams} params @returns {Promise<AssembleResult>}
   */
  async function assembleView(params) {
    const messages = /** @type {any[]} */ (Array.isArray(params?.messages) ? params.messages : []);
    let chars = 0;
    /** @param {string} why @returns {AssembleResult} */
    const passthrough = (why) => {
      safeWarn(log, `brainsurgeon: assemble passed the host's messages through unchanged: ${why}`);
      return { messages, estimatedTokens: Math.ceil(chars / 4) };
    };
    try {
      const hostCall = hostCallOf(params ?? {});
      const session = typeof params?.sessionId === "string" && params.sessionId !== "" ? params.sessionId : "";
      const key = session && !cfg.urlProblem && messages.length <= MAX_ASSEMBLE_MESSAGES ? `${cfg.daemonUrl}\u0000${agentIdOf(params.sessionKey)}\u0000${session}\u0000${hostCall.host_call ?? ""}` : "";
      let held = key ? takeList(key) : undefined;
      let base = 0;
      if (held) {
        try {
          base = heldPrefix(held, messages);
        } catch {
          base = 0;
        }
      }
      /** @type {HeldList} */
      const h = held ?? { objs: [], skel: [], chain: [], chars: [] };
      for (const a of [h.objs, h.skel, h.chain, h.chars]) a.length = base;
      let bad = "";
      let prev = base > 0 ? h.chain[base - 1] : "";
      let sum = base > 0 ? h.chars[base - 1] : 0;
      for (let i = base; i < messages.length; i++) {
        /** @type {Skeleton} */
        let s;
        try {
          s = skeletonAt(messages, i);
        } catch (err) {
          bad ||= `message ${i} cannot be encoded as JSON: ${errText(err)}`;
          s = { role: "", timestamp: 0, chars: 0 };
        }
        sum += s.chars;
        // The chain only matters for a list that is held (a call that names a session).
        if (key) prev = chainFingerprint(prev, s);
        h.objs.push(messages[i]);
        h.skel.push(s);
        h.chain.push(prev);
        h.chars.push(sum);
      }
      chars = sum;
      if (!Array.isArray(params?.messages)) return passthrough("the host sent no messages array");
      if (bad) return passthrough(bad);
      if (cfg.urlProblem) return passthrough(cfg.urlProblem);
      if (!session) return passthrough("the host named no session");
      if (messages.length > MAX_ASSEMBLE_MESSAGES) return passthrough(`${messages.length} messages, more than the ${MAX_ASSEMBLE_MESSAGES} the daemon takes`);
      /** @param {number} from @returns {string} the request's body, with the skeletons after the first from */
      const bodyFrom = (from) => JSON.stringify({
        agent_id: agentIdOf(params.sessionKey), session_id: session,
        session_key: typeof params.sessionKey === "string" && params.sessionKey !== "" ? params.sessionKey : undefined,
        token_budget: windowOf(params),
        model: typeof params.model === "string" && params.model !== "" ? params.model : undefined,
        prompt_chars: typeof params.prompt === "string" ? params.prompt.length : 0,
        ...hostCall,
        ...(from > 0 ? { base: { messages: from, fingerprint: h.chain[from - 1] } } : {}),
        messages: from > 0 ? h.skel.slice(from) : h.skel,
      });
      let res = await call(cfg, "/api/plugin/v1/assemble", bodyFrom(base), cfg.assembleTimeoutMs);
      if (base > 0) {
        const needFull = !res.ok && res.status === 409 && /** @type {any} */ (res.json)?.need_full === true;
        // A daemon that does not know the wire ignores the base: its view is of the messages after it only.
        const ignored = res.ok && ackOf(res.json, h) === undefined;
        if (needFull || ignored) res = await call(cfg, "/api/plugin/v1/assemble", bodyFrom(0), cfg.assembleTimeoutMs);
      }
      if (!res.ok) return passthrough(res.error);
      const applied = applyView(res.json, messages);
      if (applied.why !== undefined) return passthrough(`the daemon's view cannot be applied: ${applied.why}`);
      if (key && ackOf(res.json, h) !== undefined) holdList(key, h);
      return applied.result;
    } catch (err) {
      return passthrough(errText(err));
    }
  }
  return {
    info: engineInfo(),
    /** The engine builds no store of its own: the daemon reads the host's transcript. */
    async ingest() {
      return { ingested: false };
    },
    /** Nothing to commit: the daemon reads the host's rows, so a turn is committed once the host stored it. */
    async commitTurn() {
      return /** @type {{status: "committed"}} */ ({ status: "committed" });
    },
    /** Nothing to do after a turn (defined so that the host does not ingest message by message). */
    async afterTurn() {},
    /** @param {AssembleParams} params @returns {Promise<AssembleResult>} */
    async assemble(params) {
      const host = hostSystemPromptAddition(loadSdk, params ?? {}, log);
      return withHostAddition(await assembleView(params), await host);
    },
    /**
     * Asks the daemon to compact the session's view (it needs no model: collapse and the deterministic summary
     * always shrink). If the daemon cannot, OpenClaw's own compaction runs (delegateCompactionToRuntime, which
     * writes a compaction entry into the host's transcript), else the result says nothing was compacted. The window
     * sent is the one assemble sends (windowOf), so that compact and assemble compare the same thresholds.
     * @param {any} params @returns {Promise<CompactResult>}
     */
    async compact(params) {
      const p = params && typeof params === "object" ? params : {};
      /** @type {AbortSignal | undefined} */
      const signal = p.abortSignal && typeof p.abortSignal.aborted === "boolean" ? p.abortSignal : undefined;
      try {
        if (signal?.aborted) return { ok: false, compacted: false, reason: "compaction aborted" };
        let daemonWhy = cfg.urlProblem ?? "";
        if (!daemonWhy && (typeof p.sessionId !== "string" || p.sessionId === "")) daemonWhy = "the host named no session";
        if (!daemonWhy) {
          const sessionKey = typeof p.sessionKey === "string" && p.sessionKey !== "" ? p.sessionKey : undefined;
          const body = JSON.stringify({
            agent_id: typeof p.agentId === "string" && p.agentId !== "" ? p.agentId : agentIdOf(sessionKey),
            session_id: p.sessionId, session_key: sessionKey,
            token_budget: windowOf(p),
            force: p.force === true,
            current_token_count: Number.isInteger(p.currentTokenCount) && p.currentTokenCount > 0 ? p.currentTokenCount : 0,
            custom_instructions: typeof p.customInstructions === "string" ? p.customInstructions : "",
            compaction_target: p.compactionTarget === "budget" || p.compactionTarget === "threshold" ? p.compactionTarget : "",
          });
          const res = await callDaemon(cfg, "/api/plugin/v1/compact", body, cfg.compactTimeoutMs, signal);
          if (res.ok) {
            const a = /** @type {any} */ (res.json);
            if (a && a.ok === true && typeof a.compacted === "boolean") {
              const reason = typeof a.reason === "string" && a.reason !== "" ? a.reason : undefined;
              if (!a.compacted) return { ok: true, compacted: false, ...(reason ? { reason } : {}) };
              if (Number.isInteger(a.tokens_before) && a.tokens_before >= 0) {
                return {
                  ok: true, compacted: true, ...(reason ? { reason } : {}),
                  result: {
                    ...(typeof a.summary === "string" && a.summary !== "" ? { summary: a.summary } : {}),
                    tokensBefore: a.tokens_before,
                    ...(Number.isInteger(a.tokens_after) && a.tokens_after >= 0 ? { tokensAfter: a.tokens_after } : {}),
                  },
                };
              }
              daemonWhy = "the daemon's answer says compacted but has no tokens_before";
            } else {
              daemonWhy = "the daemon's answer has no ok flag and compacted boolean";
            }
          } else {
            daemonWhy = res.error;
          }
        }
        if (signal?.aborted) return { ok: false, compacted: false, reason: "compaction aborted" };
        let sdkWhy;
        try {
          const sdk = await loadSdk();
          if (typeof sdk?.delegateCompactionToRuntime === "function") {
            safeWarn(log, `brainsurgeon: compact falls back to OpenClaw's own compaction: ${daemonWhy}`);
            const r = /** @type {any} */ (await sdk.delegateCompactionToRuntime(params));
            if (r && typeof r.ok === "boolean" && typeof r.compacted === "boolean") return r;
            sdkWhy = "OpenClaw's compaction answered no result";
          } else {
            sdkWhy = "openclaw/plugin-sdk/core has no delegateCompactionToRuntime";
          }
        } catch (err) {
          sdkWhy = `OpenClaw's compaction is unavailable: ${errText(err)}`;
        }
        const reason = `BrainSurgeon could not compact: ${daemonWhy}; ${sdkWhy}`;
        safeWarn(log, `brainsurgeon: ${reason}`);
        return { ok: false, compacted: false, reason };
      } catch (err) {
        return { ok: false, compacted: false, reason: `BrainSurgeon could not compact: ${errText(err)}` };
      }
    },
  };
}

/** APIs already registered, so that a repeated register(api) on the same api adds nothing. */
const registered = new WeakSet();
/** APIs the context engine was registered on. */
const engineRegistered = new WeakSet();

/**
 * Registers the four tools (factories bound to the run's agent and session), the tool-result middleware,
 * when offloading the before_tool_call hook that remembers run identities, and the context engine (when the host
 * can register one; it runs only when plugins.slots.contextEngine selects it).
 * @param {OpenClawPluginApi} api
 */
function register(api) {
  /** @type {Logger} */
  const log = api && api.logger && typeof api.logger.warn === "function" ? api.logger : { warn: (m) => console.warn(m) };
  try {
    if (registered.has(api)) return;
    registered.add(api);
    const cfg = resolveConfig(api.pluginConfig);
    if (cfg.urlProblem && api.registrationMode === "full") {
      safeWarn(log, `brainsurgeon: ${cfg.urlProblem}; tools will fail and results pass through unchanged`);
    }
    for (const name of TOOL_NAMES) {
      api.registerTool((/** @type {ToolContext} */ ctx) => makeTool(name, cfg, ctx ?? {}), { name });
    }
    api.registerAgentToolResultMiddleware(makeMiddleware(cfg, log), { runtimes: ["openclaw", "codex"] });
    if (cfg.offload && typeof api.on === "function") {
      /** @type {any} */ (api).on("before_tool_call", (/** @type {any} */ event, /** @type {any} */ ctx) => {
        try {
          rememberIdentity(ctx?.toolCallId ?? event?.toolCallId, ctx);
        } catch {
          // remembering is best effort: the offload then passes the result through
        }
        return undefined;
      });
    }
  } catch (err) {
    safeWarn(log, `brainsurgeon: registration failed: ${errText(err)}`);
  }
  try {
    if (api && typeof api.registerContextEngine === "function" && !engineRegistered.has(api)) {
      engineRegistered.add(api);
      const cfg = resolveConfig(api.pluginConfig);
      api.registerContextEngine(ENGINE_ID, () => makeEngine(cfg, log));
    }
  } catch (err) {
    safeWarn(log, `brainsurgeon: registering the context engine failed: ${errText(err)}`);
  }
}

export default {
  id: PLUGIN_ID,
  name: "BrainSurgeon",
  description: "BrainSurgeon inside OpenClaw: purge_control and recall tools, lossless offload of huge tool results, and the context engine \"brainsurgeon\".",
  register,
};
