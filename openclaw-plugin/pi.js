// @ts-check
/**
 * BrainSurgeon's pi extension (the pi coding agent, @mariozechner/pi-coding-agent 0.70.6 to 0.73.1): the agent's
 * tools as pi's native tools, lossless offload of huge tool results at the source, and the layered, lossless view of
 * the session on every LLM call. It is an adapter of the same modules as the OpenClaw plugin: tools.js (TOOL_SPECS,
 * makeTool), offload.js (makeMiddleware), engine.js (makeAssembler), client.js and config.js; the daemon
 * (`brainsurgeon serve`, on loopback) owns all storage, policy and wording.
 *
 * How pi loads it: pi.js is the default export pi's loader wants (`export default function (pi) {…}`), named by
 * package.json's "pi": {"extensions": ["./pi.js"]} when this directory lies in ~/.pi/agent/extensions/ or a project's
 * .pi/extensions/, or by its path in settings.json's "extensions".
 *
 * Its config is the OpenClaw plugin's config (daemonUrl, apiKeyFile, apiKeyEnv, offload, timeoutMs, toolTimeoutMs,
 * assembleTimeoutMs), read once at load from the JSON file BRAINSURGEON_PI_CONFIG names, else from brainsurgeon.json
 * beside this file; no file means the defaults. Without apiKeyFile the key file BRAINSURGEON_API_KEY_FILE names is
 * read (the one `brainsurgeon serve` reads), else the apiKeyEnv variable.
 *
 * The session it names to the daemon: agent_id is the name of the session's directory (pi's
 * "--<cwd with / as ->--", the agent a daemon serving ~/.pi/agent/sessions lists the session under), session_id is
 * pi's session id, and assemble also sends session_file, the transcript's path (a daemon that does not know the
 * member ignores it). A session pi does not save (--no-session) is left alone.
 *
 * Rules this file keeps:
 * - Never break a turn. Every handler returns nothing (pi goes on as without the extension) on any failure: the
 *   daemon down, slow (the config's timeouts), refusing, or answering what cannot be applied. A tool answers a
 *   normal result saying what went wrong (tools.js). Why is told to the user once per session: pi's notify when pi
 *   has a UI, else standard error.
 * - tool_result: a result whose text is above the daemon's source_offload_above_chars is stored by the daemon first
 *   (the stored bytes are the JSON of the result's content exactly), then its content and details become the
 *   daemon's placeholder, which pi then stores in its transcript (offload.js).
 * - context: the messages of each LLM call go out as skeletons (never content) and the daemon's view comes back
 *   (engine.js, wire.js); pi gives each call a deep copy, so nothing pi holds is changed, and pi's transcript is
 *   never written. A daemon's pass-through is told once per session too, except before the session's first
 *   assistant message (pi has not written the transcript yet, so the daemon cannot know it).
 * - before_agent_start: the daemon's system-prompt addition of the session's latest view (its warning that early
 *   parts were summarized many times) is added to the system prompt of the next prompt, so the prompt changes only
 *   when the warning does.
 * - session_before_compact: the compaction pi writes (its own compaction entry, under its own lock) is
 *   BrainSurgeon's: the daemon's summary, first kept entry and details (POST /api/plugin/v1/compaction, made as
 *   `brainsurgeon compact --dry-run` makes it; the daemon writes nothing). When the daemon finds nothing to compact,
 *   fails or answers what pi cannot use, pi compacts on its own.
 */
import { readFileSync } from "node:fs";
import { basename } from "node:path";
import { callDaemon, errText } from "./client.js";
import { resolveConfig } from "./config.js";
import { makeAssembler } from "./engine.js";
import { makeMiddleware } from "./offload.js";
import { TOOL_NAMES, TOOL_SPECS, makeTool } from "./tools.js";

