// @ts-check
// The context engine: what it declares, what it sends the daemon, how it applies a view, and that every failure
// passes the host's messages through (assemble) or falls back (compact) without throwing.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import plugin, { ENGINE_ID, MAX_ASSEMBLE_MESSAGES, PLUGIN_VERSION, agentIdOf, applyView, loadOpenClawSdk, makeEngine, resolveConfig, skeletonOf } from "../index.js";
import { answer, deadUrl, fakeApi, startDaemon } from "./helpers.js";

const pkg = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8"));

/** The host's messages of a small tool turn, as OpenClaw hands them to assemble. */
function hostMessages() {
  return [
    { role: "user", content: "list the files", timestamp: 1764000000000 },
    {
      role: "assistant",
      content: [{ type: "text", text: "Listing." }, { type: "toolCall", id: "call_1", name: "exec", arguments: { command: "ls" } }],
      timestamp: 1764000001000,
      usage: { input: 10, output: 5 },
    },
    { role: "toolResult", toolCallId: "call_1", toolName: "exec", content: [{ type: "text", text: "a\nb\n".repeat(500) }], isError: false, timestamp: 1764000002000 },
    { role: "assistant", content: [{ type: "text", text: "Two files, many times." }], timestamp: 1764000003000 },
    { role: "user", content: [{ type: "text", text: "thanks" }], timestamp: "2025-11-24T16:00:04.000Z" },
  ];
}

/** @param {any[]} msgs */
function charsOf(msgs) {
  return msgs.reduce((n, m) => n + JSON.stringify(m.content ?? m.summary ?? "").length, 0);
}

/** An engine bound to a daemon URL, its warnings, and optional config. The SDK is loadSdk, by default one without
 * any function (a host whose SDK offers neither compaction nor memory guidance).
 * @param {string} url @param {Record<string, unknown>} [extra] @param {any} [loadSdk] */
function engineAt(url, extra = {}, loadSdk) {
  /** @type {string[]} */
  const warnings = [];
  const log = { warn: (/** @type {string} */ m) => warnings.push(m) };
  const engine = makeEngine(resolveConfig({ daemonUrl: url, apiKeyEnv: "BS_TEST_NO_SUCH_KEY", ...extra }), log, loadSdk ?? (async () => ({})));
  return { engine, warnings };
}

/** A valid view over n messages: nothing changes. @param {Record<string, unknown>} [over] */
function view(over = {}) {
  return { ok: true, summary: null, first_kept: 0, replace: [], system_prompt_addition: "", estimated_tokens: 123, predicted_tokens: 456, matched: 5, unmatched: 0, layers: [], prefix_changed: false, turn: 1, ...over };
}

test("register adds the engine brainsurgeon; the factory returns an engine the host accepts", async () => {
  const { api, engines, warnings } = fakeApi({});
  plugin.register(/** @type {any} */ (api));
  plugin.register(/** @type {any} */ (api));
  assert.deepEqual(engines.map((e) => e.id), [ENGINE_ID], "registered once, as brainsurgeon");
  const a = await engines[0].factory({});
  const b = await engines[0].factory({});
  assert.notEqual(a, b, "a new engine per call");
  for (const m of ["ingest", "assemble", "compact", "commitTurn", "afterTurn"]) assert.equal(typeof a[m], "function", m);
  assert.equal(a.maintain, undefined, "no maintain: the engine never rewrites the host's transcript");
  assert.deepEqual(a.info, {
    id: "brainsurgeon",
    name: "BrainSurgeon",
    version: pkg.version,
    ownsCompaction: true,
    acceptedHostParams: ["sessionKey", "prompt", "runtimeContext", "runtimeSettings"],
    transcriptSemantics: { currentTurnFence: "before-current-turn-entry-v1", turnAdvancementIdempotency: "atomic-idempotent-v1" },
  });
  assert.equal("hostRequirements" in a.info, false);
  assert.equal("turnMaintenanceMode" in a.info, false);
  assert.equal(PLUGIN_VERSION, pkg.version);
  assert.deepEqual(warnings, []);

  const old = fakeApi({});
  delete (/** @type {any} */ (old.api)).registerContextEngine;
  assert.doesNotThrow(() => plugin.register(/** @type {any} */ (old.api)));
  assert.equal(old.tools.length, 4, "a host without engines still gets the tools");
  const broken = fakeApi({});
  broken.api.registerContextEngine = () => {
    throw new Error("slot busy");
  };
  assert.doesNotThrow(() => plugin.register(/** @type {any} */ (broken.api)));
  assert.match(broken.warnings.join("\n"), /registering the context engine failed: slot busy/);
});

