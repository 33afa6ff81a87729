// @ts-check
// The plugin's per-call work in assemble at 64k messages (16k turns): skeletons, the chain, the request's body, the
// answer's JSON and the view applied. The daemon is an in-process fake: it resolves the base and acknowledges the
// list as the Go daemon does, and its own time (reading the body, its chain) is left out of the figures; the answer
// is JSON text the plugin parses, as callDaemon does. Run:
//   node --expose-gc openclaw-plugin/bench/assemble-bench.mjs [turns] [--parts]
// --parts adds what the parts of encoding every message again cost on the same messages (the turn-start call's work
// before it compared the copies with the held messages).
import { chainFingerprint, forgetAssembleLists, makeEngine, resolveConfig, skeletonOf } from "../index.js";

const args = process.argv.slice(2);
const TURNS = Number(args.find((a) => /^\d+$/.test(a)) ?? 16384);
const PARTS = args.includes("--parts");
const RUNS = 25;
const COPY_RUNS = 15;

/** The messages of turn k as OpenClaw holds them (results of 2,000 characters, thinking of 700, as the engine's
 * BenchmarkAssemble generator). @param {number} k */
function turn(k) {
  const t = 1764000000000 + 4000 * k;
  return [
    { role: "user", content: [{ type: "text", text: `Please look at file ${k} and tell me what it does.` }], timestamp: t },
    {
      role: "assistant",
      content: [
        { type: "thinking", thinking: "t".repeat(700), thinkingSignature: "sig" + k },
        { type: "toolCall", id: `call_${k}`, name: "read", arguments: { path: `/src/file${k}.go` } },
      ],
      api: "openai-completions", provider: "ollama", model: "x", usage: { input: 100, output: 20 }, stopReason: "toolUse", timestamp: t + 1,
    },
    { role: "toolResult", toolCallId: `call_${k}`, toolName: "read", content: [{ type: "text", text: `${k}:` + "r".repeat(2000) }], isError: false, timestamp: t + 2 },
    { role: "assistant", content: [{ type: "text", text: `File ${k} parses its flags and starts the server.` }], stopReason: "stop", timestamp: t + 3 },
  ];
}

/** The fake daemon: the list held per host call, and the view it answers (a summary of all but the last 4,000
 * messages and 1,000 collapsed tool results in the kept part). */
function fakeDaemon() {
  /** @type {Map<string, {skel: any[], chain: string[]}>} */
  const lists = new Map();
  let ownMs = 0;
  /** @type {typeof import("../index.js").callDaemon} */
  const call = async (_cfg, _path, body) => {
    const t0 = performance.now();
    const q = JSON.parse(body);
    const key = q.host_call ?? "";
    let skel = q.messages;
    /** @type {string[]} */
    let chain;
    const l = lists.get(key);
    if (q.base) {
      if (!l || l.chain[q.base.messages - 1] !== q.base.fingerprint) {
        ownMs += performance.now() - t0;
        return { ok: false, status: 409, error: "need full", json: { need_full: true } };
      }
      // The list held is extended in place (the Go engine's own garbage is not the gateway's).
      skel = l.skel;
      chain = l.chain;
      skel.length = chain.length = q.base.messages;
      for (const s of q.messages) skel.push(s);
    } else chain = [];
    let prev = chain.length ? chain[chain.length - 1] : "";
    for (let i = chain.length; i < skel.length; i++) chain.push((prev = chainFingerprint(prev, skel[i])));
    lists.set(key, { skel, chain });
    const n = skel.length;
    const firstKept = Math.max(0, n - 4000);
    const replace = [];
    for (let i = firstKept; i < n && replace.length < 1000; i++) {
      if (skel[i].role === "toolResult") replace.push({ index: i, content: [{ type: "text", text: `[[extracted-tc-${skel[i].tool_call_id}]] read: 2002 chars` }] });
    }
    const text = JSON.stringify({
      ok: true, summary: { id: "sum-0123456789ab", level: 1, text: "[BrainSurgeon summary]\n" + "s".repeat(4000), tokens_before: 500000, timestamp: 1764000000000 },
      first_kept: firstKept, replace, system_prompt_addition: "", estimated_tokens: 40000, predicted_tokens: 41000, matched: n, unmatched: 0,
      layers: ["collapse", "summarize"], prefix_changed: false, turn: 1, ack: { messages: n, fingerprint: prev },
    });
    ownMs += performance.now() - t0;
    return { ok: true, json: JSON.parse(text) }; // the plugin's parse of the answer, as in callDaemon
  };
  return { call, lists, own: () => ownMs, reset: () => { ownMs = 0; } };
}

/** @param {number[]} xs */
function median(xs) {
  const s = xs.slice().sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}
/** @param {number[]} xs */
function p90(xs) {
  const s = xs.slice().sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(s.length * 0.9))];
}

const d = fakeDaemon();
const cfg = resolveConfig({ daemonUrl: "http://127.0.0.1:8000", apiKeyEnv: "BS_BENCH_NO_SUCH_KEY" });
const log = { warn: (/** @type {string} */ m) => { throw new Error(`unexpected warning: ${m}`); } };
const params = (/** @type {any[]} */ messages) => ({ sessionId: "bench", sessionKey: "agent:main:main", messages, runtimeSettings: { limits: { promptTokenBudget: 200000 } } });

