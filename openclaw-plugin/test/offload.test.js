// @ts-check
// The tool-result middleware: what it offloads, what it sends, what it puts instead, and that it fails open.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import plugin, { forgetDaemonSettings, isValidSideKey, isValidSourceId, makeMiddleware, rememberIdentity, resolveConfig, settingsOf, skipReason, textAbove } from "../index.js";
import { answer, deadUrl, fakeApi, mixedText, startDaemon } from "./helpers.js";

const CTX = { runtime: "openclaw", agentId: "main", sessionId: "sess-1", sessionKey: "agent:main:main", runId: "run-9" };

/** @param {string} text @param {Record<string, unknown>} [over] */
function event(text, over = {}) {
  return { toolCallId: "call_1", toolName: "exec", args: { command: "cat big" }, isError: false, result: { content: [{ type: "text", text }], details: { status: "completed", exitCode: 0, aggregated: text, cwd: "/w" } }, ...over };
}

const HEALTH = "/api/plugin/v1/health";
const SOURCE = "/api/plugin/v1/source";
/** The settings the fake daemons show: results above 1000 characters are offloaded. */
const SETTINGS = { source_offload_above_chars: 1000, source_preview_chars: 400 };

/**
 * A daemon that shows settings (GET /api/plugin/v1/health) and answers source requests with onSource (by default
 * as POST /api/plugin/v1/source does: stored, with a placeholder).
 * @param {import("./helpers.js").Handler} [onSource] @param {Record<string, unknown>} [settings]
 */
async function daemonWith(onSource = (s, res) => answer(res, 200, sourceAnswer(s)), settings = SETTINGS) {
  return startDaemon((s, res) => (s.path === HEALTH ? answer(res, 200, { ok: true, ...settings }) : onSource(s, res)));
}

/** A daemon that stores every source and answers as POST /api/plugin/v1/source does. */
async function goodDaemon() {
  return daemonWith();
}

/** The source requests a fake daemon got. @param {{seen: import("./helpers.js").Seen[]}} d */
const sources = (d) => d.seen.filter((s) => s.path === SOURCE);

/** The daemon's answer to a source request: the key, the content's size and sha256, the placeholder (its text is
 * the daemon's, checked by agenttools' TestBuildPlaceholder) and the settings.
 * @param {import("./helpers.js").Seen} s */
function sourceAnswer(s) {
  const c = JSON.stringify(s.json.content);
  const bytes = Buffer.byteLength(c), sha256 = createHash("sha256").update(c).digest("hex");
  return { key: s.json.key, bytes, sha256, placeholder: `[[extracted-${s.json.key}]]`,
    placeholder_content: [{ type: "text", text: `[[extracted-${s.json.key}]] stored this ${s.json.tool_label} result` }],
    placeholder_details: { brainsurgeon: { key: s.json.key, bytes, sha256 }, status: "completed" }, ...SETTINGS };
}

/** @param {Record<string, unknown>} config */
function mw(config) {
  /** @type {string[]} */
  const warnings = [];
  const cfg = resolveConfig(config);
  forgetDaemonSettings();
  return { handler: makeMiddleware(cfg, { warn: (m) => warnings.push(m) }), warnings };
}

test("side keys: printable ASCII without space and slashes, at most 200 bytes", () => {
  assert.ok(isValidSideKey("tc-call_1"));
  assert.ok(isValidSideKey("tc-tool_search_code:abc:bs:1"));
  assert.ok(isValidSideKey("tc-" + "x".repeat(197)));
  for (const bad of ["", "tc-" + "x".repeat(198), "tc-a b", "tc-a/b", "tc-a\\b", "tc-é", "tc-\n", ".", ".."]) assert.ok(!isValidSideKey(bad), JSON.stringify(bad));
});