test("ingest, commitTurn and afterTurn answer locally, without the daemon", async () => {
  const d = await startDaemon((_req, res) => answer(res, 500, { error: "must not be called" }));
  try {
    const { engine, warnings } = engineAt(d.url);
    assert.deepEqual(await engine.ingest(), { ingested: false });
    assert.deepEqual(await engine.commitTurn(), { status: "committed" });
    assert.equal(await engine.afterTurn(), undefined);
    assert.equal(d.seen.length, 0);
    assert.deepEqual(warnings, []);
  } finally {
    await d.close();
  }
});

test("skeleton: role, timestamp in ms, tool-call ids and the content's JSON length, never content", () => {
  const m = hostMessages();
  assert.deepEqual(skeletonOf(m[0]), { role: "user", timestamp: 1764000000000, chars: JSON.stringify("list the files").length });
  assert.deepEqual(skeletonOf(m[1]), { role: "assistant", timestamp: 1764000001000, tool_call_ids: ["call_1"], chars: JSON.stringify(m[1].content).length });
  assert.deepEqual(skeletonOf(m[2]), { role: "toolResult", timestamp: 1764000002000, tool_call_id: "call_1", chars: JSON.stringify(m[2].content).length });
  assert.deepEqual(skeletonOf(m[4]).timestamp, Date.parse("2025-11-24T16:00:04.000Z"));
  assert.deepEqual(skeletonOf({ role: "compactionSummary", summary: "s", tokensBefore: 9, timestamp: 5 }), { role: "compactionSummary", timestamp: 5, chars: 3 });
  assert.deepEqual(skeletonOf(null), { role: "", timestamp: 0, chars: 2 });
  assert.deepEqual(skeletonOf({ role: "user", content: "é😀" }).chars, 5, "UTF-16 code units, quotes included");
  assert.equal(agentIdOf("agent:ops:main"), "ops");
  assert.equal(agentIdOf("agent:ops:telegram:dm:1"), "ops");
  for (const k of [undefined, "", "main", "agent::x", "agent:ops", 7]) assert.equal(agentIdOf(k), "main", String(k));
});

test("assemble sends the documented request and nothing else", async () => {
  const d = await startDaemon((_req, res) => answer(res, 200, view()));
  try {
    const { engine, warnings } = engineAt(d.url);
    const msgs = hostMessages();
    await engine.assemble({
      sessionId: "s-1", sessionKey: "agent:ops:main", messages: msgs, tokenBudget: 9000, model: "ollama/x", prompt: "héllo",
      runtimeSettings: { limits: { promptTokenBudget: 16384, maxOutputTokens: 4096 } },
    });
    await engine.assemble({ sessionId: "s-1", messages: msgs, tokenBudget: 9000 });
    await engine.assemble({ sessionId: "s-1", messages: [] });
    assert.deepEqual(warnings, []);
    assert.equal(d.seen.length, 3);
    assert.equal(d.seen[0].path, "/api/plugin/v1/assemble");
    assert.deepEqual(d.seen[0].json, {
      agent_id: "ops", session_id: "s-1", session_key: "agent:ops:main", token_budget: 16384, model: "ollama/x", prompt_chars: 5,
      host_call: "turn_start", max_output_tokens: 4096, messages: msgs.map(skeletonOf),
    });
    assert.deepEqual(d.seen[1].json, { agent_id: "main", session_id: "s-1", token_budget: 9000, prompt_chars: 0, messages: msgs.map(skeletonOf) });
    assert.deepEqual(d.seen[2].json.messages, []);
    assert.equal(d.seen[2].json.token_budget, 0);
    assert.ok(!d.seen[0].raw.includes("a\\nb\\n"), "no content is sent");
  } finally {
    await d.close();
  }
});