/** @typedef {import("@mariozechner/pi-coding-agent").ExtensionAPI} ExtensionAPI */
/** @typedef {import("@mariozechner/pi-coding-agent").ExtensionContext} ExtensionContext */
/** @typedef {import("./config.js").Config} Config */
/** @typedef {import("./config.js").Logger} Logger */

/** The config file read beside this file when BRAINSURGEON_PI_CONFIG names none. */
export const PI_CONFIG_FILE = "brainsurgeon.json";

/**
 * @typedef {{agentId?: string, sessionId?: string, sessionFile?: string}} PiIdentity
 * the session of a handler's ctx as the daemon is told it
 */

/**
 * Reads the extension's config: the JSON object in the file env.BRAINSURGEON_PI_CONFIG names, else in file; a
 * missing file is the defaults. Returns the config (resolveConfig) and, when the file cannot be read or holds no
 * JSON object, why (the defaults are then used). Without apiKeyFile, env.BRAINSURGEON_API_KEY_FILE is the key file.
 * @param {string | URL} file @param {Record<string, string | undefined>} [env]
 * @returns {{cfg: Config, problem?: string}}
 */
export function loadPiConfig(file, env = process.env) {
  const path = env.BRAINSURGEON_PI_CONFIG || file;
  /** @type {Record<string, unknown>} */
  let raw = {};
  let problem;
  try {
    const v = JSON.parse(readFileSync(path, "utf8"));
    if (v && typeof v === "object" && !Array.isArray(v)) raw = v;
    else problem = `the config file ${String(path)} holds no JSON object (expected {"daemonUrl": …}); the defaults are used`;
  } catch (err) {
    if (/** @type {any} */ (err)?.code !== "ENOENT") problem = `cannot read the config file ${String(path)}: ${errText(err)}; the defaults are used`;
  }
  if (raw.apiKeyFile === undefined && env.BRAINSURGEON_API_KEY_FILE) raw = { ...raw, apiKeyFile: env.BRAINSURGEON_API_KEY_FILE };
  return { cfg: resolveConfig(raw), ...(problem ? { problem } : {}) };
}

/**
 * The session of a handler's ctx: agentId is the name of pi's session directory, sessionId pi's session id,
 * sessionFile its transcript (undefined for a session pi does not save). Members pi cannot give are absent.
 * @param {ExtensionContext | undefined} ctx
 * @returns {PiIdentity}
 */
export function piIdentity(ctx) {
  const sm = ctx?.sessionManager;
  /** @template T @param {() => T} f @returns {T | undefined} */
  const get = (f) => {
    try {
      return f();
    } catch {
      return undefined;
    }
  };
  const str = (/** @type {unknown} */ v) => (typeof v === "string" && v !== "" ? v : undefined);
  const dir = str(get(() => sm?.getSessionDir()));
  return {
    agentId: dir ? str(basename(dir)) : undefined,
    sessionId: str(get(() => sm?.getSessionId())),
    sessionFile: str(get(() => sm?.getSessionFile())),
  };
}

/**
 * Makes the teller: tell(ctx, m) says m to the user at most once per session (pi's notify as a warning when pi has a
 * UI, else write(m) on standard error); every later call for the same session is dropped. It never throws.
 * @param {(m: string) => void} [write]
 */
export function makeTeller(write = (m) => console.error(m)) {
  /** @type {Set<string>} */
  const told = new Set();
  /** @param {ExtensionContext | undefined} ctx @param {string} m */
  return function tell(ctx, m) {
    try {
      const id = piIdentity(ctx).sessionId ?? "";
      if (told.has(id)) return;
      told.add(id);
      const text = `${m.startsWith("brainsurgeon: ") ? `BrainSurgeon: ${m.slice(14)}` : m} (pi goes on without BrainSurgeon where it fails; this is said once per session)`;
      if (ctx?.hasUI && typeof ctx.ui?.notify === "function") ctx.ui.notify(text, "warning");
      else write(text);
    } catch {
      // telling is best effort: a turn must never fail for it
    }
  };
}

