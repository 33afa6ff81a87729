// @ts-check
// assemble tells the daemon which of the host's two calls of a turn it is: the turn-start call (OpenClaw's harness
// assemble: the rebuilt history, the reserve in runtimeSettings.limits.maxOutputTokens, the messages' budget in
// promptTokenBudget) or the model-request call (its loop hook: the view served, the window).
import { test } from "node:test";
import assert from "node:assert/strict";
import { hostCallOf, makeEngine, resolveConfig } from "../index.js";
import { answer, startDaemon } from "./helpers.js";

test("hostCallOf: turn_start with the reserve, model_request, or nothing when the host does not say", () => {
  for (const [name, params, want] of /** @type {[string, Record<string, any>, Record<string, unknown>][]} */ ([
    // OpenClaw 2026.9.6 and 2026.7.35, assembleHarnessContextEngine: buildContextEngineRuntimeSettings with
    // promptTokenBudget = the messages' budget and maxOutputTokens = the compaction reserve.
    ["turn start", { runtimeSettings: { limits: { promptTokenBudget: 64990, maxOutputTokens: 20000 } } }, { host_call: "turn_start", max_output_tokens: 20000 }],
    ["turn start with no reserve", { runtimeSettings: { limits: { promptTokenBudget: 64990, maxOutputTokens: 0 } } }, { host_call: "turn_start", max_output_tokens: 0 }],
    ["a fractional reserve is floored", { runtimeSettings: { limits: { maxOutputTokens: 4096.7 } } }, { host_call: "turn_start", max_output_tokens: 4096 }],
    // installContextEngineLoopHook: promptTokenBudget = the window, maxOutputTokens null.
    ["model request", { runtimeSettings: { limits: { promptTokenBudget: 100000, maxOutputTokens: null } } }, { host_call: "model_request" }],
    ["model request without the member", { runtimeSettings: { limits: { promptTokenBudget: 100000 } } }, { host_call: "model_request" }],
    ["a negative reserve is no reserve", { runtimeSettings: { limits: { maxOutputTokens: -1 } } }, { host_call: "model_request" }],
    ["a reserve that is not a number", { runtimeSettings: { limits: { maxOutputTokens: "20000" } } }, { host_call: "model_request" }],
    ["no limits", { runtimeSettings: {} }, {}],
    ["limits not an object", { runtimeSettings: { limits: 7 } }, {}],
    ["no runtime settings", {}, {}],
  ])) {
    assert.deepEqual(hostCallOf(params), want, name);
  }
});

test("assemble sends host_call and max_output_tokens on both calls of a turn, and neither when the host does not say", async () => {
  const d = await startDaemon((_req, res) =>
    answer(res, 200, { ok: true, summary: null, first_kept: 0, replace: [], system_prompt_addition: "", estimated_tokens: 1, predicted_tokens: 1, matched: 1, unmatched: 0, layers: [], prefix_changed: false, turn: 1 }));
  try {
    const engine = makeEngine(resolveConfig({ daemonUrl: d.url, apiKeyEnv: "BS_TEST_NO_SUCH_KEY" }), { warn: () => {} });
    const messages = [{ role: "user", content: "hi", timestamp: 1764000000000 }];
    const base = { sessionId: "s-1", sessionKey: "agent:main:main", messages };
    await engine.assemble({ ...base, tokenBudget: 64990, prompt: "hi", runtimeSettings: { limits: { promptTokenBudget: 64990, maxOutputTokens: 20000 } } });
    await engine.assemble({ ...base, tokenBudget: 99990, runtimeSettings: { limits: { promptTokenBudget: 100000, maxOutputTokens: null } } });
    await engine.assemble({ ...base, tokenBudget: 9000 });
    assert.equal(d.seen.length, 3);
    const [start, request, unknown] = d.seen.map((s) => s.json);
    assert.equal(start.host_call, "turn_start");
    assert.equal(start.max_output_tokens, 20000);
    assert.equal(start.token_budget, 64990, "the host's budget as it is: the daemon knows it is the messages'");
    assert.equal(request.host_call, "model_request");
    assert.equal("max_output_tokens" in request, false);
    assert.equal(request.token_budget, 100000);
    assert.equal("host_call" in unknown, false);
    assert.equal("max_output_tokens" in unknown, false);
  } finally {
    await d.close();
  }
});