test("textAbove counts code points of the text blocks; settingsOf reads the daemon's settings", () => {
  assert.equal(textAbove([{ type: "text", text: "x".repeat(1000) }], 1000), false);
  assert.equal(textAbove([{ type: "text", text: "x".repeat(600) }, { type: "text", text: "y".repeat(401) }], 1000), true);
  assert.equal(textAbove([{ type: "text", text: "😀".repeat(1000) }], 1000), false, "2000 UTF-16 units, 1000 characters");
  assert.equal(textAbove([{ type: "image", data: "A".repeat(5000) }, /** @type {any} */ ({ type: "text", text: 5 })], 10), false);
  assert.deepEqual({ ...settingsOf({ ok: true, ...SETTINGS }), at: 0 }, { aboveChars: 1000, previewChars: 400, at: 0 });
  for (const bad of [{ ok: true }, { source_offload_above_chars: "1000", source_preview_chars: 400 }, { source_offload_above_chars: 1000 }, null, "x"]) {
    assert.equal(settingsOf(bad), undefined, JSON.stringify(bad));
  }
});

test("skip list", () => {
  const big = "y".repeat(50);
  const cases = [
    ["purge_control", {}], ["recall_grep", {}], ["recall_describe", {}], ["recall_expand", {}],
    ["message", {}], ["sessions_spawn", {}], ["sessions_history", {}], ["tool_search", {}], ["tool_describe", {}],
    ["tool_call", { result: { content: [{ type: "text", text: big }], details: { tool: { id: "openclaw:brainsurgeon:purge_control", name: "purge_control" } } } }],
    ["tool_call", { result: { content: [{ type: "text", text: big }], details: { tool: { id: "openclaw:brainsurgeon:recall_grep" } } } }],
    ["tool_call", { args: { id: "recall_expand" }, result: { content: [{ type: "text", text: big }] } }],
    ["tool_call", { args: { id: "openclaw:core:sessions_send" }, result: { content: [{ type: "text", text: big }] } }],
    ["exec", { isError: true }],
  ];
  for (const [name, over] of cases) {
    assert.notEqual(skipReason(/** @type {any} */ ({ ...event(big), toolName: name, .../** @type {object} */ (over) })), "", `${name} ${JSON.stringify(over)}`);
  }
  assert.equal(skipReason(/** @type {any} */ (event(big))), "");
  assert.equal(skipReason(/** @type {any} */ ({ ...event(big), toolName: "tool_call", args: { id: "openclaw:core:exec" } })), "");
});

test("skipped results are not sent and pass through", async () => {
  const d = await goodDaemon();
  try {
    const { handler, warnings } = mw({ daemonUrl: d.url });
    const big = "z".repeat(1001);
    assert.equal(await handler(/** @type {any} */ ({ ...event(big), toolName: "purge_control" }), CTX), undefined);
    assert.equal(await handler(/** @type {any} */ ({ ...event(big), toolName: "sessions_list" }), CTX), undefined);
    assert.equal(await handler(/** @type {any} */ ({ ...event(big), isError: true }), CTX), undefined);
    assert.equal(await handler(/** @type {any} */ (event("z".repeat(1000))), CTX), undefined, "at the threshold");
    assert.equal(await handler(/** @type {any} */ (event(mixedText(1000) )), CTX), undefined, "1000 code points, more UTF-16 units");
    assert.equal(await handler(/** @type {any} */ ({ ...event(big), result: { content: "not blocks" } }), CTX), undefined);
    const off = mw({ daemonUrl: d.url, offload: false });
    assert.equal(await off.handler(/** @type {any} */ (event(big)), CTX), undefined, "offload false");
    assert.equal(sources(d).length, 0);
    assert.deepEqual(d.seen.map((s) => s.path), [HEALTH], "the settings are learned once");
    assert.deepEqual([...warnings, ...off.warnings], []);
    const bad = await handler(/** @type {any} */ ({ ...event(big), toolCallId: "call 1/2" }), CTX);
    assert.equal(bad, undefined);
    assert.equal(sources(d).length, 0);
    assert.match(warnings.join("\n"), /exec result call 1\/2 passed through unchanged: side key "tc-call 1\/2" is not valid/);
  } finally {
    await d.close();
  }
});