/** Times one assemble call, the fake daemon's own time left out. @param {any[]} messages */
async function timed(messages) {
  if (globalThis.gc) globalThis.gc(); // the garbage of what came before (building the history) is not this call's
  const engine = makeEngine(cfg, log, async () => ({}), d.call);
  d.reset();
  const t0 = performance.now();
  const out = await engine.assemble(params(messages));
  const ms = performance.now() - t0 - d.own();
  if (out.messages === messages) throw new Error("the view was not applied");
  return ms;
}

let history = [];
for (let k = 0; k < TURNS; k++) history.push(...turn(k));
let next = TURNS;

// first: a list the daemon holds nothing of, message objects never seen.
const first = [];
for (let r = 0; r < 3; r++) {
  forgetAssembleLists();
  d.lists.clear();
  history = history.map((m) => ({ ...m }));
  first.push(await timed(history));
}

// next: one new turn of 4 messages after a served call, the old messages the same objects (OpenClaw's model-request
// calls of a run).
const same = [];
for (let r = 0; r < RUNS; r++) {
  history = [...history, ...turn(next++)];
  same.push(await timed(history));
}

// next, new objects: one new turn after a served call, every message a new object with the same content (OpenClaw's
// turn-start call: 2026.9.6 re-reads the transcript, JSON.parse of each line; 2026.7.35 hands structuredClone
// copies; the calls alternate). The held list's objects are compared with the new ones; the chain and the body
// are not computed again.
const copies = [];
for (let r = 0; r < COPY_RUNS; r++) {
  const copy = r % 2 === 0 ? (/** @type {any} */ m) => JSON.parse(JSON.stringify(m)) : (/** @type {any} */ m) => structuredClone(m);
  history = [...history.map(copy), ...turn(next++)];
  copies.push(await timed(history));
}

// The parts of the turn-start call's work when it encoded every message again, timed alone on the same messages
// (median of 5): JSON.stringify of each content, skeletonOf of each message (the stringify included), a WeakMap
// entry per new object (set and get), and === of every content string of a copy against the held one (the least
// work any exact comparison of the contents does).
/** @type {[string, number][]} */
const parts = [];
if (PARTS) {
  const held = history;
  const fresh = held.map((m) => JSON.parse(JSON.stringify(m)));
  /** @type {string[]} */ const xs = [];
  /** @type {string[]} */ const ys = [];
  /** @param {unknown} x @param {unknown} y */
  const strings = (x, y) => {
    if (typeof x === "string") { xs.push(x); ys.push(/** @type {string} */ (y)); return; }
    if (x && typeof x === "object") for (const k of Object.keys(x)) strings(/** @type {any} */ (x)[k], /** @type {any} */ (y)[k]);
  };
  for (let i = 0; i < held.length; i++) strings(fresh[i].content, held[i].content);
  /** @param {string} name @param {() => void} f */
  const part = (name, f) => {
    const ms = [];
    for (let r = 0; r < 5; r++) {
      if (globalThis.gc) globalThis.gc();
      const t0 = performance.now();
      f();
      ms.push(performance.now() - t0);
    }
    parts.push([name, median(ms)]);
  };
  let sink = 0;
  part("JSON.stringify of each content", () => { for (const m of fresh) sink += JSON.stringify(m.content).length; });
  part("skeletonOf of each message", () => { for (const m of fresh) sink += skeletonOf(m).chars; });
  part("a WeakMap entry per new object", () => {
    const w = new WeakMap();
    for (const m of fresh) w.set(m, sink);
    for (const m of fresh) sink += w.get(m);
  });
  part(`=== of the ${xs.length} content strings`, () => { for (let i = 0; i < xs.length; i++) if (xs[i] !== ys[i]) throw new Error("a copy differs"); });
  if (sink < 0) console.log(sink);
}

// The memory the plugin holds for the list (skeletons, chain, sums, references to the host's objects), when the
// heap can be measured (node --expose-gc).
let heldMB = "";
if (globalThis.gc) {
  d.lists.clear();
  globalThis.gc();
  const before = process.memoryUsage().heapUsed;
  forgetAssembleLists();
  globalThis.gc();
  heldMB = ((before - process.memoryUsage().heapUsed) / 1048576).toFixed(1);
}

const n = history.length;
const f = (/** @type {number} */ x) => x.toFixed(2);
console.log(`plugin assemble work, ${n} messages (${TURNS} turns + the ones added), node ${process.version}`);
console.log(`first                 median ${f(median(first))} ms (runs: ${first.map(f).join(", ")})`);
console.log(`next (same objects)   median ${f(median(same))} ms, p90 ${f(p90(same))} ms, max ${f(Math.max(...same))} ms over ${same.length} calls (target ≤ 5 ms)`);
console.log(`next (new objects)    median ${f(median(copies))} ms, p90 ${f(p90(copies))} ms, max ${f(Math.max(...copies))} ms over ${copies.length} calls (OpenClaw's turn-start call)`);
for (const [name, ms] of parts) console.log(`  part: ${name.padEnd(40)} ${f(ms)} ms`);
if (heldMB) console.log(`held for the list     ${heldMB} MB of heap (the message objects themselves are the host's)`);
