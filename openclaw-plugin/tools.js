// @ts-check
/**
 * The agent's tools: purge_control, recall_grep, recall_describe and recall_expand. Each call is bound to the run's
 * agent and session (from OpenClaw, never from the model) and is one POST to the daemon, which does the work and
 * writes the answer.
 *
 * Rules this file keeps:
 * - A tool never throws: it returns a normal tool result saying what went wrong, with `details.ok: false`.
 * - A tool's details are small metadata (the host keeps them in the transcript): above MAX_DETAILS_BYTES only
 *   {ok, error} stay.
 * - Only the declared arguments (and their old names, OLD_ARGUMENT_NAMES) are forwarded.
 */
import { callDaemon, errText } from "./client.js";

/** @typedef {import("./config.js").Config} Config */

/** @typedef {{type: "text", text: string}} TextBlock */
/** @typedef {TextBlock | {type: "image", data: string, mimeType: string}} ContentBlock */
/** @typedef {{content: ContentBlock[], details: unknown}} ToolReturn what our tools' execute returns */
/** @typedef {{agentId?: string, sessionId?: string, sessionKey?: string}} ToolContext */

/** The agent's tools, as register() registers them and the manifest's contracts.tools lists them. */
export const TOOL_NAMES = ["purge_control", "recall_grep", "recall_describe", "recall_expand"];
/** The most bytes of JSON a tool's details may take; larger details shrink to {ok, error}. */
export const MAX_DETAILS_BYTES = 8192;

/**
 * Old names of tool arguments, still accepted and forwarded to the daemon: OpenClaw masks an argument named like a
 * secret in its transcript ("***"), so the specs name none (purge_control's key became value_id), but older
 * placeholders in transcripts still say key. A tool with old names has no additionalProperties: false, or the
 * host would refuse such a call before the plugin sees it.
 * @type {Record<string, string[]>}
 */
export const OLD_ARGUMENT_NAMES = { purge_control: ["key"] };

/**
 * The tools' labels, descriptions and JSON-Schema parameters, by name: what every host registers (OpenClaw through
 * makeTool, pi through pi.js). Shared, so never changed by a host.
 * @type {Readonly<Record<string, Readonly<{label: string, description: string, parameters: object}>>>}
 */
export const TOOL_SPECS = {
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
