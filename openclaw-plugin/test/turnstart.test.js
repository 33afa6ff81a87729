// @ts-check
// The turn-start call: OpenClaw hands new message objects with the same content at each run (2026.9.6 re-reads the
// transcript, 2026.7.35 hands structuredClone copies). A copy equal to the held message keeps the held skeleton
// without being encoded; any change of what a skeleton is made of (content, role, timestamp, tool-call id) makes
// the message encoded again; and whatever the plugin sends, the list the daemon stands for is the skeletons of the
// host's messages, exactly.
import { test } from "node:test";
import assert from "node:assert/strict";
import { chainFingerprint, forgetAssembleLists, makeEngine, resolveConfig, skeletonOf } from "../index.js";

/** A daemon in the process that speaks the wire as the Go daemon does (it holds the skeletons per session and host
 * call, resolves a base, acknowledges the whole list) and answers a view that changes nothing. */
function fakeDaemon() {
  /** @type {Map<string, {skel: any[], chain: string[]}>} */
  const lists = new Map();
  /** @type {any[]} the requests, parsed */
  const seen = [];
  /** @type {typeof import("../index.js").callDaemon} */
  const call = async (_cfg, _path, body) => {
    const q = JSON.parse(body);
    seen.push(q);
    const key = `${q.session_id}|${q.host_call ?? ""}`;
    let skel = q.messages;
    if (q.base) {
      const l = lists.get(key);
      const n = q.base.messages;
      if (!l || n < 1 || n > l.skel.length || l.chain[n - 1] !== q.base.fingerprint) {
        return { ok: false, status: 409, error: "need full", json: { need_full: true } };
      }
      skel = [...l.skel.slice(0, n), ...q.messages];
    }
    const chain = [];
    let prev = "";
    for (const s of skel) chain.push((prev = chainFingerprint(prev, s)));
    lists.set(key, { skel, chain });
    return { ok: true, json: { ok: true, summary: null, first_kept: 0, replace: [], estimated_tokens: 1, ack: { messages: skel.length, fingerprint: prev } } };
  };
  return { call, lists, seen };
}

/** An engine on a fake daemon, with its warnings. */
function setup() {
  forgetAssembleLists();
  const d = fakeDaemon();
  /** @type {string[]} */
  const warnings = [];
  const engine = makeEngine(resolveConfig({ daemonUrl: "http://127.0.0.1:1", apiKeyEnv: "BS_TEST_NO_SUCH_KEY" }), { warn: (m) => warnings.push(m) }, async () => ({}), d.call);
  /** The host's turn-start call. @param {any[]} messages */
  const turnStart = (messages) => engine.assemble({ sessionId: "s-turn", sessionKey: "agent:main:main", messages, runtimeSettings: { limits: { promptTokenBudget: 100000, maxOutputTokens: 4096 } } });
  /** The skeletons the daemon now stands for. */
  const held = () => d.lists.get("s-turn|turn_start")?.skel;
  return { d, warnings, turnStart, held };
}

/**
 * Calls f while counting the values JSON.stringify is asked to encode that are in values (objects by identity,
 * strings by value), and returns the counts. @param {unknown[]} values @param {() => Promise<unknown>} f
 */
async function encodings(values, f) {
  const watched = new Set(values);
  /** @type {Map<unknown, number>} */
  const counts = new Map();
  const stringify = JSON.stringify;
  JSON.stringify = /** @type {typeof JSON.stringify} */ ((/** @type {any} */ v, /** @type {any} */ r, /** @type {any} */ s) => {
    if (watched.has(v)) counts.set(v, (counts.get(v) ?? 0) + 1);
    return stringify(v, r, s);
  });
  try {
    await f();
  } finally {
    JSON.stringify = stringify;
  }
  return counts;
}

/** A small deterministic generator (mulberry32). @param {number} seed */
function rng(seed) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return { next, int: (/** @type {number} */ n) => Math.floor(next() * n), pick: (/** @type {any[]} */ xs) => xs[Math.floor(next() * xs.length)] };
}

/** The messages of turn k: every kind of content OpenClaw holds (strings, text, thinking, tool calls with nested
 * arguments, images, tool results of mixed blocks, non-string values, escapes and non-ASCII text, a summary).
 * @param {number} k */