test("assemble applies a view: one compactionSummary, the kept tail, replaced contents", async () => {
  const placeholder = [{ type: "text", text: "[[extracted-tc-call_1]] collapsed" }];
  const summary = { id: "sum-0123456789ab", level: 1, text: "[BrainSurgeon summary sum-0123456789ab: level 1, 1 messages; …]\nThe user asked.", tokens_before: 40, timestamp: 1764000000500 };
  const v = view({
    summary,
    first_kept: 1,
    replace: [{ index: 2, content: placeholder }],
    system_prompt_addition: "BrainSurgeon: earlier parts were summarized 3 times.",
    estimated_tokens: 77,
  });
  const d = await startDaemon((_req, res) => answer(res, 200, v));
  try {
    const { engine, warnings } = engineAt(d.url);
    const msgs = hostMessages();
    const before = JSON.stringify(msgs);
    const out = await engine.assemble({ sessionId: "s-1", sessionKey: "agent:main:main", messages: msgs });
    assert.deepEqual(warnings, []);
    assert.equal(out.estimatedTokens, 77);
    assert.equal(out.systemPromptAddition, "BrainSurgeon: earlier parts were summarized 3 times.");
    assert.equal(out.messages.length, 1 + msgs.length - 1);
    assert.deepEqual(out.messages[0], { role: "compactionSummary", summary: summary.text, tokensBefore: 40, timestamp: 1764000000500 });
    assert.equal(out.messages[1], msgs[1], "an unchanged message is the host's own object");
    assert.deepEqual(out.messages[2], { ...msgs[2], content: placeholder }, "a replaced message keeps every other field");
    assert.notEqual(out.messages[2], msgs[2]);
    assert.equal(out.messages[3], msgs[3]);
    assert.equal(out.messages[4], msgs[4]);
    assert.equal(JSON.stringify(msgs), before, "the host's messages are not modified");
  } finally {
    await d.close();
  }
});

test("a view that changes nothing returns the host's own array", async () => {
  const msgs = hostMessages();
  const r = applyView(view({ system_prompt_addition: "warn" }), msgs);
  assert.equal(r.result?.messages, msgs);
  assert.equal(r.result?.systemPromptAddition, "warn");
  const r2 = applyView(view({ system_prompt_addition: "", replace: null, summary: undefined }), msgs);
  assert.equal(r2.result?.messages, msgs);
  assert.equal("systemPromptAddition" in (r2.result ?? {}), false);
  const daemonPassthrough = applyView(view({ passthrough: "no stored message matches" }), msgs);
  assert.equal(daemonPassthrough.result?.messages, msgs, "the daemon's own passthrough view changes nothing");
});

/** OpenClaw's memory section as buildMemorySystemPromptAddition returns it (2026.9.6, memory-core). */
const MEMORY = "## Memory Recall\nBefore answering anything about prior work, decisions, dates, people, preferences, or todos: run memory_search.\nCitations: include Source: <path#line> when it helps the user verify memory snippets.";

/** An SDK whose memory functions record their params and answer text. @param {Record<string, any>} [over] */
function memorySdk(over = {}) {
  /** @type {{fn: string, p: any}[]} */
  const calls = [];
  const sdk = {
    buildMemorySystemPromptAddition: (/** @type {any} */ p) => (calls.push({ fn: "build", p }), MEMORY),
    prepareMemorySystemPromptAddition: async (/** @type {any} */ p) => (calls.push({ fn: "prepare", p }), "prepared " + MEMORY),
    ...over,
  };
  return { calls, load: async () => sdk };
}