test("offload: the request carries the content as received, and the result is the placeholder", async () => {
  const d = await goodDaemon();
  const dir = mkdtempSync(join(tmpdir(), "bs-plugin-"));
  const keyFile = join(dir, "api.key");
  writeFileSync(keyFile, "  secret-from-file  \nsecond line\n");
  try {
    const { handler, warnings } = mw({ daemonUrl: d.url, apiKeyFile: keyFile });
    const text = mixedText(3000) + "\u0000\"\\</script>";
    const ev = event(text);
    ev.result.content.push(/** @type {any} */ ({ type: "text", text: "second block" }));
    const before = JSON.stringify(ev.result);
    const out = await handler(/** @type {any} */ (ev), CTX);
    assert.equal(JSON.stringify(ev.result), before, "the event is not modified");
    assert.deepEqual(d.seen.map((s) => s.path), [HEALTH, SOURCE]);
    assert.equal(d.seen[0].headers["x-api-key"], "secret-from-file", "the health check carries the key too");
    const s = d.seen[1];
    assert.equal(s.headers["x-api-key"], "secret-from-file");
    assert.equal(s.headers["content-type"], "application/json");
    assert.equal(s.headers.origin, undefined, "no Origin: the daemon refuses one it does not list");
    const contentJSON = JSON.stringify(ev.result.content);
    assert.ok(s.raw.includes(`"content":${contentJSON}`), "content bytes as received");
    assert.ok(s.raw.includes(`"details":${JSON.stringify(ev.result.details)}`), "details bytes as received");
    const { content, details, ...rest } = s.json;
    // No placeholder: the daemon builds it.
    assert.deepEqual(rest, { agent_id: "main", session_id: "sess-1", session_key: "agent:main:main", run_id: "run-9", tool_call_id: "call_1", tool_name: "exec", tool_label: "exec", key: "tc-call_1" });
    assert.deepEqual(content, ev.result.content);
    assert.deepEqual(details, ev.result.details);
    const ans = sourceAnswer(s);
    assert.deepEqual(out, { result: { content: ans.placeholder_content, details: ans.placeholder_details } }, "the daemon's placeholder takes the result's place");
    assert.deepEqual(warnings, []);
  } finally {
    await d.close();
  }
});

test("offload: key from the env var, identity from before_tool_call, absent members left out, tool_call labelled by its inner tool", async () => {
  const d = await goodDaemon();
  process.env.BS_PLUGIN_TEST_KEY = "env-secret";
  try {
    const { handler, warnings } = mw({ daemonUrl: d.url, apiKeyEnv: "BS_PLUGIN_TEST_KEY" });
    // 2026.7: the middleware's ctx names no session; the before_tool_call hook's ctx did
    const { api, hooks } = fakeApi({ daemonUrl: d.url });
    plugin.register(/** @type {any} */ (api));
    hooks[0].handler({ toolName: "tool_call", params: {} }, { toolName: "tool_call", toolCallId: "call_2", sessionKey: "agent:main:main" });
    const ev = { toolCallId: "call_2", toolName: "tool_call", args: { id: "openclaw:core:exec" }, result: { content: [{ type: "text", text: "q".repeat(1500) }] } };
    const out = /** @type {any} */ (await handler(/** @type {any} */ (ev), { runtime: "openclaw" }));
    assert.deepEqual(warnings, []);
    assert.equal(sources(d)[0].headers["x-api-key"], "env-secret");
    assert.deepEqual(Object.keys(sources(d)[0].json), ["session_key", "tool_call_id", "tool_name", "tool_label", "key", "content"]);
    assert.equal(sources(d)[0].json.session_key, "agent:main:main");
    assert.equal(sources(d)[0].json.tool_label, "exec", "a tool_call is labelled by the tool it ran");
    // used once: a second result with that id has no identity and passes through
    assert.equal(await handler(/** @type {any} */ (ev), { runtime: "openclaw" }), undefined);
    assert.equal(sources(d).length, 1);
    assert.match(warnings.join(), /tool_call result call_2 passed through unchanged: the host named no session for this tool call/);
    assert.match(out.result.content[0].text, /stored this exec result/);
    const none = mw({ daemonUrl: d.url, apiKeyEnv: "BS_PLUGIN_TEST_NO_SUCH_VAR" });
    await none.handler(/** @type {any} */ (event("q".repeat(1500))), CTX);
    assert.equal(sources(d)[1].headers["x-api-key"], undefined, "no key, no header");
  } finally {
    delete process.env.BS_PLUGIN_TEST_KEY;
    await d.close();
  }
});

