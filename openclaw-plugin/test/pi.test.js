// @ts-check
// The pi extension (pi.js): what it registers, what each hook sends the daemon and gives pi back, and that every hook
// fails open (daemon down, slow, refusing, answering garbage) and tells the user once per session.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { resolveConfig } from "../config.js";
import piExtension, { PI_CONFIG_FILE, hostCompaction, loadPiConfig, makePiExtension, makeTeller, piIdentity } from "../pi.js";
import { TOOL_NAMES, TOOL_SPECS } from "../tools.js";
import { chainFingerprint } from "../wire.js";
import { answer, deadUrl, mixedText, startDaemon } from "./helpers.js";

const HEALTH = "/api/plugin/v1/health";
const SOURCE = "/api/plugin/v1/source";
const TOOL = "/api/plugin/v1/tool";
const ASSEMBLE = "/api/plugin/v1/assemble";
const COMPACTION = "/api/plugin/v1/compaction";
const SETTINGS = { source_offload_above_chars: 1000, source_preview_chars: 400 };
/** pi's session directory for cwd /w/proj, and so the agent the daemon is told. */
const PROJECT = "--w-proj--";

/** A fake pi API that records what the extension registers. */
function fakePi() {
  /** @type {Map<string, any>} */
  const tools = new Map();
  /** @type {Map<string, any[]>} */
  const handlers = new Map();
  const pi = {
    /** @param {any} tool */
    registerTool(tool) {
      tools.set(tool.name, tool);
    },
    /** @param {string} name @param {any} handler */
    on(name, handler) {
      handlers.set(name, [...(handlers.get(name) ?? []), handler]);
    },
  };
  /** Runs the handlers of an event as pi's runner does (the last result that is not undefined wins here).
   * @param {string} name @param {any} event @param {any} ctx */
  const emit = async (name, event, ctx) => {
    let out;
    for (const h of handlers.get(name) ?? []) {
      const r = await h(event, ctx);
      if (r !== undefined) out = r;
    }
    return out;
  };
  return { pi: /** @type {any} */ (pi), tools, handlers, emit };
}

/**
 * A fake handler ctx of session id, with a UI that records notices; file undefined is a session pi does not save.
 * @param {string} [id] @param {{file?: string | null, hasUI?: boolean}} [o]
 */
function fakeCtx(id = "0197a1b2-0000-7000-8000-000000000001", o = {}) {
  /** @type {{message: string, type?: string}[]} */
  const notices = [];
  const file = o.file === null ? undefined : o.file ?? `/home/u/.pi/agent/sessions/${PROJECT}/2026-11-29T07-00-00-000Z_${id}.jsonl`;
  const ctx = {
    hasUI: o.hasUI ?? true,
    cwd: "/w/proj",
    ui: { notify: (/** @type {string} */ message, /** @type {string} */ type) => notices.push({ message, type }) },
    sessionManager: {
      getSessionId: () => id,
      getSessionFile: () => file,
      getSessionDir: () => `/home/u/.pi/agent/sessions/${PROJECT}`,
      getCwd: () => "/w/proj",
    },
    model: { id: "test-model", provider: "test", contextWindow: 128000 },
    signal: undefined,
  };
  return { ctx: /** @type {any} */ (ctx), notices };
}

/**
 * The extension on a fake pi, talking to url; written collects what the teller writes when pi has no UI.
 * @param {string} url @param {Record<string, unknown>} [extra] config members
 */
function load(url, extra = {}) {
  /** @type {string[]} */
  const written = [];
  const cfg = resolveConfig({ daemonUrl: url, apiKeyEnv: "BS_TEST_NO_SUCH_KEY", ...extra });
  const f = fakePi();
  makePiExtension(cfg, { tell: makeTeller((m) => written.push(m)) })(f.pi);
  return { ...f, written };
}

/** The daemon's answer to a source request, as POST /api/plugin/v1/source answers it. @param {import("./helpers.js").Seen} s */
function sourceAnswer(s) {
  const c = JSON.stringify(s.json.content);
  const bytes = Buffer.byteLength(c), sha256 = createHash("sha256").update(c).digest("hex");
  return { key: s.json.key, bytes, sha256, placeholder: `[[extracted-${s.json.key}]]`,
    placeholder_content: [{ type: "text", text: `[[extracted-${s.json.key}]] stored this ${s.json.tool_label} result` }],
    placeholder_details: { brainsurgeon: { key: s.json.key, bytes, sha256 } }, ...SETTINGS };
}

