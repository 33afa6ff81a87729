// @ts-check
// The incremental assemble wire: after an answer that acknowledges the host's list of messages, the next call sends
// only the skeletons after it (with a base naming it); a daemon that does not hold the base gets the whole list in
// the same call; a daemon that never acknowledges never gets a base; every failure passes the host's messages
// through, as before.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { bootstrapSkeleton, chainFingerprint, forgetAssembleLists, makeEngine, resolveConfig, skeletonOf } from "../index.js";
import { answer, startDaemon } from "./helpers.js";

/** The chain as the daemon computes it (engine.ChainFingerprint), written apart from the plugin's.
 * @param {string} prev @param {any} s */
function goChain(prev, s) {
  const boot = s.bootstrap === true;
  const parts = [prev + "\n" + s.role, String(boot ? 0 : s.timestamp), s.tool_call_id ?? "", (s.tool_call_ids ?? []).join("\u0001"), String(s.chars)];
  if (boot) parts.push("bootstrap");
  return createHash("sha256").update(parts.join("\u0000"), "utf8").digest("hex").slice(0, 16);
}

test("the chain equals the daemon's (engine/wire_test.go TestChainFingerprintGolden)", () => {
  const a = chainFingerprint("", { role: "user", timestamp: 1700000000000, chars: 12 });
  const b = chainFingerprint(a, { role: "assistant", timestamp: 1700000000001, tool_call_ids: ["call_1", "call_2"], chars: 345 });
  const c = chainFingerprint(b, { role: "toolResult", timestamp: 1700000000002, tool_call_id: "call_1", chars: 0 });
  assert.deepEqual([a, b, c], ["a2706c8ebb9def19", "fd3f0615f0230f88", "0a9916ad4a7aa03e"]);
  const s = { role: "rôle 😀", timestamp: 5, tool_call_ids: ["x"], chars: 7 };
  assert.equal(chainFingerprint(c, s), goChain(c, s), "UTF-8, as Go hashes it");
});

test("the chain of a bootstrap message equals the daemon's (engine/wire_test.go TestChainFingerprintBootstrap)", () => {
  const boot = bootstrapSkeleton({ role: "user", content: "(session bootstrap)", timestamp: 1764000000000 });
  assert.deepEqual(boot, { role: "user", timestamp: 0, chars: 21, bootstrap: true });
  const d = chainFingerprint("", /** @type {any} */ (boot));
  assert.equal(d, "dd3cb152b213aab7");
  assert.equal(chainFingerprint("", { role: "user", timestamp: 1764000000000, chars: 21, bootstrap: true }), d, "its timestamp counts as 0");
  assert.equal(chainFingerprint("", { role: "user", timestamp: 0, chars: 21 }), "0c8790b349b91ccb", "an ordinary message of the same skeleton");
  assert.equal(chainFingerprint(d, { role: "assistant", timestamp: 1700000000001, chars: 5 }), "52c5423e3ac761a1");
  assert.equal(goChain("", boot), d);
});

test("only OpenClaw's bootstrap message is one", () => {
  const t = 1764000000000;
  for (const [what, m, want] of /** @type {[string, unknown, boolean][]} */ ([
    ["the host's bootstrap", { role: "user", content: "(session bootstrap)", timestamp: t }, true],
    ["with spaces around", { role: "user", content: "  (session bootstrap)\n", timestamp: t }, true],
    ["keys in another order", { timestamp: t, content: "(session bootstrap)", role: "user" }, true],
    ["another text", { role: "user", content: "(session bootstrap) hi", timestamp: t }, false],
    ["content blocks", { role: "user", content: [{ type: "text", text: "(session bootstrap)" }], timestamp: t }, false],
    ["an assistant", { role: "assistant", content: "(session bootstrap)", timestamp: t }, false],
    ["a fourth key", { role: "user", content: "(session bootstrap)", timestamp: t, id: "x" }, false],
    ["no timestamp", { role: "user", content: "(session bootstrap)", x: 1 }, false],
    ["not an object", "(session bootstrap)", false],
  ])) {
    assert.equal(bootstrapSkeleton(m) !== undefined, want, what);
  }
});