/** @type {[string, import("./helpers.js").Handler, RegExp][]} */
const failures = [
  ["HTTP 500", (s, res) => answer(res, 500, { error: "disk full" }), /HTTP 500: disk full/],
  ["garbage body", (s, res) => answer(res, 200, "<html>nope"), /not JSON/],
  ["wrong key in the answer", (s, res) => answer(res, 200, { key: "tc-other" }), /answered key "tc-other", expected "tc-call_1"/],
  ["404 unknown session", (s, res) => answer(res, 404, { error: "session main/x not found" }), /HTTP 404: session main\/x not found/],
  ["timeout", () => {}, /did not answer within 150 ms/],
  ["409 a reused tool call id", (s, res) => answer(res, 409, { error: "key tc-call_1: session main/s already holds a tool result under this key with other content" }), /HTTP 409: key tc-call_1: .*other content/],
  ["503 busy", (s, res) => answer(res, 503, { error: "2 tool results are being stored already" }), /HTTP 503/],
  ["503 side store unavailable", (s, res) => answer(res, 503, { error: "store tc-call_1 in main/s: side store: put main/s: dial tcp 127.0.0.1:9000: connect: connection refused: side store unavailable" }),
    /HTTP 503: store tc-call_1 in main\/s: .*connection refused: side store unavailable/],
  ["sha256 mismatch", (s, res) => answer(res, 200, { ...sourceAnswer(s), sha256: "0".repeat(64) }), /sha256 0000000000000000…, expected \d+ bytes/],
  ["bytes mismatch", (s, res) => answer(res, 200, { ...sourceAnswer(s), bytes: 1 }), /stored 1 bytes/],
];
for (const [name, handlerFn, why] of failures) {
  test(`fail open: ${name}`, async () => {
    const d = await daemonWith(handlerFn);
    try {
      // Only the timeout case waits briefly: a busy machine must not turn a slow answer into a timeout.
      const { handler, warnings } = mw({ daemonUrl: d.url, timeoutMs: name === "timeout" ? 150 : 1400 });
      const t0 = Date.now();
      assert.equal(await handler(/** @type {any} */ (event("w".repeat(2000))), CTX), undefined);
      assert.ok(Date.now() - t0 < 3000);
      assert.equal(warnings.length, 1);
      assert.match(warnings[0], /^brainsurgeon: exec result call_1 passed through unchanged: /);
      assert.match(warnings[0], why);
    } finally {
      await d.close();
    }
  });
}

test("fail open: daemon down, unreadable key file, bad daemonUrl, a throwing event", async () => {
  const url = await deadUrl();
  const down = mw({ daemonUrl: url });
  assert.equal(await down.handler(/** @type {any} */ (event("w".repeat(2000))), CTX), undefined);
  assert.match(down.warnings.join(), /cannot reach the daemon at http:\/\/127\.0\.0\.1:\d+: .*ECONNREFUSED.*brainsurgeon serve/);
  const nokey = mw({ daemonUrl: url, apiKeyFile: "/nonexistent/bs.key" });
  assert.equal(await nokey.handler(/** @type {any} */ (event("w".repeat(2000))), CTX), undefined);
  assert.match(nokey.warnings.join(), /cannot read apiKeyFile \/nonexistent\/bs\.key/);
  // A daemonUrl that is not loopback: register() warned once; results pass through without a word.
  const remote = mw({ daemonUrl: "http://example.com:8000" });
  assert.equal(await remote.handler(/** @type {any} */ (event("w".repeat(2000))), CTX), undefined);
  assert.deepEqual(remote.warnings, []);
  const evil = { toolCallId: "call_3", toolName: "exec", get result() { throw new Error("boom"); } };
  assert.equal(await down.handler(/** @type {any} */ (evil), CTX), undefined);
  assert.match(down.warnings.at(-1) ?? "", /call_3 passed through unchanged: boom/);
  const throwingLog = makeMiddleware(resolveConfig({ daemonUrl: url }), { warn() { throw new Error("logger broke"); } });
  assert.equal(await throwingLog(/** @type {any} */ (event("w".repeat(2000))), CTX), undefined);
});