/** Whether the messages hold an assistant message (pi writes a session's transcript once it has one).
 * @param {unknown[]} messages */
function hasAssistant(messages) {
  return messages.some((m) => /** @type {any} */ (m)?.role === "assistant");
}

/**
 * Makes the extension's factory for a config: what it registers is described at the top of this file.
 * @param {Config} cfg @param {{problem?: string, tell?: ReturnType<typeof makeTeller>, call?: typeof callDaemon}} [opts]
 *   problem: why the config file was not used (told at session start); tell and call: for tests
 * @returns {(pi: ExtensionAPI) => void}
 */
export function makePiExtension(cfg, opts = {}) {
  return function brainsurgeonPi(pi) {
    const tell = opts.tell ?? makeTeller();
    const call = opts.call ?? callDaemon;
    /** @param {ExtensionContext | undefined} ctx @returns {Logger} */
    const logFor = (ctx) => ({ warn: (m) => tell(ctx, m) });
    /** The daemon's latest system-prompt addition by session id. @type {Map<string, string>} */
    const additions = new Map();

    for (const name of TOOL_NAMES) {
      const spec = TOOL_SPECS[name];
      pi.registerTool({
        name,
        label: spec.label,
        description: spec.description,
        parameters: spec.parameters,
        async execute(toolCallId, params, signal, _onUpdate, ctx) {
          const who = piIdentity(ctx);
          return makeTool(name, cfg, { agentId: who.agentId, sessionId: who.sessionId }).execute(toolCallId, params, signal);
        },
      });
    }

    pi.on("session_start", (_event, ctx) => {
      if (opts.problem) tell(ctx, `brainsurgeon: ${opts.problem}`);
      else if (cfg.urlProblem) tell(ctx, `brainsurgeon: ${cfg.urlProblem}; tools will fail and results pass through unchanged`);
      return undefined;
    });

    pi.on("tool_result", async (event, ctx) => {
      try {
        const who = piIdentity(ctx);
        if (!cfg.offload || !who.sessionFile || !event) return undefined;
        const offload = makeMiddleware(cfg, logFor(ctx));
        const r = await offload(
          { toolCallId: event.toolCallId, toolName: event.toolName, args: event.input, isError: event.isError, result: { content: event.content, details: event.details } },
          { agentId: who.agentId, sessionId: who.sessionId },
        );
        return r?.result ? { content: r.result.content, details: r.result.details } : undefined;
      } catch (err) {
        tell(ctx, `brainsurgeon: ${event?.toolName} result ${event?.toolCallId} passed through unchanged: ${errText(err)}`);
        return undefined;
      }
    });

    pi.on("context", async (event, ctx) => {
      try {
        const who = piIdentity(ctx);
        const messages = event?.messages;
        if (!who.sessionFile || !who.sessionId || !Array.isArray(messages)) return undefined;
        const stored = hasAssistant(messages);
        /** @type {typeof callDaemon} */
        const noting = async (c, path, body, timeoutMs, signal) => {
          const res = await call(c, path, body, timeoutMs, signal);
          const why = res.ok ? /** @type {any} */ (res.json)?.passthrough : undefined;
          if (stored && typeof why === "string" && why !== "") tell(ctx, `brainsurgeon: the daemon passed pi's messages through unchanged: ${why}`);
          return res;
        };
        const assemble = makeAssembler(cfg, logFor(ctx), noting);
        const model = ctx?.model;
        const r = await assemble(
          {
            messages, sessionId: who.sessionId,
            tokenBudget: Number.isInteger(model?.contextWindow) ? model?.contextWindow : undefined,
            model: typeof model?.id === "string" ? model.id : undefined,
          },
          { agentId: who.agentId, extra: { session_file: who.sessionFile } },
        );
        additions.set(who.sessionId, r.systemPromptAddition ?? "");
        return r.messages === messages ? undefined : { messages: r.messages };
      } catch (err) {
        tell(ctx, `brainsurgeon: pi's messages passed through unchanged: ${errText(err)}`);
        return undefined;
      }
    });

    pi.on("session_before_compact", async (event, ctx) => {
      try {
        const who = piIdentity(ctx);
        if (!who.sessionFile || !who.sessionId) return undefined;
        const instructions = typeof event?.customInstructions === "string" ? event.customInstructions : "";
        const body = JSON.stringify({ agent_id: who.agentId, session_id: who.sessionId, custom_instructions: instructions });
        const res = await call(cfg, "/api/plugin/v1/compaction", body, cfg.compactTimeoutMs, event?.signal);
        if (!res.ok) {
          tell(ctx, `brainsurgeon: pi compacts on its own: ${res.error}`);
          return undefined;
        }
        const c = hostCompaction(res.json, event?.branchEntries);
        if (typeof c === "string") {
          if (c !== "") tell(ctx, `brainsurgeon: pi compacts on its own: ${c}`);
          return undefined;
        }
        return { compaction: c };
      } catch (err) {
        tell(ctx, `brainsurgeon: pi compacts on its own: ${errText(err)}`);
        return undefined;
      }
    });

    pi.on("before_agent_start", (event, ctx) => {
      try {
        const id = piIdentity(ctx).sessionId;
        const add = id ? additions.get(id) : undefined;
        if (!add || typeof event?.systemPrompt !== "string") return undefined;
        return { systemPrompt: `${event.systemPrompt}\n\n${add}` };
      } catch {
        return undefined;
      }
    });
  };
}