/** A message of turn k, position j (a user, an assistant calling a tool, its result, an answer). @param {number} k @param {number} j */
function message(k, j) {
  const t = 1764000000000 + 1000 * (4 * k + j);
  switch (j) {
    case 0: return { role: "user", content: `question ${k}`, timestamp: t };
    case 1: return { role: "assistant", content: [{ type: "toolCall", id: `call_${k}`, name: "exec", arguments: { command: "ls" } }], timestamp: t };
    case 2: return { role: "toolResult", toolCallId: `call_${k}`, toolName: "exec", content: [{ type: "text", text: `result ${k} `.repeat(50) }], timestamp: t };
    default: return { role: "assistant", content: [{ type: "text", text: `answer ${k}` }], timestamp: t };
  }
}

/** The messages of turns from to to-1. @param {number} from @param {number} to */
function turns(from, to) {
  const out = [];
  for (let k = from; k < to; k++) for (let j = 0; j < 4; j++) out.push(message(k, j));
  return out;
}

/**
 * A fake daemon that speaks the wire as the Go daemon does: it holds the list of skeletons per session and host
 * call, resolves a base against it (409 need_full when it cannot), and acknowledges the whole list. view(msgs)
 * gives the rest of its answer; ack: false makes it a daemon that predates the wire (it ignores base).
 * @param {{view?: (msgs: any[]) => Record<string, unknown>, ack?: boolean}} [o]
 */
async function wireDaemon(o = {}) {
  /** @type {Map<string, {skel: any[], chain: string[]}>} */
  const lists = new Map();
  /** @type {any[][]} the whole list each answered call stood for */
  const lists_seen = [];
  const d = await startDaemon((req, res) => {
    const q = req.json;
    const key = `${q.session_id}|${q.host_call ?? ""}`;
    let msgs = q.messages;
    if (q.base && o.ack !== false) {
      const l = lists.get(key);
      const n = q.base.messages;
      if (!l || n > l.skel.length || n < 1 || l.chain[n - 1] !== q.base.fingerprint) {
        return answer(res, 409, { error: "base: the engine does not hold the messages the request extends; send them all", need_full: true });
      }
      msgs = [...l.skel.slice(0, n), ...q.messages];
    }
    const chain = [];
    let prev = "";
    for (const s of msgs) chain.push((prev = goChain(prev, s)));
    lists.set(key, { skel: msgs, chain });
    lists_seen.push(msgs);
    const ack = o.ack === false ? {} : { ack: { messages: msgs.length, fingerprint: prev } };
    answer(res, 200, { ok: true, summary: null, first_kept: 0, replace: [], estimated_tokens: 9, ...ack, ...(o.view ? o.view(msgs) : {}) });
  });
  return { ...d, lists, lists_seen };
}

/** An engine at url with its warnings. @param {string} url @param {Record<string, unknown>} [extra] */
function engineAt(url, extra = {}) {
  /** @type {string[]} */
  const warnings = [];
  const engine = makeEngine(resolveConfig({ daemonUrl: url, apiKeyEnv: "BS_TEST_NO_SUCH_KEY", ...extra }), { warn: (m) => warnings.push(m) }, async () => ({}));
  return { engine, warnings };
}

/** The host's model-request call's params. @param {any[]} messages @param {string} [session] */
function modelRequest(messages, session = "s-wire") {
  return { sessionId: session, sessionKey: "agent:main:main", messages, runtimeSettings: { limits: { promptTokenBudget: 100000 } } };
}

/** A message whose content counts how often it is read. @param {any} m */
function counted(m) {
  const c = { reads: 0, m: /** @type {any} */ ({}) };
  const content = m.content;
  Object.assign(c.m, m);
  Object.defineProperty(c.m, "content", { enumerable: true, get: () => (c.reads++, content) });
  return c;
}