function turn(k) {
  const t = 1764000000000 + 10 * k;
  return [
    { role: "user", content: `question ${k}: "quoted" \\ back\tslash, ünïcödé 😀 \u0001`, timestamp: t },
    {
      role: "assistant",
      content: [
        { type: "thinking", thinking: `thinking ${k} `.repeat(20), thinkingSignature: `sig${k}` },
        { type: "text", text: `I will look at ${k}.` },
        { type: "toolCall", id: `call_${k}_a`, name: "exec", arguments: { command: `ls -la /tmp/${k}`, timeout: 30, flags: [true, false, null, 1.5, -0, 1e21], env: { A: "1", nested: { deep: [[], {}, ""] } } } },
        { type: "toolCall", id: `call_${k}_b`, name: "image", arguments: { path: `/img/${k}.png` } },
      ],
      api: "openai-completions", provider: "ollama", model: "m", usage: { input: 10, output: 2 }, stopReason: "toolUse", timestamp: t + 1,
    },
    { role: "toolResult", toolCallId: `call_${k}_a`, toolName: "exec", content: [{ type: "text", text: `out ${k}\n`.repeat(30) }], isError: false, timestamp: t + 2 },
    {
      role: "toolResult", toolCallId: `call_${k}_b`, toolName: "image",
      content: [{ type: "text", text: "an image" }, { type: "image", data: Buffer.from(`png ${k} `.repeat(40)).toString("base64"), mimeType: "image/png" }],
      details: { bytes: 320 }, isError: false, timestamp: t + 3,
    },
    { role: "assistant", content: [{ type: "text", text: `Answer ${k}.` }], stopReason: "stop", timestamp: new Date(t + 4).toISOString() },
    ...(k % 3 === 2 ? [{ role: "compactionSummary", summary: `summary up to ${k}`, tokensBefore: 1000 * k, timestamp: t + 5 }] : []),
    ...(k % 4 === 3 ? [{ role: "custom", content: [1, "two", { three: 3 }, [4]], timestamp: t + 6 }] : []),
  ];
}

/** @param {number} n */
function history(n) {
  const out = [];
  for (let k = 0; k < n; k++) out.push(...turn(k));
  return out;
}

/** A copy as OpenClaw 2026.9.6 makes it (the transcript's line parsed) or as 2026.7.35 does (structuredClone). */
const copies = {
  parsed: (/** @type {any} */ m) => JSON.parse(JSON.stringify(m)),
  cloned: (/** @type {any} */ m) => structuredClone(m),
};

/** Every content (or summary) value of the messages, for encodings. @param {any[]} msgs */
const contents = (msgs) => msgs.map((m) => m.content ?? m.summary ?? "");

for (const [how, copy] of Object.entries(copies)) {
  test(`new equal objects (${how}) keep the held skeletons without being encoded`, async () => {
    const { d, warnings, turnStart, held } = setup();
    const old = history(6);
    await turnStart(old);
    const again = old.map(copy);
    const fresh = turn(6);
    const all = [...again, ...fresh];
    const counts = await encodings(contents(all), () => turnStart(all));
    const q = d.seen[1];
    assert.equal(q.base?.messages, old.length, "the whole old list is the base");
    assert.deepEqual(q.messages, fresh.map(skeletonOf), "only the new skeletons are sent");
    assert.deepEqual(held(), all.map(skeletonOf));
    // The first message is always encoded (its skeleton depends on more than its content); no other old one is.
    const encoded = again.map((m, i) => [i, counts.get(m.content ?? m.summary) ?? 0]).filter(([i, c]) => c > 0 && i !== 0);
    assert.deepEqual(encoded, [], "old messages encoded again (index, times)");
    for (const m of fresh) assert.equal(counts.get(m.content), 1, "a new message is encoded once");
    // The copies took the held objects' place: the same copies again cost no comparison of content.
    const counts2 = await encodings(contents(all), () => turnStart(all));
    assert.equal([...counts2.values()].reduce((a, b) => a + b, 0), 0);
    assert.deepEqual(d.seen[2].messages, []);
    assert.deepEqual(warnings, []);
  });
}

/**
 * The changes a host could make to a copy of message m (or that a corrupted copy could show), each a function that
 * changes the copy in place and returns what it did. Some keep the skeleton (a character replaced by another,
 * keys reordered), most change it.
 * @param {ReturnType<typeof rng>} r
 */