/**
 * A daemon that shows its settings and answers the other routes with route(s, res) (by default: stores sources,
 * answers tools, serves a view that changes nothing).
 * @param {import("./helpers.js").Handler} [route]
 */
function daemon(route) {
  return startDaemon((s, res) => {
    if (s.path === HEALTH) return answer(res, 200, { ok: true, ...SETTINGS });
    if (route) return route(s, res);
    if (s.path === SOURCE) return answer(res, 200, sourceAnswer(s));
    if (s.path === TOOL) return answer(res, 200, { ok: true, content: [{ type: "text", text: "restored" }], details: { ok: true } });
    return answer(res, 200, { ok: true, first_kept: 0, replace: [], summary: null, estimated_tokens: 10 });
  });
}

/** A tool_result event of a bash call whose output is text. @param {string} text @param {string} [id] */
function toolResult(text, id = "call_1") {
  return { type: "tool_result", toolCallId: id, toolName: "bash", input: { command: "cat big" }, content: [{ type: "text", text }], details: { truncation: undefined }, isError: false };
}

/** pi's messages of a session after one tool call (AgentMessage shapes). @returns {any[]} */
function messages() {
  return [
    { role: "user", content: [{ type: "text", text: "read the file" }], timestamp: 1000 },
    { role: "assistant", content: [{ type: "toolCall", id: "call_1", name: "read", arguments: { path: "a" } }], timestamp: 2000, usage: {} },
    { role: "toolResult", toolCallId: "call_1", toolName: "read", content: [{ type: "text", text: "x".repeat(3000) }], isError: false, timestamp: 3000 },
  ];
}

test("registers the four tools from TOOL_SPECS and the hooks it handles, compaction included", async () => {
  const f = load(await deadUrl());
  assert.deepEqual([...f.tools.keys()], TOOL_NAMES);
  for (const name of TOOL_NAMES) {
    const t = f.tools.get(name);
    assert.equal(t.label, TOOL_SPECS[name].label);
    assert.equal(t.description, TOOL_SPECS[name].description);
    assert.equal(t.parameters, TOOL_SPECS[name].parameters, `${name}: the shared spec, not a copy`);
    assert.equal(typeof t.execute, "function");
  }
  assert.deepEqual([...f.handlers.keys()].sort(), ["before_agent_start", "context", "session_before_compact", "session_start", "tool_result"]);
});

test("piIdentity: the session directory's name, the session id and file; nothing when pi gives nothing", () => {
  const { ctx } = fakeCtx("s-1");
  assert.deepEqual(piIdentity(ctx), { agentId: PROJECT, sessionId: "s-1", sessionFile: `/home/u/.pi/agent/sessions/${PROJECT}/2026-11-29T07-00-00-000Z_s-1.jsonl` });
  assert.deepEqual(piIdentity(fakeCtx("s-2", { file: null }).ctx).sessionFile, undefined);
  assert.deepEqual(piIdentity(undefined), { agentId: undefined, sessionId: undefined, sessionFile: undefined });
  const throwing = /** @type {any} */ ({ sessionManager: { getSessionId() { throw new Error("stale ctx"); }, getSessionDir() { throw new Error("stale"); }, getSessionFile() { throw new Error("stale"); } } });
  assert.deepEqual(piIdentity(throwing), { agentId: undefined, sessionId: undefined, sessionFile: undefined });
});

test("a tool call is one POST naming pi's session, and answers the daemon's content", async () => {
  const d = await daemon();
  try {
    const f = load(d.url);
    const { ctx } = fakeCtx("s-tool");
    const r = await f.tools.get("purge_control").execute("call_7", { action: "restore", value_id: "tc-call_1", offset: 0 }, undefined, undefined, ctx);
    assert.deepEqual(r, { content: [{ type: "text", text: "restored" }], details: { ok: true } });
    const body = d.seen.find((s) => s.path === TOOL)?.json;
    assert.deepEqual(body, { agent_id: PROJECT, session_id: "s-tool", tool_call_id: "call_7", tool: "purge_control", params: { action: "restore", value_id: "tc-call_1", offset: 0 } });
  } finally {
    await d.close();
  }
});

test("a tool call with the daemon down answers a result that says so, never throws", async () => {
  const f = load(await deadUrl());
  const r = await f.tools.get("recall_grep").execute("call_8", { pattern: "x" }, undefined, undefined, fakeCtx().ctx);
  assert.equal(r.details.ok, false);
  assert.match(r.content[0].text, /^BrainSurgeon: cannot reach the daemon/);
});

