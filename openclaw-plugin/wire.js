// @ts-check
/**
 * The incremental assemble wire: the skeletons of the host's messages (role, timestamp, tool-call ids, size; never
 * content), their chain fingerprints, and the lists of messages the daemon acknowledged, so that the next assemble
 * call sends only the messages after the part the daemon already holds (see makeEngine in engine.js).
 *
 * Rules this file keeps:
 * - assemble remembers, per session and kind of host call, the list of messages the daemon last acknowledged (at
 *   most 16 lists and 400,000 messages), shared through globalThis because OpenClaw may load the plugin more than
 *   once and makes an engine per run.
 * - A skeleton is remembered per message object (OpenClaw copies a message it changes, never edits it in place),
 *   so a message object is encoded at most once.
 * - The chain fingerprint is the daemon's (engine.ChainFingerprint): both compute the same chain.
 */
import * as nodeCrypto from "node:crypto";
import { createHash } from "node:crypto";

/**
 * @typedef {{role: string, timestamp: number, tool_call_id?: string, tool_call_ids?: string[], chars: number,
 *   bootstrap?: true}} Skeleton
 * one host message as the daemon sees it: enough to match it to the stored entry, never its content
 */

/** The most messages one assemble call sends the daemon (the daemon refuses more). */
export const MAX_ASSEMBLE_MESSAGES = 200000;

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
export function skeletonAt(messages, i) {
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
 * in place; see makeEngine in engine.js), shared through globalThis like the remembered identities. */
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
export function takeList(key) {
  const h = heldLists.get(key);
  if (h) heldLists.delete(key);
  return h;
}

/** Holds h under key as the newest, dropping the oldest beyond HELD_MAX_LISTS lists or HELD_MAX_MESSAGES messages.
 * @param {string} key @param {HeldList} h */
export function holdList(key, h) {
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
 * never edits a message object in place (see makeEngine in engine.js), which the skeletons remembered per object rely on too.
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
export function heldPrefix(h, messages) {
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
export function ackOf(answer, h) {
  const a = /** @type {any} */ (answer)?.ack;
  const n = h.objs.length;
  if (!a || typeof a !== "object" || a.messages !== n || n === 0 || a.fingerprint !== h.chain[n - 1]) return undefined;
  return /** @type {{messages: number, fingerprint: string}} */ (a);
}
