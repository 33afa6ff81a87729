// @ts-check
/**
 * BrainSurgeon's OpenClaw plugin (id "brainsurgeon"): the agent's tools, lossless offload of huge tool results, and
 * the context engine "brainsurgeon" (selected with plugins.slots.contextEngine) that shows the model a layered,
 * lossless view of the session: old large values collapsed to placeholders, older spans summarized.
 *
 * The modules: config.js (the plugin config, the API key, the logger), client.js (the POST to the daemon, the GET
 * of its health), tools.js (the agent's tools), offload.js (the tool-result middleware), wire.js (the incremental
 * assemble wire), engine.js (the context engine), and this file, which registers them and exports what the others
 * export for tests and tools.
 *
 * Rules the plugin keeps:
 * - Stateless. The BrainSurgeon daemon (`brainsurgeon serve`, on loopback) owns all storage, policy and wording;
 *   every tool call and every offload is ONE HTTP POST to it. Nothing is cached between calls (the key file is
 *   read at each call). Three exceptions: the run identities the offload remembers for OpenClaw 2026.7 and the
 *   daemon's offload settings it learns (offload.js), and the lists of messages the daemon acknowledged, which
 *   assemble remembers (wire.js).
 * - Fail open, never throw (each module says how).
 * - `register(api)` is synchronous, cheap and idempotent: OpenClaw calls it several times (gateway start,
 *   discovery, tool catalog). It only registers; it starts nothing and does no I/O.
 * - Loads with no node_modules: only node: built-ins and the plugin's own modules are imported at run time; the SDK
 *   appears in JSDoc types.
 */
import { errText } from "./client.js";
import { movedKeysWarning, resolveConfig, safeWarn } from "./config.js";
import { ENGINE_ID, makeEngine } from "./engine.js";
import { makeMiddleware, rememberIdentity } from "./offload.js";
import { TOOL_NAMES, makeTool } from "./tools.js";

export { agentIdOf, callDaemon, getDaemon } from "./client.js";
export { DEFAULTS, MOVED_KEYS, checkDaemonUrl, movedKeysWarning, readApiKey, resolveConfig } from "./config.js";
export {
  ENGINE_ID, PLUGIN_VERSION, applyView, engineInfo, hostCallOf, hostSystemPromptAddition, loadOpenClawSdk, makeAssembler, makeEngine, windowOf,
} from "./engine.js";
export {
  SETTINGS_FRESH_MS, SETTINGS_RETRY_MS, forgetDaemonSettings, isValidSideKey, isValidSourceId, makeMiddleware, rememberIdentity, settingsOf, skipReason,
  takeIdentity, textAbove,
} from "./offload.js";
export { MAX_DETAILS_BYTES, OLD_ARGUMENT_NAMES, TOOL_NAMES, TOOL_SPECS, makeTool, smallDetails } from "./tools.js";
export { MAX_ASSEMBLE_MESSAGES, bootstrapSkeleton, chainFingerprint, forgetAssembleLists, skeletonOf } from "./wire.js";

/** @typedef {import("openclaw/plugin-sdk/plugin-entry").OpenClawPluginApi} OpenClawPluginApi */
/** @typedef {import("./tools.js").ToolContext} ToolContext */
/** @typedef {import("./config.js").Logger} Logger */

export const PLUGIN_ID = "brainsurgeon";

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
    const moved = movedKeysWarning(cfg);
    if (moved && api.registrationMode === "full") safeWarn(log, moved);
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
