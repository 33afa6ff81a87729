// @ts-check
/**
 * The context engine "brainsurgeon" (selected with plugins.slots.contextEngine): it shows the model a layered,
 * lossless view of the session (old large values collapsed to placeholders, older spans summarized) that the daemon
 * builds.
 *
 * Rules this file keeps:
 * - The context engine never throws (OpenClaw quarantines a throwing engine for the gateway's lifetime) and never
 *   writes the host's transcript. assemble sends the daemon a skeleton of the host's messages (role, timestamp,
 *   tool-call ids, size; never content; see wire.js), checks the view it answers, and applies it; on any failure the
 *   host's messages pass through unchanged. Either way the system prompt gets the memory guidance OpenClaw gives
 *   only the legacy engine by itself (from the SDK, when it can be imported), before the daemon's own addition.
 * - commitTurn answers locally. compact asks the daemon, else delegates to OpenClaw's own compaction when the SDK
 *   can be imported, else reports that it did not compact. The SDK is imported once per process.
 * - The view itself (makeAssembler: skeletons out, the daemon's view checked and applied) knows no OpenClaw: pi's
 *   extension (pi.js) uses it as it is, naming its agent and adding members to the request's body.
 */
import { realpathSync } from "node:fs";
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";
import { agentIdOf, callDaemon, errText } from "./client.js";
import { safeWarn } from "./config.js";
import { MAX_ASSEMBLE_MESSAGES, ackOf, chainFingerprint, heldPrefix, holdList, skeletonAt, takeList } from "./wire.js";

/** @typedef {import("./config.js").Config} Config */
/** @typedef {import("./config.js").Logger} Logger */
/** @typedef {import("./wire.js").Skeleton} Skeleton */
/** @typedef {import("./wire.js").HeldList} HeldList */

/** The engine's version: package.json's (a test keeps them equal). */
export const PLUGIN_VERSION = "0.1.0";
/** The context engine's id, the value of plugins.slots.contextEngine that selects it. */
export const ENGINE_ID = "brainsurgeon";

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
 * @typedef {{agentId?: string, extra?: Record<string, unknown>}} AssembleHost what a host other than OpenClaw tells
 * the assembler beside AssembleParams: the agent the daemon is told (else agentIdOf(params.sessionKey)) and members
 * added to each request's body (which a daemon that does not know them ignores)
 */

/**
 * Makes the assembler: a function that answers the daemon's view of the host's messages (with the daemon's own
 * system-prompt addition), or the host's messages unchanged when it cannot be had, after warning through log why.
 * It never rejects. It is host-neutral: OpenClaw's engine (makeEngine) and pi's extension (pi.js) both use it; the
 * incremental wire it keeps is described at makeEngine.
 * @param {Config} cfg @param {Logger} log @param {typeof callDaemon} [call] how it calls the daemon
 * @returns {(params: AssembleParams, host?: AssembleHost) => Promise<AssembleResult>}
 */
export function makeAssembler(cfg, log, call = callDaemon) {
  return async function assembleView(params, host) {
    const messages = /** @type {any[]} */ (Array.isArray(params?.messages) ? params.messages : []);
    let chars = 0;
    /** @param {string} why @returns {AssembleResult} */
    const passthrough = (why) => {
      safeWarn(log, `brainsurgeon: assemble passed the host's messages through unchanged: ${why}`);
      return { messages, estimatedTokens: Math.ceil(chars / 4) };
    };
    try {
      const hostCall = hostCallOf(params ?? {});
      const agentId = typeof host?.agentId === "string" && host.agentId !== "" ? host.agentId : agentIdOf(params?.sessionKey);
      const session = typeof params?.sessionId === "string" && params.sessionId !== "" ? params.sessionId : "";
      const key = session && !cfg.urlProblem && messages.length <= MAX_ASSEMBLE_MESSAGES ? `${cfg.daemonUrl}\u0000${agentId}\u0000${session}\u0000${hostCall.host_call ?? ""}` : "";
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
        ...host?.extra,
        agent_id: agentId, session_id: session,
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
  };
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
  const assembleView = makeAssembler(cfg, log, call);
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