function changes(r) {
  /** Every [holder, key] of a string in v. @param {any} v @returns {[any, string | number][]} */
  const stringSlots = (v) => {
    /** @type {[any, string | number][]} */
    const out = [];
    /** @param {any} x */
    const walk = (x) => {
      if (!x || typeof x !== "object") return;
      for (const k of Object.keys(x)) (typeof x[k] === "string" ? out.push([x, Array.isArray(x) ? Number(k) : k]) : walk(x[k]));
    };
    walk(v);
    return out;
  };
  /** @param {any} m @returns {any} the object that holds what the skeleton encodes, and its key */
  const root = (m) => (m.content !== undefined ? [m, "content"] : [m, "summary"]);
  return [
    /** @param {any} m */ (m) => {
      const slots = stringSlots(m.content);
      if (slots.length === 0) { const [o, k] = root(m); o[k] = typeof o[k] === "string" ? o[k] + "x" : "x"; return "content became a string"; }
      const [o, k] = r.pick(slots);
      const s = o[k];
      const i = r.int(s.length + 1);
      const c = r.pick(["x", '"', "\\", "\n", "\u0000", "é", "😀", "\ud800"]);
      const how = r.int(3);
      o[k] = how === 0 ? s.slice(0, i) + c + s.slice(i) : how === 1 ? s.slice(0, i) + c + s.slice(i + 1) : s.slice(0, i) + s.slice(i + 1);
      return `string ${JSON.stringify(k)} edited at ${i} with ${JSON.stringify(c)} (${["insert", "replace", "delete"][how]})`;
    },
    /** @param {any} m */ (m) => {
      if (typeof m.content === "string" && r.int(2) === 0) { m.content = m.content.split("").reverse().join(""); return "string content reversed (same length)"; }
      if (typeof m.content === "string") { m.content = m.content.replace(/.$/su, (/** @type {string} */ c) => (c === "a" ? "b" : "a")); return "last character of a string content replaced"; }
      if (m.content === undefined) { m.summary = m.summary.toUpperCase(); return "summary upper-cased"; }
      m.content = [{ type: "text", text: JSON.stringify(m.content) }];
      return "content became one text block";
    },
    /** @param {any} m */ (m) => {
      if (!Array.isArray(m.content) || m.content.length === 0) { m.content = []; return "content emptied"; }
      const i = r.int(m.content.length);
      const how = r.int(3);
      if (how === 0) m.content.splice(i, 1);
      else if (how === 1) m.content.splice(i, 0, { type: "text", text: "" });
      else m.content[i] = typeof m.content[i] === "object" && m.content[i] !== null ? { ...m.content[i], extra: 1 } : { value: m.content[i] };
      return `block ${i} ${["removed", "inserted before", "given a key"][how]}`;
    },
    /** @param {any} m */ (m) => {
      const blocks = Array.isArray(m.content) ? m.content.filter((/** @type {any} */ b) => b && typeof b === "object" && !Array.isArray(b)) : [];
      if (blocks.length === 0) { m.content = { wrapped: m.content ?? null }; return "content wrapped in an object"; }
      const b = r.pick(blocks);
      const keys = Object.keys(b);
      const entries = keys.map((k) => [k, b[k]]).reverse();
      for (const k of keys) delete b[k];
      for (const [k, v] of entries) b[k] = v;
      return "a block's keys reordered (same JSON length)";
    },
    /** @param {any} m */ (m) => {
      const how = r.int(5);
      if (how === 0) m.timestamp = typeof m.timestamp === "number" ? m.timestamp + 1 : "2020-01-01T00:00:00.000Z";
      else if (how === 1) m.role = m.role === "user" ? "assistant" : "user";
      else if (how === 2) m.toolCallId = `${m.toolCallId ?? ""}z`;
      else if (how === 3) m.content = new Date(0);
      else m.content = [NaN, 1];
      return ["timestamp changed", "role changed", "toolCallId changed", "content a Date", "content holds NaN"][how];
    },
    /** @param {any} m */ (m) => {
      const image = Array.isArray(m.content) ? m.content.find((/** @type {any} */ b) => b?.type === "image") : undefined;
      if (!image) { m.content = [{ type: "image", data: "AAAA", mimeType: "image/png" }]; return "content became an image"; }
      const how = r.int(3);
      if (how === 0) image.data = image.data.slice(0, -4) + (image.data.endsWith("AAAA") ? "BBBB" : "AAAA");
      else if (how === 1) image.mimeType = "image/jpeg";
      else m.content = m.content.filter((/** @type {any} */ b) => b !== image).concat([{ type: "text", text: "[image omitted]" }]);
      return ["image data changed (same length)", "image type changed", "image pruned"][how];
    },
  ];
}