test("tool_result: a result above the daemon's threshold is stored first, then its placeholder replaces it", async () => {
  const d = await daemon();
  try {
    const f = load(d.url);
    const { ctx, notices } = fakeCtx("s-off");
    const text = mixedText(5000);
    const ev = toolResult(text, "call_big");
    const r = await f.emit("tool_result", ev, ctx);
    const src = d.seen.find((s) => s.path === SOURCE);
    assert.ok(src, "the daemon was asked to store the result");
    assert.equal(JSON.stringify(src.json.content), JSON.stringify(ev.content), "the stored content is the result's content");
    assert.ok(src.raw.includes(JSON.stringify(ev.content)), "the bytes sent hold the content's JSON exactly");
    assert.equal(src.json.key, "tc-call_big");
    assert.equal(src.json.agent_id, PROJECT);
    assert.equal(src.json.session_id, "s-off");
    assert.equal(src.json.tool_name, "bash");
    assert.deepEqual(r.content, [{ type: "text", text: "[[extracted-tc-call_big]] stored this bash result" }]);
    assert.equal(r.details.brainsurgeon.key, "tc-call_big");
    assert.equal(r.isError, undefined, "isError is left as it is");
    assert.deepEqual(notices, []);
  } finally {
    await d.close();
  }
});

test("tool_result: small results, error results, our own tools and unsaved sessions pass through without a store", async () => {
  const d = await daemon();
  try {
    const f = load(d.url);
    const { ctx, notices } = fakeCtx("s-small");
    assert.equal(await f.emit("tool_result", toolResult("x".repeat(1000)), ctx), undefined);
    assert.equal(await f.emit("tool_result", { ...toolResult("x".repeat(5000)), isError: true }, ctx), undefined);
    assert.equal(await f.emit("tool_result", { ...toolResult("x".repeat(5000)), toolName: "purge_control" }, ctx), undefined);
    assert.equal(await f.emit("tool_result", toolResult("x".repeat(5000)), fakeCtx("s-eph", { file: null }).ctx), undefined);
    const off = load(d.url, { offload: false });
    assert.equal(await off.emit("tool_result", toolResult("x".repeat(5000)), ctx), undefined);
    assert.equal(d.seen.filter((s) => s.path === SOURCE).length, 0);
    assert.deepEqual(notices, []);
  } finally {
    await d.close();
  }
});

/**
 * The failure modes, each a daemon (or none) and a name: down, slow (answers after the timeout), refusing (HTTP
 * 403), garbage (not JSON), a wrong answer (another sha256).
 * @returns {Promise<{name: string, url: string, close: () => Promise<void>}[]>}
 */
async function failingDaemons() {
  /** @param {string} name @param {import("./helpers.js").Handler} h */
  const mk = async (name, h) => {
    const d = await startDaemon((s, res) => (s.path === HEALTH ? answer(res, 200, { ok: true, ...SETTINGS }) : h(s, res)));
    return { name, url: d.url, close: d.close };
  };
  return [
    { name: "down", url: await deadUrl(), close: async () => {} },
    await mk("slow", (_s, res) => void setTimeout(() => answer(res, 200, {}), 600)),
    await mk("refusing", (_s, res) => answer(res, 403, { error: "wrong key" })),
    await mk("garbage", (_s, res) => answer(res, 200, "<html>not json")),
    await mk("wrong answer", (s, res) => answer(res, 200, s.path === SOURCE ? { ...sourceAnswer(s), sha256: "0".repeat(64) } : { ok: true, first_kept: 99, replace: [], estimated_tokens: 1 })),
  ];
}

/** A session_before_compact event whose branch holds entries e1..e4. @param {string} [instructions] */
function compactEvent(instructions) {
  return { type: "session_before_compact", preparation: { firstKeptEntryId: "e3", tokensBefore: 9000 },
    branchEntries: ["e1", "e2", "e3", "e4"].map((id) => ({ type: "message", id })), customInstructions: instructions, signal: undefined };
}