test("assemble puts OpenClaw's memory guidance first in systemPromptAddition, on a view and on a pass-through", async () => {
  let addition = "BrainSurgeon: earlier parts of this conversation were summarized 3 times.";
  const d = await startDaemon((_req, res) => answer(res, 200, view({ system_prompt_addition: addition })));
  const down = await deadUrl();
  try {
    const m = memorySdk();
    const { engine, warnings } = engineAt(d.url, {}, m.load);
    const msgs = hostMessages();
    const tools = new Set(["memory_search", "memory_get", "purge_control"]);
    const out = await engine.assemble({ sessionId: "s-1", sessionKey: "agent:ops:main", messages: msgs, availableTools: tools, citationsMode: "off" });
    assert.equal(out.systemPromptAddition, `${MEMORY}\n\n${addition}`, "the host's first, a blank line, then the daemon's");
    assert.equal(out.messages, msgs, "the view changed nothing: the host's own array");
    assert.equal(m.calls.length, 1);
    assert.equal(m.calls[0].fn, "build", "the synchronous function when the SDK has it");
    assert.equal(m.calls[0].p.availableTools, tools, "the host's own set, unchanged");
    assert.deepEqual(m.calls[0].p, { availableTools: tools, citationsMode: "off", agentSessionKey: "agent:ops:main" }, "no agentId or sandboxed: the host's run snapshot has them");
    addition = "";
    const own = await engine.assemble({ sessionId: "s-1", messages: msgs });
    assert.equal(own.systemPromptAddition, MEMORY, "the host's alone when the daemon adds nothing");
    assert.deepEqual(m.calls[1].p, { availableTools: new Set(), citationsMode: undefined }, "no tools from the host: an empty set");
    assert.deepEqual(warnings, []);

    const pass = engineAt(down, {}, m.load);
    const p = await pass.engine.assemble({ sessionId: "s-1", messages: msgs, availableTools: tools });
    assert.equal(p.messages, msgs, "passed through");
    assert.equal(p.systemPromptAddition, MEMORY, "a pass-through keeps the host's guidance");
    assert.match(pass.warnings.join("\n"), /passed the host's messages through unchanged/);
    const nothing = await pass.engine.assemble(/** @type {any} */ (undefined));
    assert.equal(nothing.systemPromptAddition, MEMORY, "even for a call without params");
  } finally {
    await d.close();
  }
});

test("memory guidance: prepare when build is missing, nothing on a release without either, fail open logged once", async () => {
  const d = await startDaemon((_req, res) => answer(res, 200, view({ system_prompt_addition: "own" })));
  try {
    const params = () => ({ sessionId: "s-1", sessionKey: "agent:main:main", messages: hostMessages(), availableTools: new Set(["memory_search"]) });
    const prep = memorySdk({ buildMemorySystemPromptAddition: undefined });
    const a = engineAt(d.url, {}, prep.load);
    assert.equal((await a.engine.assemble(params())).systemPromptAddition, `prepared ${MEMORY}\n\nown`);
    assert.deepEqual(prep.calls.map((c) => c.fn), ["prepare"]);
    assert.deepEqual(a.warnings, []);

    /** @type {[string, any, string | undefined, RegExp | undefined][]} */
    const cases = [
      ["an SDK without the memory functions", async () => ({ delegateCompactionToRuntime: async () => ({}) }), "own", undefined],
      ["no memory section (no memory tools)", memorySdk({ buildMemorySystemPromptAddition: () => undefined }).load, "own", undefined],
      ["blank memory section", memorySdk({ buildMemorySystemPromptAddition: () => "  \n " }).load, "own", undefined],
      ["not a string", memorySdk({ buildMemorySystemPromptAddition: () => ["## Memory Recall"] }).load, "own", undefined],
      ["no SDK", async () => { throw new Error("cannot import openclaw/plugin-sdk/core (from the plugin: x)"); }, "own", /memory guidance is left out of the system prompt: cannot import openclaw\/plugin-sdk\/core/],
      ["build throws", memorySdk({ buildMemorySystemPromptAddition: () => { throw new Error("prepared memory prompt section does not match the current run"); } }).load, "own",
        /memory guidance is left out of the system prompt: prepared memory prompt section does not match the current run \(from OpenClaw's memory prompt function\)/],
      ["prepare rejects", memorySdk({ buildMemorySystemPromptAddition: undefined, prepareMemorySystemPromptAddition: async () => { throw new Error("registry gone"); } }).load, "own", /registry gone/],
    ];
    for (const [name, load, want, warned] of cases) {
      const { engine, warnings } = engineAt(d.url, {}, load);
      for (let i = 0; i < 3; i++) {
        const out = await engine.assemble(params());
        assert.equal(out.systemPromptAddition, want, `${name}, call ${i + 1}`);
        assert.equal(out.estimatedTokens, 123, `${name}: the view is served`);
      }
      if (warned) {
        assert.equal(warnings.length, 1, `${name}: logged once, not per call: ${warnings.join(" | ")}`);
        assert.match(warnings[0], warned, name);
      } else {
        assert.deepEqual(warnings, [], name);
      }
    }
  } finally {
    await d.close();
  }
});

test("every invalid daemon answer passes the host's messages through, with one warning", async () => {
  const block = [{ type: "text", text: "x" }];
  const sum = { text: "s", tokens_before: 1, timestamp: 1 };
  /** @type {[string, (res: import("node:http").ServerResponse) => void, RegExp][]} */
  const cases = [
    ["garbage JSON", (res) => answer(res, 200, "{not json"), /not JSON/],
    ["not an object", (res) => answer(res, 200, "[1,2]"), /not a JSON object/],
    ["ok missing", (res) => answer(res, 200, { ...view(), ok: undefined }), /ok undefined|ok null|has ok/],
    ["ok false", (res) => answer(res, 200, view({ ok: false })), /has ok false/],
    ["first_kept negative", (res) => answer(res, 200, view({ summary: sum, first_kept: -1 })), /first_kept -1/],
    ["first_kept beyond n", (res) => answer(res, 200, view({ summary: sum, first_kept: 6 })), /first_kept 6/],
    ["first_kept fractional", (res) => answer(res, 200, view({ summary: sum, first_kept: 1.5 })), /first_kept 1\.5/],
    ["first_kept a string", (res) => answer(res, 200, view({ summary: sum, first_kept: "1" })), /first_kept "1"/],
    ["first_kept without summary", (res) => answer(res, 200, view({ first_kept: 2 })), /no summary/],
    ["index before first_kept", (res) => answer(res, 200, view({ summary: sum, first_kept: 2, replace: [{ index: 1, content: block }] })), /index 1/],
    ["index out of range", (res) => answer(res, 200, view({ replace: [{ index: 5, content: block }] })), /index 5/],
    ["index negative", (res) => answer(res, 200, view({ replace: [{ index: -1, content: block }] })), /index -1/],
    ["indexes not ascending", (res) => answer(res, 200, view({ replace: [{ index: 3, content: block }, { index: 2, content: block }] })), /ascending/],
    ["index twice", (res) => answer(res, 200, view({ replace: [{ index: 2, content: block }, { index: 2, content: block }] })), /ascending, unique/],
    ["content not an array", (res) => answer(res, 200, view({ replace: [{ index: 2, content: "text" }] })), /not an array of blocks/],
    ["content block without type", (res) => answer(res, 200, view({ replace: [{ index: 2, content: [{ text: "x" }] }] })), /string type/],
    ["content block null", (res) => answer(res, 200, view({ replace: [{ index: 2, content: [null] }] })), /string type/],
    ["replace not an array", (res) => answer(res, 200, view({ replace: { index: 2 } })), /replace is not an array/],
    ["summary text not a string", (res) => answer(res, 200, view({ summary: { ...sum, text: 5 } })), /summary has no text/],
    ["summary without tokens_before", (res) => answer(res, 200, view({ summary: { text: "s", timestamp: 1 } })), /tokens_before/],
    ["summary without timestamp", (res) => answer(res, 200, view({ summary: { text: "s", tokens_before: 1 } })), /timestamp/],
    ["estimated_tokens missing", (res) => answer(res, 200, view({ estimated_tokens: undefined })), /estimated_tokens/],
    ["system_prompt_addition not a string", (res) => answer(res, 200, view({ system_prompt_addition: 5 })), /system_prompt_addition/],
    ["HTTP 500", (res) => answer(res, 500, { error: "engine exploded" }), /HTTP 500: engine exploded/],
    ["HTTP 404", (res) => answer(res, 404, { error: "unknown session" }), /HTTP 404: unknown session/],
    ["timeout", () => {}, /did not answer within 150 ms/],
  ];
  for (const [name, handle, why] of cases) {
    const d = await startDaemon((_req, res) => handle(res));
    try {
      // Only the timeout case waits briefly: a busy machine must not turn a slow answer into a timeout.
      const { engine, warnings } = engineAt(d.url, { assembleTimeoutMs: name === "timeout" ? 150 : 10000 });
      const msgs = hostMessages();
      const out = await engine.assemble({ sessionId: "s-1", sessionKey: "agent:main:main", messages: msgs });
      assert.equal(out.messages, msgs, `${name}: the host's own messages`);
      assert.equal(out.estimatedTokens, Math.ceil(charsOf(msgs) / 4), `${name}: estimate`);
      assert.equal(out.systemPromptAddition, undefined, name);
      assert.equal(warnings.length, 1, `${name}: one warning`);
      assert.match(warnings[0], /^brainsurgeon: assemble passed the host's messages through unchanged: /, name);
      assert.match(warnings[0], why, name);
    } finally {
      await d.close();
    }
  }
});

test("assemble passes through when the daemon is down, misconfigured or unreachable by key", async () => {
  const dir = mkdtempSync(join(tmpdir(), "bs-engine-"));
  try {
    const msgs = hostMessages();
    /** @type {[string, string, Record<string, unknown>, RegExp][]} */
    const cases = [
      ["daemon down", await deadUrl(), {}, /cannot reach the daemon.*brainsurgeon serve/],
      ["not loopback", "http://example.com:8000", {}, /not loopback http/],
      ["key file missing", "http://127.0.0.1:1", { apiKeyFile: join(dir, "nope") }, /cannot read apiKeyFile/],
    ];
    for (const [name, url, extra, why] of cases) {
      const { engine, warnings } = engineAt(url, extra);
      const out = await engine.assemble({ sessionId: "s-1", messages: msgs });
      assert.equal(out.messages, msgs, name);
      assert.equal(warnings.length, 1, name);
      assert.match(warnings[0], why, name);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("assemble never throws, whatever the host hands it", async () => {
  const d = await startDaemon((_req, res) => answer(res, 200, view()));
  try {
    const { engine, warnings } = engineAt(d.url);
    /** @type {any} */
    const circular = { role: "user", content: [] };
    circular.content.push(circular);
    /** @type {[string, any, RegExp][]} */
    const cases = [
      ["no params", undefined, /no messages array/],
      ["no messages", { sessionId: "s" }, /no messages array/],
      ["no session", { messages: hostMessages() }, /named no session/],
      ["BigInt content", { sessionId: "s", messages: [{ role: "user", content: 1n }] }, /message 0 cannot be encoded/],
      ["circular content", { sessionId: "s", messages: [circular] }, /message 0 cannot be encoded/],
    ];
    for (const [name, params, why] of cases) {
      warnings.length = 0;
      const out = await engine.assemble(params);
      assert.ok(Array.isArray(out.messages), name);
      if (Array.isArray(params?.messages)) assert.equal(out.messages, params.messages, name);
      assert.equal(typeof out.estimatedTokens, "number", name);
      assert.match(warnings.join("\n"), why, name);
    }
    const throwing = makeEngine(resolveConfig({ daemonUrl: d.url }), { warn: () => { throw new Error("logger broke"); } });
    const msgs = hostMessages();
    assert.equal((await throwing.assemble({ sessionId: "s", messages: msgs, tokenBudget: 1 })).messages.length, msgs.length);
    assert.equal((await throwing.assemble({ messages: msgs })).messages, msgs, "a throwing logger changes nothing");
  } finally {
    await d.close();
  }
});

test("assemble refuses more messages than the daemon takes", async () => {
  const d = await startDaemon((_req, res) => answer(res, 200, view()));
  try {
    const { engine, warnings } = engineAt(d.url);
    const msgs = Array.from({ length: MAX_ASSEMBLE_MESSAGES + 1 }, (_, i) => ({ role: "user", content: "x", timestamp: i }));
    const out = await engine.assemble({ sessionId: "s", messages: msgs });
    assert.equal(out.messages, msgs);
    assert.equal(d.seen.length, 0);
    assert.equal(MAX_ASSEMBLE_MESSAGES, 200000, "the daemon's api.MaxAssembleMessages");
    assert.match(warnings[0], /200001 messages, more than the 200000/);
  } finally {
    await d.close();
  }
});

test("compact asks the daemon and answers in the host's CompactResult shape", async () => {
  /** @type {any} */
  let reply = { ok: true, compacted: true, reason: "summarized", layer: "summarize", tokens_before: 9000, tokens_after: 2000, summary: "[BrainSurgeon summary …]" };
  const d = await startDaemon((_req, res) => answer(res, 200, reply));
  try {
    /** @type {any[]} */
    const delegated = [];
    const { engine, warnings } = engineAt(d.url, {}, async () => ({ delegateCompactionToRuntime: async (/** @type {any} */ p) => (delegated.push(p), { ok: true, compacted: true }) }));
    const params = { sessionId: "s-1", sessionKey: "agent:ops:main", tokenBudget: 16384, force: true, currentTokenCount: 15000, customInstructions: "keep the plan", compactionTarget: "threshold" };
    assert.deepEqual(await engine.compact(params), {
      ok: true, compacted: true, reason: "summarized", result: { summary: "[BrainSurgeon summary …]", tokensBefore: 9000, tokensAfter: 2000 },
    });
    assert.equal(d.seen[0].path, "/api/plugin/v1/compact");
    assert.deepEqual(d.seen[0].json, {
      agent_id: "ops", session_id: "s-1", session_key: "agent:ops:main", token_budget: 16384, force: true, current_token_count: 15000, custom_instructions: "keep the plan", compaction_target: "threshold",
    });
    await engine.compact({ sessionId: "s-1", agentId: "ops2" });
    assert.deepEqual(d.seen[1].json, { agent_id: "ops2", session_id: "s-1", token_budget: 0, force: false, current_token_count: 0, custom_instructions: "", compaction_target: "" });
    reply = { ok: true, compacted: false, reason: "read-only", layer: "", tokens_before: 0, tokens_after: 0, summary: "" };
    assert.deepEqual(await engine.compact(params), { ok: true, compacted: false, reason: "read-only" }, "the daemon's no is an answer, not a failure");
    reply = { ok: true, compacted: true, tokens_before: 10, summary: "" };
    assert.deepEqual(await engine.compact(params), { ok: true, compacted: true, result: { tokensBefore: 10 } });
    assert.deepEqual(delegated, [], "no fallback while the daemon answers");
    assert.deepEqual(warnings, []);
  } finally {
    await d.close();
  }
});

test("compact falls back to OpenClaw's compaction, else reports it did not compact; never throws", async () => {
  const down = await deadUrl();
  const d = await startDaemon((req, res) => (req.json?.session_id === "garbage" ? answer(res, 200, { ok: true, compacted: "yes" }) : answer(res, 500, { error: "store gone" })));
  try {
    /** @type {any[]} */
    const delegated = [];
    const sdk = async () => ({ delegateCompactionToRuntime: async (/** @type {any} */ p) => (delegated.push(p), { ok: true, compacted: true, result: { tokensBefore: 5, tokensAfter: 1 } }) });
    const params = { sessionId: "s-1", sessionKey: "agent:main:main", runtimeContext: { workspaceDir: "/w" }, force: true };
    for (const url of [down, d.url]) {
      const { engine, warnings } = engineAt(url, {}, sdk);
      delegated.length = 0;
      assert.deepEqual(await engine.compact(params), { ok: true, compacted: true, result: { tokensBefore: 5, tokensAfter: 1 } });
      assert.equal(delegated[0], params, "the host's params go to the runtime as they came");
      assert.match(warnings.join("\n"), /compact falls back to OpenClaw's own compaction/);
    }
    const garbage = engineAt(d.url, {}, sdk);
    delegated.length = 0;
    await garbage.engine.compact({ sessionId: "garbage" });
    assert.equal(delegated.length, 1, "an answer without a compacted boolean falls back");

    /** @type {[string, any, RegExp][]} */
    const noSdk = [
      ["no SDK", async () => { throw new Error("Cannot find package 'openclaw'"); }, /OpenClaw's compaction is unavailable: Cannot find package 'openclaw'/],
      ["SDK without delegate", async () => ({}), /has no delegateCompactionToRuntime/],
      ["delegate throws", async () => ({ delegateCompactionToRuntime: async () => { throw new Error("runtime busy"); } }), /runtime busy/],
      ["delegate answers garbage", async () => ({ delegateCompactionToRuntime: async () => "done" }), /answered no result/],
    ];
    for (const [name, loader, why] of noSdk) {
      const { engine, warnings } = engineAt(d.url, {}, loader);
      const r = await engine.compact({ sessionId: "s-1" });
      assert.equal(r.ok, false, name);
      assert.equal(r.compacted, false, name);
      assert.match(String(r.reason), /^BrainSurgeon could not compact: the daemon answered HTTP 500: store gone; /, name);
      assert.match(String(r.reason), why, name);
      assert.match(warnings.join("\n"), why, name);
    }
    const real = makeEngine(resolveConfig({ daemonUrl: down }), { warn() {} });
    const r = await real.compact({ sessionId: "s-1" });
    assert.deepEqual([r.ok, r.compacted], [false, false], "the real loader: no openclaw package next to the tests");
    assert.equal(loadOpenClawSdk(), loadOpenClawSdk(), "imported once: the same promise for every caller");
    await assert.rejects(loadOpenClawSdk(), /cannot import openclaw\/plugin-sdk\/core \(from the plugin: .*; from the running OpenClaw: /);
    for (const p of [undefined, null, 5, {}]) {
      const { engine } = engineAt(d.url);
      const q = await engine.compact(/** @type {any} */ (p));
      assert.deepEqual([q.ok, q.compacted], [false, false], String(p));
    }
  } finally {
    await d.close();
  }
});

test("compact honours the host's abort signal and its own timeout", async () => {
  const d = await startDaemon(() => {});
  try {
    let loads = 0;
    const sdk = async () => (loads++, { delegateCompactionToRuntime: async () => ({ ok: true, compacted: true }) });
    const { engine } = engineAt(d.url, { compactTimeoutMs: 1000 }, sdk);
    const pre = new AbortController();
    pre.abort();
    assert.deepEqual(await engine.compact({ sessionId: "s-1", abortSignal: pre.signal }), { ok: false, compacted: false, reason: "compaction aborted" });
    assert.equal(d.seen.length, 0, "an aborted compaction asks nobody");
    const mid = new AbortController();
    const started = Date.now();
    setTimeout(() => mid.abort(), 50);
    assert.deepEqual(await engine.compact({ sessionId: "s-1", abortSignal: mid.signal }), { ok: false, compacted: false, reason: "compaction aborted" });
    assert.ok(Date.now() - started < 950, "the abort ends the wait before the timeout");
    assert.equal(loads, 0, "no fallback after an abort");
    const t0 = Date.now();
    const timedOut = await engine.compact({ sessionId: "s-1" });
    assert.ok(Date.now() - t0 >= 900, "waits compactTimeoutMs");
    assert.deepEqual(timedOut, { ok: true, compacted: true }, "a daemon that does not answer in time falls back");
  } finally {
    await d.close();
  }
});
