// @ts-check
// compact sends the daemon the same context window as assemble, so that both compare the same thresholds.
import { test } from "node:test";
import assert from "node:assert/strict";
import { makeEngine, resolveConfig } from "../index.js";
import { answer, startDaemon } from "./helpers.js";

test("compact and assemble send the same token_budget (windowOf)", async () => {
  const d = await startDaemon((req, res) =>
    req.path === "/api/plugin/v1/compact"
      ? answer(res, 200, { ok: true, compacted: false, reason: "nothing to compact", layer: "", tokens_before: 0, tokens_after: 0, summary: "" })
      : answer(res, 200, { ok: true, summary: null, first_kept: 0, replace: [], system_prompt_addition: "", estimated_tokens: 1, predicted_tokens: 1, matched: 1, unmatched: 0, layers: [], prefix_changed: false, turn: 1 }));
  try {
    const engine = makeEngine(resolveConfig({ daemonUrl: d.url, apiKeyEnv: "BS_TEST_NO_SUCH_KEY" }), { warn: () => {} }, async () => {
      throw new Error("no SDK in this test");
    });
    const messages = [{ role: "user", content: "hi", timestamp: 1764000000000 }];
    for (const [name, host, want] of /** @type {[string, Record<string, unknown>, number][]} */ ([
      ["the resolved window wins over the host's budget", { tokenBudget: 12000, runtimeSettings: { limits: { promptTokenBudget: 32768 } } }, 32768],
      ["no resolved window: the host's budget", { tokenBudget: 12000 }, 12000],
      ["a resolved window that is not a positive integer: the host's budget", { tokenBudget: 12000, runtimeSettings: { limits: { promptTokenBudget: null } } }, 12000],
      ["neither: 0 (the daemon's configured window)", {}, 0],
    ])) {
      const from = d.seen.length;
      await engine.assemble({ sessionId: "s-1", sessionKey: "agent:main:main", messages, ...host });
      await engine.compact({ sessionId: "s-1", sessionKey: "agent:main:main", force: true, ...host });
      const sent = d.seen.slice(from);
      assert.deepEqual(sent.map((s) => s.path), ["/api/plugin/v1/assemble", "/api/plugin/v1/compact"], name);
      assert.equal(sent[0].json.token_budget, want, `${name}: assemble`);
      assert.equal(sent[1].json.token_budget, want, `${name}: compact`);
    }
  } finally {
    await d.close();
  }
});

test("compact sends the host's compaction target (budget or threshold), else none", async () => {
  const d = await startDaemon((req, res) =>
    answer(res, 200, { ok: true, compacted: false, reason: "already under target", layer: "", tokens_before: 0, tokens_after: 0, summary: "" }));
  try {
    const engine = makeEngine(resolveConfig({ daemonUrl: d.url, apiKeyEnv: "BS_TEST_NO_SUCH_KEY" }), { warn: () => {} }, async () => {
      throw new Error("no SDK in this test");
    });
    for (const [target, want] of [["budget", "budget"], ["threshold", "threshold"], [undefined, ""], ["other", ""]]) {
      const from = d.seen.length;
      const r = await engine.compact({ sessionId: "s-1", sessionKey: "agent:main:main", force: true, compactionTarget: target });
      assert.equal(d.seen[from].json.compaction_target, want, String(target));
      assert.equal(r.compacted, false);
    }
  } finally {
    await d.close();
  }
});