test("session_before_compact: pi writes the daemon's summary, first kept entry, tokens and details", async () => {
  /** @type {any[]} */
  const seen = [];
  const d = await daemon((s, res) => {
    seen.push(s);
    answer(res, 200, { ok: true, layer: "summarize", summary: "## Goal\n- the plan", first_kept_entry_id: "e2",
      tokens_before: 12000, tokens_after: 3000, details: { readFiles: [], modifiedFiles: [], brainsurgeon: { layer: "summarize" } }, degraded: false, warnings: [] });
  });
  try {
    const f = load(d.url);
    const { ctx, notices } = fakeCtx();
    const r = await f.emit("session_before_compact", compactEvent("keep the plan"), ctx);
    assert.deepEqual(r, { compaction: { summary: "## Goal\n- the plan", firstKeptEntryId: "e2", tokensBefore: 12000,
      details: { readFiles: [], modifiedFiles: [], brainsurgeon: { layer: "summarize" } } } });
    assert.equal(seen.length, 1);
    assert.equal(seen[0].path, COMPACTION);
    assert.deepEqual(seen[0].json, { agent_id: PROJECT, session_id: "0197a1b2-0000-7000-8000-000000000001", custom_instructions: "keep the plan" });
    assert.equal(notices.length, 0);
  } finally {
    await d.close();
  }
});

test("session_before_compact: nothing to compact, a cut off the branch, a failing daemon → pi compacts on its own", async () => {
  const answers = [
    { ok: true, layer: "", summary: "", first_kept_entry_id: "", tokens_before: 100, reason: "nothing to compact: below every threshold", warnings: [] },
    { ok: true, layer: "summarize", summary: "s", first_kept_entry_id: "e9", tokens_before: 100, warnings: [] },
  ];
  let i = 0;
  const d = await daemon((_s, res) => answer(res, 200, answers[i++]));
  try {
    const f = load(d.url);
    const quiet = fakeCtx("s-quiet");
    assert.equal(await f.emit("session_before_compact", compactEvent(), quiet.ctx), undefined);
    assert.equal(quiet.notices.length, 0, "nothing to compact is not a failure");
    const off = fakeCtx("s-off");
    assert.equal(await f.emit("session_before_compact", compactEvent(), off.ctx), undefined);
    assert.match(off.notices[0].message, /first kept entry e9 is not on the branch/);
  } finally {
    await d.close();
  }
  for (const fd of await failingDaemons()) {
    try {
      const f = load(fd.url, { compactTimeoutMs: 1000, timeoutMs: 150 });
      const { ctx, notices } = fakeCtx(`c-${fd.name}`);
      assert.equal(await f.emit("session_before_compact", compactEvent(), ctx), undefined, fd.name);
      if (fd.name !== "slow") assert.equal(notices.length, 1, `${fd.name}: told once`);
    } finally {
      await fd.close();
    }
  }
});

test("hostCompaction reads only the route's answer", () => {
  assert.equal(hostCompaction(null, []), "the daemon's answer is not a compaction");
  assert.equal(hostCompaction({ ok: true, summary: "x", first_kept_entry_id: "e1" }, []), "the daemon's answer has no tokens_before");
  assert.deepEqual(hostCompaction({ ok: true, summary: "x", first_kept_entry_id: "e1", tokens_before: 5, details: null }, undefined),
    { summary: "x", firstKeptEntryId: "e1", tokensBefore: 5 });
});

test("tool_result fails open: down, slow, refusing, garbage → the result passes, and the user is told once per session", async () => {
  for (const d of await failingDaemons()) {
    try {
      const f = load(d.url, { timeoutMs: 150 });
      const { ctx, notices } = fakeCtx(`s-${d.name}`);
      for (const id of ["call_a", "call_b"]) {
        assert.equal(await f.emit("tool_result", toolResult("x".repeat(5000), id), ctx), undefined, `${d.name}: passes through`);
      }
      assert.equal(notices.length, 1, `${d.name}: told once, got ${JSON.stringify(notices)}`);
      assert.equal(notices[0].type, "warning");
      assert.match(notices[0].message, /^BrainSurgeon: .*passed through unchanged.*said once per session\)$/s, d.name);
      // A daemon that cannot be reached is asked for its settings at most every SETTINGS_RETRY_MS (offload.js), and
      // only a failed attempt is told: another session of the same process within that time passes silently.
      if (d.name === "down") continue;
      const other = fakeCtx(`s-${d.name}-2`);
      await f.emit("tool_result", toolResult("x".repeat(5000), "call_c"), other.ctx);
      assert.equal(other.notices.length, 1, `${d.name}: another session is told too`);
    } finally {
      await d.close();
    }
  }
});