test("a change at any position is encoded again, and the daemon's list is the host's skeletons (random)", async () => {
  const runs = Number(process.env.BS_PROPERTY_RUNS ?? 300);
  const r = rng(Number(process.env.BS_PROPERTY_SEED ?? 33));
  const base = history(5);
  const kinds = changes(r);
  for (let run = 0; run < runs; run++) {
    const { d, warnings, turnStart, held } = setup();
    const old = base.map(copies.parsed);
    await turnStart(old);
    const copy = r.int(2) === 0 ? copies.parsed : copies.cloned;
    const next = old.map(copy);
    const at = r.int(next.length);
    const did = r.pick(kinds)(next[at]);
    const all = [...next, ...turn(5 + r.int(3))];
    const what = `run ${run}: message ${at} (${old[at].role}): ${did}`;
    const counts = await encodings([next[at].content ?? next[at].summary], () => turnStart(all));
    const want = all.map(skeletonOf);
    assert.deepEqual(held(), want, `${what}: the daemon's list is the host's skeletons`);
    const same = (/** @type {any} */ a, /** @type {any} */ b) => JSON.stringify(a) === JSON.stringify(b);
    const firstDiff = old.findIndex((m, i) => !same(skeletonOf(m), want[i]));
    assert.equal(d.seen[1].base?.messages ?? 0, firstDiff === -1 ? old.length : firstDiff, `${what}: the base ends at the first changed skeleton`);
    // What a skeleton is made of changed (a no-op change, such as a character replaced by itself, changes nothing).
    const parts = (/** @type {any} */ m) => JSON.stringify([m.role, m.timestamp, m.toolCallId, m.content ?? m.summary ?? ""]);
    const changed = parts(old[at]) !== parts(next[at]);
    const encoded = counts.get(next[at].content ?? next[at].summary) ?? 0;
    if (changed || at === 0) assert.ok(encoded >= 1, `${what}: the changed message was encoded again`);
    else assert.equal(encoded, 0, `${what}: nothing changed, nothing encoded`);
    assert.deepEqual(warnings, [], what);
  }
});

test("a change that keeps the number of characters, at every position, is encoded again", async () => {
  const old = history(4);
  for (let at = 1; at < old.length; at++) {
    const { d, turnStart, held } = setup();
    await turnStart(old.map(copies.parsed));
    const next = old.map(copies.cloned);
    const m = next[at];
    // Same length, so only an encoding (not the length) tells the skeleton: "é" and "\n" encode longer than "a".
    if (m.content === undefined) m.summary = m.summary.slice(0, -1) + "\n";
    else m.content = typeof m.content === "string" ? m.content.slice(0, -1) + "é" : [{ type: "text", text: "\n" }, ...(Array.isArray(m.content) ? m.content : [])];
    await turnStart(next);
    assert.deepEqual(held(), next.map(skeletonOf), `message ${at}`);
    const changed = JSON.stringify(skeletonOf(old[at])) !== JSON.stringify(skeletonOf(next[at]));
    assert.equal(d.seen[1].base?.messages ?? 0, changed ? at : next.length, `message ${at}`);
  }
});

test("the first message is always encoded again (OpenClaw's bootstrap message depends on more than its content)", async () => {
  const { d, turnStart } = setup();
  const old = [{ role: "user", content: "(session bootstrap)", timestamp: 5 }, ...history(2)];
  await turnStart(old);
  const next = old.map(copies.cloned);
  const counts = await encodings([next[0].content, next[1].content], () => turnStart(next));
  assert.equal(counts.get(next[0].content), 1);
  assert.equal(counts.get(next[1].content) ?? 0, 0);
  assert.equal(d.seen[1].base?.messages, next.length);
});

test("values JSON encodes by more than their keys are encoded, never judged equal by structure", async () => {
  class Block {
    constructor() {
      this.type = "text";
    }
    toJSON() {
      return { type: "text", text: "from toJSON" };
    }
  }
  for (const [name, make] of /** @type {[string, () => unknown][]} */ ([
    ["a Date", () => new Date(7)],
    ["a class instance with toJSON", () => [new Block()]],
    ["an own toJSON", () => [{ type: "text", toJSON: () => "x" }]],
    ["a Map", () => [new Map([["a", 1]])]],
    ["a typed array", () => new Uint8Array([1, 2])],
    ["a boxed string", () => [new String("abc")]],
  ])) {
    const { d, turnStart, held } = setup();
    const old = /** @type {any[]} */ (history(2));
    old[3] = { ...old[3], content: make() };
    await turnStart(old);
    const next = old.map((m, i) => (i === 3 ? { ...m, content: make() } : copies.cloned(m)));
    const counts = await encodings([next[3].content], () => turnStart(next));
    assert.equal(counts.get(next[3].content), 1, `${name}: encoded`);
    assert.deepEqual(held(), next.map(skeletonOf), name);
    assert.equal(d.seen[1].base?.messages, next.length, name);
  }
});