test("the second call sends a base and only the new skeletons; old messages cost nothing", async () => {
  forgetAssembleLists();
  const placeholder = [{ type: "text", text: "[[extracted-tc-call_3]]" }];
  // The daemon collapses the tool result of turn 3 (index 14), in the whole list.
  const d = await wireDaemon({ view: (msgs) => (msgs.length > 14 ? { replace: [{ index: 14, content: placeholder }] } : {}) });
  try {
    const { engine, warnings } = engineAt(d.url);
    const first = turns(0, 3);
    const probe = counted(first[6]);
    first[6] = probe.m;
    const out1 = await engine.assemble(modelRequest(first));
    assert.equal(out1.messages, first, "nothing replaced yet");
    assert.equal(probe.reads, 1, "each message is encoded once");
    assert.equal(d.seen[0].json.base, undefined, "the first call sends the whole list");
    assert.deepEqual(d.seen[0].json.messages, first.map(skeletonOf));

    const second = [...first, ...turns(3, 4)];
    probe.reads = 0;
    const out2 = await engine.assemble(modelRequest(second));
    assert.equal(probe.reads, 0, "an old message is not encoded again");
    const q = d.seen[1].json;
    assert.deepEqual(q.base, { messages: 12, fingerprint: first.map(skeletonOf).reduce(goChain, "") });
    assert.deepEqual(q.messages, turns(3, 4).map(skeletonOf), "only the new skeletons");
    assert.equal(q.host_call, "model_request");
    assert.deepEqual(d.lists_seen[1], second.map(skeletonOf), "the daemon stands for the whole list");
    assert.equal(out2.messages.length, 16);
    assert.deepEqual(out2.messages[14], { ...second[14], content: placeholder }, "the view's indexes are of the whole list");
    assert.equal(out2.messages[13], second[13]);

    // The host hands the same objects in a new array: still a base; the same list again: no messages at all.
    await engine.assemble(modelRequest(second.slice()));
    assert.deepEqual(d.seen[2].json.base.messages, 16);
    assert.deepEqual(d.seen[2].json.messages, []);
    assert.deepEqual(warnings, []);
    assert.equal(d.seen.length, 3, "one request a call");
  } finally {
    await d.close();
  }
});

test("kinds of host call and sessions hold their own lists", async () => {
  forgetAssembleLists();
  const d = await wireDaemon();
  try {
    const { engine } = engineAt(d.url);
    const msgs = turns(0, 2);
    const turnStart = { ...modelRequest(msgs), runtimeSettings: { limits: { promptTokenBudget: 100000, maxOutputTokens: 4096 } } };
    await engine.assemble(modelRequest(msgs));
    await engine.assemble(turnStart);
    await engine.assemble(modelRequest(msgs, "s-other"));
    assert.deepEqual(d.seen.map((s) => s.json.base?.messages ?? 0), [0, 0, 0], "a first call of each kind is whole");
    await engine.assemble(turnStart);
    await engine.assemble(modelRequest(msgs));
    assert.deepEqual(d.seen.slice(3).map((s) => [s.json.host_call, s.json.base?.messages]), [["turn_start", 8], ["model_request", 8]]);
    // A new engine (OpenClaw makes one per run) extends the same lists.
    await engineAt(d.url).engine.assemble(modelRequest(msgs));
    assert.equal(d.seen[5].json.base?.messages, 8);
  } finally {
    await d.close();
  }
});

test("a daemon that does not hold the base gets the whole list in the same call", async () => {
  forgetAssembleLists();
  const d = await wireDaemon();
  try {
    const { engine, warnings } = engineAt(d.url);
    const msgs = turns(0, 2);
    await engine.assemble(modelRequest(msgs));
    d.lists.clear(); // the daemon restarted
    const more = [...msgs, ...turns(2, 3)];
    const out = await engine.assemble(modelRequest(more));
    assert.equal(out.messages, more);
    assert.deepEqual(d.seen.map((s) => [s.json.base?.messages ?? 0, s.json.messages.length]), [[0, 8], [8, 4], [0, 12]]);
    await engine.assemble(modelRequest(more));
    assert.deepEqual(d.seen[3].json.base?.messages, 12, "the next call extends the list sent whole");
    // A daemon that asks again after the whole list: the host's messages pass through.
    const stubborn = await startDaemon((_req, res) => answer(res, 409, { error: "send them all", need_full: true }));
    try {
      const s = engineAt(stubborn.url);
      forgetAssembleLists();
      assert.equal((await s.engine.assemble(modelRequest(more))).messages, more);
      assert.equal(stubborn.seen.length, 1, "no base, so no second try");
      assert.match(s.warnings.join("\n"), /HTTP 409: send them all/);
    } finally {
      await stubborn.close();
    }
    assert.deepEqual(warnings, []);
  } finally {
    await d.close();
  }
});