test("context: pi's messages go out as skeletons with the session, and the daemon's view comes back", async () => {
  const d = await daemon((s, res) => answer(res, 200, {
    ok: true, first_kept: 0, summary: null, estimated_tokens: 40,
    replace: [{ index: 2, content: [{ type: "text", text: "[[extracted-tc-call_1]]" }] }],
    system_prompt_addition: "BrainSurgeon: earlier parts were summarized several times.",
  }));
  try {
    const f = load(d.url);
    const { ctx, notices } = fakeCtx("s-view");
    const msgs = messages();
    const r = await f.emit("context", { type: "context", messages: msgs }, ctx);
    const body = d.seen.find((s) => s.path === ASSEMBLE)?.json;
    assert.equal(body.agent_id, PROJECT);
    assert.equal(body.session_id, "s-view");
    assert.equal(body.session_file, ctx.sessionManager.getSessionFile());
    assert.equal(body.token_budget, 128000);
    assert.equal(body.model, "test-model");
    assert.equal(body.host_call, undefined, "pi has one kind of call");
    assert.deepEqual(body.messages.map((/** @type {any} */ m) => m.role), ["user", "assistant", "toolResult"]);
    assert.deepEqual(body.messages[1].tool_call_ids, ["call_1"]);
    assert.equal(body.messages[2].tool_call_id, "call_1");
    assert.ok(!d.seen.find((s) => s.path === ASSEMBLE)?.raw.includes("xxxx"), "no content is sent");
    assert.equal(r.messages.length, 3);
    assert.deepEqual(r.messages[2].content, [{ type: "text", text: "[[extracted-tc-call_1]]" }]);
    assert.equal(r.messages[2].toolCallId, "call_1", "the rest of the message is kept");
    assert.equal(msgs[2].content[0].text.length, 3000, "pi's copy is not changed");
    assert.deepEqual(notices, []);
    const start = await f.emit("before_agent_start", { type: "before_agent_start", prompt: "go on", systemPrompt: "You are pi." }, ctx);
    assert.deepEqual(start, { systemPrompt: "You are pi.\n\nBrainSurgeon: earlier parts were summarized several times." });
    assert.equal(await f.emit("before_agent_start", { type: "before_agent_start", prompt: "x", systemPrompt: "You are pi." }, fakeCtx("s-other").ctx), undefined);
  } finally {
    await d.close();
  }
});

test("context: a view that changes nothing returns nothing; the next call, on pi's fresh copy, sends only the new messages", async () => {
  // The fake daemon acknowledges every list it gets by its chain fingerprint, as the engine does.
  const d = await daemon((s, res) => {
    let fp = s.json.base?.fingerprint ?? "";
    for (const m of s.json.messages) fp = chainFingerprint(fp, m);
    const count = (s.json.base?.messages ?? 0) + s.json.messages.length;
    answer(res, 200, { ok: true, first_kept: 0, replace: [], summary: null, estimated_tokens: 5, ack: { messages: count, fingerprint: fp } });
  });
  try {
    const f = load(d.url);
    const { ctx } = fakeCtx("s-same");
    assert.equal(await f.emit("context", { type: "context", messages: messages() }, ctx), undefined);
    const next = [...structuredClone(messages()), { role: "assistant", content: [{ type: "text", text: "done" }], timestamp: 4000 }, { role: "user", content: "thanks", timestamp: 5000 }];
    assert.equal(await f.emit("context", { type: "context", messages: next }, ctx), undefined);
    const bodies = d.seen.filter((s) => s.path === ASSEMBLE).map((s) => s.json);
    assert.equal(bodies.length, 2);
    assert.equal(bodies[0].base, undefined);
    assert.equal(bodies[1].base.messages, 3, "the three messages the daemon holds are not sent again");
    assert.deepEqual(bodies[1].messages.map((/** @type {any} */ m) => m.role), ["assistant", "user"]);
  } finally {
    await d.close();
  }
});

