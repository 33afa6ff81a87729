// @ts-check
/**
 * Lossless offload of huge tool results: the tool-result middleware sends a result whose text is longer than
 * extractAboveChars to the daemon, which stores it under the key `tc-<toolCallId>`, and only then puts a placeholder
 * with a preview in its place.
 *
 * Rules this file keeps:
 * - Fail open, never throw. OpenClaw turns a throwing tool-result middleware into "Tool output unavailable", so
 *   the middleware returns `undefined` (the result passes unchanged) on any failure and logs why.
 * - OpenClaw 2026.7 gives the middleware no agent or session, so a before_tool_call hook remembers the run identity
 *   of the last 1,000 tool calls by run id and tool-call id (an OpenAI-compatible server may reuse a tool-call id
 *   such as call_0 in another run or session; when the id alone is recently known from two sessions, the result
 *   passes through).
 * - The middleware leaves alone: results of our own tools (restoring a value must not offload it again), the
 *   host's `message`, `sessions_*`, `tool_search` and `tool_describe` (their details carry facts the host reads),
 *   a `tool_call` wrapper around any of those, error results, results at or below `extractAboveChars`
 *   characters, and results whose side key `tc-<toolCallId>` would not be a valid key (or whose id holds "[", "]",
 *   '"', "<", ">" or "&", which would break the placeholder).
 * - The daemon refuses other content under a key it already holds (409: a reused tool-call id) and the result
 *   then passes through; its answer's sha256 and bytes must match the plugin's own, else the result passes too.
 */
import { createHash } from "node:crypto";
import { agentIdOf, callDaemon, errText } from "./client.js";
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

/** Keys of a result's details that OpenClaw reads to grade a call; an offloaded result keeps them verbatim. */
export const RESERVED_DETAILS_KEYS = ["status", "ok", "success", "error", "timedOut", "exitCode"];
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