test("a daemon that never acknowledges never gets a base; one that stops is sent the whole list again", async () => {
  forgetAssembleLists();
  const old = await wireDaemon({ ack: false, view: (msgs) => ({ replace: [{ index: msgs.length - 1, content: [{ type: "text", text: "x" }] }] }) });
  try {
    const { engine, warnings } = engineAt(old.url);
    const msgs = turns(0, 2);
    for (let i = 0; i < 3; i++) await engine.assemble(modelRequest([...msgs, ...turns(2, 2 + i)]));
    assert.deepEqual(old.seen.map((s) => s.json.base), [undefined, undefined, undefined]);
    assert.deepEqual(old.seen.map((s) => s.json.messages.length), [8, 12, 16]);
    assert.deepEqual(warnings, []);
  } finally {
    await old.close();
  }
  // A daemon that acknowledged, then is replaced by one that predates the wire on the same address: its view of
  // the messages after the base alone is never applied.
  forgetAssembleLists();
  let acks = true;
  const lastIndex = (/** @type {any[]} */ msgs) => ({ replace: [{ index: msgs.length - 1, content: [{ type: "text", text: `of ${msgs.length}` }] }] });
  const d = await startDaemon((req, res) => {
    const msgs = req.json.messages;
    answer(res, 200, { ok: true, summary: null, first_kept: 0, estimated_tokens: 1, ...lastIndex(msgs),
      ...(acks ? { ack: { messages: msgs.length, fingerprint: msgs.reduce(goChain, "") } } : {}) });
  });
  try {
    const { engine } = engineAt(d.url);
    const msgs = turns(0, 2);
    await engine.assemble(modelRequest(msgs));
    acks = false;
    const more = [...msgs, ...turns(2, 3)];
    const out = await engine.assemble(modelRequest(more));
    assert.deepEqual(d.seen.map((s) => [s.json.base?.messages ?? 0, s.json.messages.length]), [[0, 8], [8, 4], [0, 12]]);
    assert.deepEqual(out.messages[11].content, [{ type: "text", text: "of 12" }], "the view of the whole list");
    await engine.assemble(modelRequest(more));
    assert.equal(d.seen[3].json.base, undefined);
  } finally {
    await d.close();
  }
});

test("a changed old message: the base ends before it; a copy with the same skeleton keeps it", async () => {
  forgetAssembleLists();
  const d = await wireDaemon();
  try {
    const { engine, warnings } = engineAt(d.url);
    const msgs = turns(0, 3);
    await engine.assemble(modelRequest(msgs));
    // OpenClaw copies a message it changes (an image pruned from history): same skeleton, same list.
    const copied = msgs.map((m, i) => (i === 5 ? { ...m } : m));
    await engine.assemble(modelRequest(copied));
    assert.deepEqual([d.seen[1].json.base?.messages, d.seen[1].json.messages.length], [12, 0]);
    // A different content at index 6: the base is the first 6.
    const changed = copied.map((m, i) => (i === 6 ? { ...m, content: [{ type: "text", text: "pruned" }] } : m));
    await engine.assemble(modelRequest(changed));
    assert.deepEqual(d.seen[2].json.base, { messages: 6, fingerprint: d.lists.get("s-wire|model_request")?.chain[5] });
    assert.deepEqual(d.seen[2].json.messages, changed.slice(6).map(skeletonOf));
    // Fewer messages (the host compacted): the base is what is left of the list, or nothing.
    await engine.assemble(modelRequest(changed.slice(0, 4)));
    assert.deepEqual([d.seen[3].json.base?.messages, d.seen[3].json.messages.length], [4, 0]);
    await engine.assemble(modelRequest([{ role: "compactionSummary", summary: "s", timestamp: 1 }, ...changed.slice(4)]));
    assert.equal(d.seen[4].json.base, undefined);
    assert.equal(d.seen[4].json.messages.length, 9);
    // The new messages are what the daemon acknowledged each time.
    for (let i = 0; i < d.seen.length; i++) assert.equal(d.seen[i].raw.includes("need_full"), false);
    assert.equal(d.seen.length, 5, "no call needed the whole list again");
    assert.deepEqual(warnings, []);
  } finally {
    await d.close();
  }
});