test("remembered identities are bounded", () => {
  for (let i = 0; i < 1500; i++) rememberIdentity(`bound-${i}`, { sessionId: `s${i}` });
  rememberIdentity("no-session", { agentId: "main" });
  rememberIdentity(42, { sessionId: "x" });
  const m = /** @type {Map<string, unknown>} */ (/** @type {any} */ (globalThis)[Symbol.for("brainsurgeon.toolCallIdentity")]);
  assert.ok(m.size <= 1000);
  assert.ok(!m.has("bound-0") && m.has("bound-1499") && !m.has("no-session"));
});

test("tool call ids that would break the placeholder pass through", async () => {
  const d = await goodDaemon();
  try {
    const { handler, warnings } = mw({ daemonUrl: d.url });
    for (const id of ["a]]b", "a[b", 'a"b', "a<b", "a&b"]) {
      assert.ok(!isValidSourceId(id), id);
      assert.equal(await handler(/** @type {any} */ ({ ...event("w".repeat(2000)), toolCallId: id }), CTX), undefined);
    }
    assert.ok(isValidSourceId("functions.exec:0"));
    assert.equal(sources(d).length, 0);
    assert.equal(warnings.length, 5);
    assert.match(warnings[0], /a\]\]b passed through unchanged: side key "tc-a\]\]b" is not valid/);
  } finally {
    await d.close();
  }
});

test("identity by run id; a tool call id fresh from two sessions passes through", async () => {
  const d = await goodDaemon();
  try {
    const { handler, warnings } = mw({ daemonUrl: d.url });
    const big = "q".repeat(1500);
    // the same id in two runs of two sessions: the run id picks the right one
    rememberIdentity("call_0", { sessionKey: "agent:main:a", runId: "run-a" });
    rememberIdentity("call_0", { sessionKey: "agent:main:b", runId: "run-b" });
    assert.ok(await handler(/** @type {any} */ ({ ...event(big), toolCallId: "call_0" }), { runtime: "openclaw", runId: "run-a" }));
    assert.equal(sources(d).at(-1)?.json.session_key, "agent:main:a");
    assert.ok(await handler(/** @type {any} */ ({ ...event(big), toolCallId: "call_0" }), { runtime: "openclaw", runId: "run-b" }));
    assert.equal(sources(d).at(-1)?.json.session_key, "agent:main:b");
    // no run id in the middleware's ctx and the id fresh from two sessions: pass through
    rememberIdentity("call_0", { sessionKey: "agent:main:a" });
    rememberIdentity("call_0", { sessionKey: "agent:main:b", runId: "run-c" });
    const n = sources(d).length;
    assert.equal(await handler(/** @type {any} */ ({ ...event(big), toolCallId: "call_0" }), { runtime: "openclaw" }), undefined);
    assert.equal(sources(d).length, n);
    assert.match(warnings.join("\n"), /call_0 passed through unchanged: tool call id "call_0" was used recently in two sessions/);
    // the same id twice in one session is not ambiguous
    rememberIdentity("call_9", { sessionKey: "agent:main:a", runId: "r1" });
    rememberIdentity("call_9", { sessionKey: "agent:main:a", runId: "r2" });
    assert.ok(await handler(/** @type {any} */ ({ ...event(big), toolCallId: "call_9" }), { runtime: "openclaw" }));
  } finally {
    await d.close();
  }
});