test("context fails open: down, slow, refusing, garbage, a view that cannot apply → pi's messages, told once per session", async () => {
  for (const d of await failingDaemons()) {
    try {
      const f = load(d.url, { assembleTimeoutMs: 150 });
      const { ctx, notices } = fakeCtx(`c-${d.name}`);
      for (let i = 0; i < 2; i++) assert.equal(await f.emit("context", { type: "context", messages: messages() }, ctx), undefined, d.name);
      assert.equal(notices.length, 1, `${d.name}: told once, got ${JSON.stringify(notices)}`);
      assert.match(notices[0].message, /^BrainSurgeon: assemble passed the host's messages through unchanged: /, d.name);
      assert.equal(await f.emit("before_agent_start", { type: "before_agent_start", prompt: "x", systemPrompt: "S" }, ctx), undefined);
    } finally {
      await d.close();
    }
  }
});

test("context: the daemon's pass-through is told once, but not before the session's first assistant message", async () => {
  const d = await daemon((s, res) => answer(res, 200, { ok: true, first_kept: 0, replace: [], summary: null, estimated_tokens: 5, passthrough: "the session is not stored yet" }));
  try {
    const f = load(d.url);
    const { ctx, notices } = fakeCtx("s-pass");
    await f.emit("context", { type: "context", messages: messages().slice(0, 1) }, ctx);
    assert.equal(notices.length, 0, "a new session's first call: pi has not written the transcript yet");
    await f.emit("context", { type: "context", messages: messages() }, ctx);
    await f.emit("context", { type: "context", messages: messages() }, ctx);
    assert.equal(notices.length, 1);
    assert.match(notices[0].message, /the daemon passed pi's messages through unchanged: the session is not stored yet/);
  } finally {
    await d.close();
  }
});

test("context and tool_result leave a session pi does not save alone", async () => {
  const d = await daemon();
  try {
    const f = load(d.url);
    const { ctx } = fakeCtx("s-eph", { file: null });
    assert.equal(await f.emit("context", { type: "context", messages: messages() }, ctx), undefined);
    assert.equal(d.seen.filter((s) => s.path !== HEALTH).length, 0);
  } finally {
    await d.close();
  }
});

test("without a UI (print and JSON mode) the notice goes to standard error, once per session", async () => {
  const f = load(await deadUrl());
  const { ctx, notices } = fakeCtx("s-print", { hasUI: false });
  await f.emit("context", { type: "context", messages: messages() }, ctx);
  await f.emit("tool_result", toolResult("x".repeat(5000)), ctx);
  assert.deepEqual(notices, []);
  assert.equal(f.written.length, 1);
  assert.match(f.written[0], /^BrainSurgeon: /);
});

test("a handler whose ctx throws, or a teller whose UI throws, still returns nothing", async () => {
  const d = await daemon();
  try {
    const f = load(d.url);
    const bad = /** @type {any} */ ({ hasUI: true, ui: { notify() { throw new Error("ui gone"); } }, sessionManager: { getSessionId() { throw new Error("stale"); } } });
    assert.equal(await f.emit("context", { type: "context", messages: messages() }, bad), undefined);
    assert.equal(await f.emit("tool_result", toolResult("x".repeat(5000)), bad), undefined);
    assert.equal(await f.emit("context", undefined, bad), undefined);
    assert.equal(await f.emit("before_agent_start", undefined, bad), undefined);
    const tell = makeTeller(() => { throw new Error("stderr closed"); });
    tell(undefined, "x");
  } finally {
    await d.close();
  }
});

test("loadPiConfig: no file is the defaults; a broken file is named; BRAINSURGEON_PI_CONFIG and BRAINSURGEON_API_KEY_FILE", () => {
  const dir = mkdtempSync(join(tmpdir(), "bs-pi-"));
  const none = loadPiConfig(join(dir, PI_CONFIG_FILE), {});
  assert.equal(none.problem, undefined);
  assert.equal(none.cfg.daemonUrl, "http://127.0.0.1:8000");
  const broken = join(dir, "broken.json");
  writeFileSync(broken, "{daemonUrl:");
  assert.match(String(loadPiConfig(broken, {}).problem), /cannot read the config file .*broken\.json.*defaults are used/);
  const arr = join(dir, "arr.json");
  writeFileSync(arr, "[1]");
  assert.match(String(loadPiConfig(arr, {}).problem), /holds no JSON object/);
  const good = join(dir, "good.json");
  writeFileSync(good, JSON.stringify({ daemonUrl: "http://127.0.0.1:9", offload: false }));
  const viaEnv = loadPiConfig(join(dir, PI_CONFIG_FILE), { BRAINSURGEON_PI_CONFIG: good, BRAINSURGEON_API_KEY_FILE: "/k/api.key" });
  assert.equal(viaEnv.problem, undefined);
  assert.equal(viaEnv.cfg.daemonUrl, "http://127.0.0.1:9");
  assert.equal(viaEnv.cfg.offload, false);
  assert.equal(viaEnv.cfg.apiKeyFile, "/k/api.key");
  writeFileSync(good, JSON.stringify({ apiKeyFile: "/own.key" }));
  assert.equal(loadPiConfig(good, { BRAINSURGEON_API_KEY_FILE: "/k/api.key" }).cfg.apiKeyFile, "/own.key");
});

test("session_start tells a config problem or a daemonUrl that is not loopback, once", async () => {
  const f = fakePi();
  makePiExtension(resolveConfig({}), { problem: "cannot read the config file /x.json: EACCES; the defaults are used" })(f.pi);
  const { ctx, notices } = fakeCtx("s-cfg");
  await f.emit("session_start", { type: "session_start", reason: "startup" }, ctx);
  await f.emit("session_start", { type: "session_start", reason: "reload" }, ctx);
  assert.equal(notices.length, 1);
  assert.match(notices[0].message, /^BrainSurgeon: cannot read the config file/);
  const g = fakePi();
  makePiExtension(resolveConfig({ daemonUrl: "http://example.com:8000" }))(g.pi);
  const other = fakeCtx("s-url");
  await g.emit("session_start", { type: "session_start", reason: "startup" }, other.ctx);
  assert.match(other.notices[0].message, /not loopback http/);
});

test("the default export registers with the config beside pi.js, and never throws", () => {
  const f = fakePi();
  piExtension(f.pi);
  assert.deepEqual([...f.tools.keys()], TOOL_NAMES);
  /** @type {string[]} */
  const errors = [];
  const orig = console.error;
  console.error = (/** @type {string} */ m) => void errors.push(m);
  try {
    piExtension(/** @type {any} */ ({ registerTool() { throw new Error("no tools here"); }, on() {} }));
  } finally {
    console.error = orig;
  }
  assert.match(String(errors[0]), /^BrainSurgeon: the pi extension did not register: no tools here/);
});

test("pi's own loader loads the directory as a pi package (package.json \"pi\") with the tools and hooks", { skip: !process.env.PI_ORACLE_MODULES && "PI_ORACLE_MODULES is not set" }, async () => {
  const loader = join(/** @type {string} */ (process.env.PI_ORACLE_MODULES), "@mariozechner/pi-coding-agent/dist/core/extensions/loader.js");
  const { discoverAndLoadExtensions } = await import(loader);
  const home = mkdtempSync(join(tmpdir(), "bs-pi-agent-"));
  const dir = new URL("../", import.meta.url).pathname;
  const r = await discoverAndLoadExtensions([dir], home, home);
  assert.deepEqual(r.errors, []);
  assert.equal(r.extensions.length, 1);
  assert.match(r.extensions[0].path, /pi\.js$/);
  assert.deepEqual([...r.extensions[0].tools.keys()], TOOL_NAMES);
  assert.deepEqual([...r.extensions[0].handlers.keys()].sort(), ["before_agent_start", "context", "session_before_compact", "session_start", "tool_result"]);
});

test("in pi's own runtime (AgentSession, faux model): tools offered, a big result stored at the source, the view and the warning reach the model", { skip: !process.env.PI_ORACLE_MODULES && "PI_ORACLE_MODULES is not set" }, async () => {
  const mods = /** @type {string} */ (process.env.PI_ORACLE_MODULES);
  const piai = await import(join(mods, "@mariozechner/pi-ai/dist/index.js"));
  const piagent = await import(join(mods, "@mariozechner/pi-coding-agent/dist/index.js"));
  const view = "run it (as the view shows it)";
  const d = await daemon((s, res) => {
    if (s.path === SOURCE) return answer(res, 200, sourceAnswer(s));
    if (s.path === TOOL) return answer(res, 200, { ok: true, content: [{ type: "text", text: `restored ${s.json.params.value_id}` }], details: { ok: true } });
    // The view: the first message (the user's prompt) shown otherwise, and a warning for the system prompt.
    const first = s.json.base ? [] : [{ index: 0, content: [{ type: "text", text: view }] }];
    answer(res, 200, { ok: true, first_kept: 0, summary: null, replace: first, estimated_tokens: 10, system_prompt_addition: "WARNING-FROM-THE-DAEMON" });
  });
  const tmp = mkdtempSync(join(tmpdir(), "bs-pi-rt-"));
  const agentDir = join(tmp, "agent"), cwd = join(tmp, "proj"), sessions = join(agentDir, "sessions", "--proj--");
  const cfgFile = join(tmp, "brainsurgeon.json");
  writeFileSync(cfgFile, JSON.stringify({ daemonUrl: d.url, apiKeyEnv: "BS_TEST_NO_SUCH_KEY" }));
  const { mkdirSync, readFileSync } = await import("node:fs");
  mkdirSync(sessions, { recursive: true });
  mkdirSync(cwd);
  writeFileSync(join(agentDir, "settings.json"), JSON.stringify({ extensions: [new URL("../", import.meta.url).pathname] }));
  const faux = piai.registerFauxProvider({ models: [{ id: "faux-bs", contextWindow: 64000 }] });
  /** @type {any[]} */
  const calls = [];
  /** @param {any} reply */
  const step = (reply) => (/** @type {any} */ ctx) => {
    calls.push({ systemPrompt: ctx.systemPrompt, messages: structuredClone(ctx.messages), tools: ctx.tools.map((/** @type {any} */ t) => ({ name: t.name })) });
    return reply;
  };
  faux.setResponses([
    step(piai.fauxAssistantMessage([piai.fauxToolCall("bash", { command: "yes 0123456789abcdef | head -c 30000" }, { id: "call_big" })], { stopReason: "toolUse" })),
    step(piai.fauxAssistantMessage([piai.fauxToolCall("purge_control", { action: "restore", value_id: "tc-call_big" }, { id: "call_restore" })], { stopReason: "toolUse" })),
    step(piai.fauxAssistantMessage("done")),
    step(piai.fauxAssistantMessage("done again")),
  ]);
  const saved = process.env.BRAINSURGEON_PI_CONFIG;
  process.env.BRAINSURGEON_PI_CONFIG = cfgFile;
  try {
    const authStorage = piagent.AuthStorage.inMemory();
    authStorage.setRuntimeApiKey(faux.getModel().provider, "none");
    const { session, extensionsResult } = await piagent.createAgentSession({
      cwd, agentDir, authStorage, model: faux.getModel(), sessionManager: piagent.SessionManager.create(cwd, sessions),
    });
    assert.deepEqual(extensionsResult.errors, []);
    await session.prompt("run it");
    await session.prompt("and again");
    session.dispose();
    assert.equal(calls.length, 4);
    const names = calls[0].tools.map((/** @type {any} */ t) => t.name);
    for (const n of TOOL_NAMES) assert.ok(names.includes(n), `the model is offered ${n}`);
    // Stored at the source: the daemon got the result's content, the model and the transcript only the placeholder.
    const src = d.seen.find((s) => s.path === SOURCE);
    assert.ok(src, "the big result was sent to the daemon");
    assert.equal(src.json.key, "tc-call_big");
    assert.equal(src.json.agent_id, "--proj--");
    assert.equal(src.json.content[0].text.length, 30000);
    const seenResult = calls[1].messages.find((/** @type {any} */ m) => m.role === "toolResult");
    assert.deepEqual(seenResult.content, [{ type: "text", text: "[[extracted-tc-call_big]] stored this bash result" }]);
    const file = readFileSync(session.sessionManager.getSessionFile(), "utf8");
    assert.ok(file.includes("[[extracted-tc-call_big]] stored this bash result"), "the transcript holds the placeholder");
    assert.ok(!file.includes("0123456789abcdef\\n".repeat(100)), "and not the result");
    // The model's purge_control call reached the daemon with pi's session.
    const tool = d.seen.find((s) => s.path === TOOL)?.json;
    assert.deepEqual([tool.tool, tool.params, tool.agent_id, tool.session_id], ["purge_control", { action: "restore", value_id: "tc-call_big" }, "--proj--", session.sessionManager.getSessionId()]);
    // The view: the model saw the daemon's first message; the transcript keeps pi's own.
    assert.deepEqual(calls[0].messages[0].content, [{ type: "text", text: view }]);
    assert.ok(file.includes('"text":"run it"'));
    // The warning of the latest view is in the next prompt's system prompt, not the first's.
    assert.ok(!calls[0].systemPrompt.includes("WARNING-FROM-THE-DAEMON"));
    assert.ok(calls[3].systemPrompt.includes("WARNING-FROM-THE-DAEMON"));
  } finally {
    if (saved === undefined) delete process.env.BRAINSURGEON_PI_CONFIG;
    else process.env.BRAINSURGEON_PI_CONFIG = saved;
    faux.unregister();
    await d.close();
  }
});