test("every failure on a call with a base passes the host's messages through and forgets the list", async () => {
  forgetAssembleLists();
  /** @type {"ok" | "500" | "garbage" | "bad ack" | "slow"} */
  let mode = "ok";
  const inner = await wireDaemon();
  const d = await startDaemon(async (req, res) => {
    if (mode === "500") return answer(res, 500, { error: "engine exploded" });
    if (mode === "garbage") return answer(res, 200, "{not json");
    if (mode === "slow") return;
    const r = await fetch(inner.url + req.path, { method: "POST", headers: { "content-type": "application/json" }, body: req.raw });
    const body = /** @type {any} */ (await r.json());
    if (mode === "bad ack" && body.ack) body.ack.fingerprint = "0000000000000000";
    answer(res, r.status, body);
  });
  try {
    const { engine, warnings } = engineAt(d.url, { assembleTimeoutMs: 2000 });
    const msgs = turns(0, 2);
    for (const [m, why] of /** @type {const} */ ([["500", /HTTP 500: engine exploded/], ["garbage", /not JSON/], ["slow", /did not answer/]])) {
      mode = "ok";
      await engine.assemble(modelRequest(msgs));
      mode = m;
      warnings.length = 0;
      const n = d.seen.length;
      const out = await engine.assemble(modelRequest(msgs));
      assert.equal(out.messages, msgs, m);
      assert.equal(out.estimatedTokens, Math.ceil(msgs.map(skeletonOf).reduce((a, s) => a + s.chars, 0) / 4), `${m}: the estimate counts every message`);
      assert.equal(d.seen[n].json.base?.messages, 8, `${m}: the call had a base`);
      assert.equal(d.seen.length, n + 1, `${m}: no second try`);
      assert.match(warnings.join("\n"), why, m);
      mode = "ok";
      await engine.assemble(modelRequest(msgs));
      assert.equal(d.seen[n + 1].json.base, undefined, `${m}: the list was forgotten`);
    }
    // An ack that does not match the plugin's own chain is not held.
    mode = "bad ack";
    forgetAssembleLists();
    await engine.assemble(modelRequest(msgs));
    mode = "ok";
    const n = d.seen.length;
    await engine.assemble(modelRequest(msgs));
    assert.equal(d.seen[n].json.base, undefined);
  } finally {
    await d.close();
    await inner.close();
  }
});

test("the lists held are bounded", async () => {
  forgetAssembleLists();
  const d = await wireDaemon();
  try {
    const { engine } = engineAt(d.url);
    const msgs = turns(0, 1);
    for (let i = 0; i < 17; i++) await engine.assemble(modelRequest(msgs, `s-${i}`));
    await engine.assemble(modelRequest(msgs, "s-16"));
    await engine.assemble(modelRequest(msgs, "s-0"));
    assert.deepEqual(d.seen.slice(17).map((s) => s.json.base?.messages), [4, undefined], "the oldest of 17 is forgotten");
  } finally {
    await d.close();
  }
});

test("the bootstrap message of each run is the same message on the wire; the daemon sees it marked", async () => {
  forgetAssembleLists();
  const d = await wireDaemon();
  try {
    const { engine, warnings } = engineAt(d.url);
    // A history cut to its newest part starts with an assistant message: OpenClaw puts its bootstrap first, a new
    // object with the time of day at each run, and re-reads the history into new objects.
    /** @param {number} now @param {number} to */
    const run = (now, to) => [{ role: "user", content: "(session bootstrap)", timestamp: now }, ...turns(0, to).slice(1).map((m) => ({ ...m }))];
    const first = run(1764000000000, 3);
    await engine.assemble(modelRequest(first));
    const sent = d.seen[0].json.messages;
    assert.deepEqual(sent[0], { role: "user", timestamp: 0, chars: 21, bootstrap: true });
    assert.deepEqual(sent.slice(1), first.slice(1).map(skeletonOf));

    const second = run(1764000099999, 4);
    await engine.assemble(modelRequest(second));
    const q = d.seen[1].json;
    assert.equal(q.base?.messages, first.length, "the new bootstrap and the copies are the messages acknowledged");
    assert.deepEqual(q.messages, second.slice(first.length).map(skeletonOf));

    // The same text as an ordinary message later in the list is not a bootstrap.
    const third = [...second, { role: "user", content: "(session bootstrap)", timestamp: 1764000200000 }];
    await engine.assemble(modelRequest(third));
    assert.deepEqual(d.seen[2].json.messages, [skeletonOf(third[third.length - 1])]);
    assert.equal(d.seen[2].json.messages[0].bootstrap, undefined);
    assert.deepEqual(warnings, []);
  } finally {
    await d.close();
  }
});