/**
 * Reads the daemon's answer to POST /api/plugin/v1/compaction as the compaction pi writes: {summary,
 * firstKeptEntryId, tokensBefore, details}. Returns why not instead (a string; "" when the daemon found nothing to
 * compact, which pi then compacts as it would without the extension): an answer that is not the route's, or a first
 * kept entry that is not on the branch pi compacts (branch: pi's branchEntries; not checked when pi gives none).
 * @param {unknown} json @param {unknown} branch
 * @returns {{summary: string, firstKeptEntryId: string, tokensBefore: number, details?: unknown} | string}
 */
export function hostCompaction(json, branch) {
  const j = /** @type {any} */ (json);
  if (!j || typeof j !== "object" || j.ok !== true) return "the daemon's answer is not a compaction";
  if (j.summary === "" && typeof j.reason === "string") return "";
  if (typeof j.summary !== "string" || j.summary === "" || typeof j.first_kept_entry_id !== "string" || j.first_kept_entry_id === "") {
    return "the daemon's answer has no summary or first kept entry";
  }
  if (!Number.isInteger(j.tokens_before) || j.tokens_before < 0) return "the daemon's answer has no tokens_before";
  if (Array.isArray(branch) && branch.length > 0 && !branch.some((e) => /** @type {any} */ (e)?.id === j.first_kept_entry_id)) {
    return `the daemon's first kept entry ${j.first_kept_entry_id} is not on the branch pi compacts`;
  }
  /** @type {{summary: string, firstKeptEntryId: string, tokensBefore: number, details?: unknown}} */
  const out = { summary: j.summary, firstKeptEntryId: j.first_kept_entry_id, tokensBefore: j.tokens_before };
  if (j.details !== undefined && j.details !== null) out.details = j.details;
  return out;
}

/**
 * The extension pi loads: the config read with loadPiConfig (brainsurgeon.json beside this file), then what
 * makePiExtension registers. Never throws: a failure to register is told on standard error and pi starts without it.
 * @param {ExtensionAPI} pi
 */
export default function brainsurgeon(pi) {
  try {
    const { cfg, problem } = loadPiConfig(new URL(PI_CONFIG_FILE, import.meta.url));
    makePiExtension(cfg, problem ? { problem } : {})(pi);
  } catch (err) {
    try {
      console.error(`BrainSurgeon: the pi extension did not register: ${errText(err)}`);
    } catch {
      // nothing left to tell with
    }
  }
}