test("the key file must be a small regular file", async () => {
  const d = await goodDaemon();
  const dir = mkdtempSync(join(tmpdir(), "bs-plugin-"));
  const big = join(dir, "big.key");
  writeFileSync(big, "k".repeat(5000));
  try {
    for (const [file, why] of [[dir, /is not a regular file/], [big, /holds 5000 bytes, expected at most 4096/]]) {
      const { handler, warnings } = mw({ daemonUrl: d.url, apiKeyFile: /** @type {string} */ (file) });
      assert.equal(await handler(/** @type {any} */ (event("w".repeat(2000))), CTX), undefined);
      assert.match(warnings.join(), /** @type {RegExp} */ (why));
    }
    assert.equal(d.seen.length, 0);
  } finally {
    await d.close();
  }
});

test("the threshold is the daemon's: learned from its health, then from each source answer", async () => {
  let above = 5000;
  const d = await daemonWith((s, res) => answer(res, 200, { ...sourceAnswer(s), source_offload_above_chars: above }), { ...SETTINGS, source_offload_above_chars: 5000 });
  try {
    const { handler, warnings } = mw({ daemonUrl: d.url });
    assert.equal(await handler(/** @type {any} */ (event("w".repeat(5000))), CTX), undefined, "at the daemon's threshold");
    assert.equal(sources(d).length, 0);
    above = 100000;
    assert.ok(await handler(/** @type {any} */ (event("w".repeat(5001))), CTX), "above it");
    assert.equal(await handler(/** @type {any} */ (event("w".repeat(50000))), CTX), undefined, "the source answer raised it");
    // A middleware of another registration uses what the first learned.
    const other = makeMiddleware(resolveConfig({ daemonUrl: d.url }), { warn: (m) => warnings.push(m) });
    assert.equal(await other(/** @type {any} */ (event("w".repeat(50000))), CTX), undefined);
    assert.ok(await other(/** @type {any} */ (event("w".repeat(100001))), CTX));
    assert.deepEqual(d.seen.map((s) => s.path), [HEALTH, SOURCE, SOURCE]);
    assert.deepEqual(warnings, []);
  } finally {
    await d.close();
  }
});

test("mixed versions fail open: a daemon without settings or without the placeholder", async () => {
  // An older daemon: its health shows no settings, so nothing is sent, with one warning.
  const old = await startDaemon((s, res) => answer(res, 200, s.path === HEALTH ? { ok: true, plugin: {} } : sourceAnswer(s)));
  try {
    const { handler, warnings } = mw({ daemonUrl: old.url });
    assert.equal(await handler(/** @type {any} */ (event("w".repeat(50000))), CTX), undefined);
    assert.equal(await handler(/** @type {any} */ (event("w".repeat(50000))), CTX), undefined);
    assert.equal(sources(old).length, 0);
    assert.equal(old.seen.length, 1, "not asked again before SETTINGS_RETRY_MS");
    assert.equal(warnings.length, 1);
    assert.match(warnings[0], /^brainsurgeon: exec result call_1 passed through unchanged: the daemon at http:\S+ did not send its offload settings \(source_offload_above_chars, source_preview_chars\): it is older than this plugin; tool results pass through unchanged/);
    // Another registration (OpenClaw registers the plugin more than once) shares what was learned: no new warning.
    const again = makeMiddleware(resolveConfig({ daemonUrl: old.url }), { warn: (m) => warnings.push(m) });
    assert.equal(await again(/** @type {any} */ (event("w".repeat(50000))), CTX), undefined);
    assert.equal(old.seen.length, 1);
    assert.equal(warnings.length, 1);
  } finally {
    await old.close();
  }
  // A source answer without the placeholder: the result passes through.
  const bare = await daemonWith((s, res) => {
    const { placeholder_content, placeholder_details, ...rest } = sourceAnswer(s);
    answer(res, 200, rest);
  });
  try {
    const { handler, warnings } = mw({ daemonUrl: bare.url });
    assert.equal(await handler(/** @type {any} */ (event("w".repeat(2000))), CTX), undefined);
    assert.equal(warnings.length, 1);
    assert.match(warnings[0], /passed through unchanged: the daemon answered no placeholder_content and placeholder_details/);
  } finally {
    await bare.close();
  }
});
