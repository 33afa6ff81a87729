// @ts-check
// The tools: one POST per call, bound to the run's identity; every failure is a normal tool result.
import { test } from "node:test";
import assert from "node:assert/strict";
import plugin from "../index.js";
import { answer, deadUrl, fakeApi, startDaemon } from "./helpers.js";

const CTX = { agentId: "main", sessionId: "sess-1", sessionKey: "agent:main:main" };

/** Registers the plugin on a fake api and returns the named tool bound to ctx. @param {Record<string, unknown>} config @param {string} name @param {object} [ctx] */
function tool(config, name, ctx = CTX) {
  const { api, tools } = fakeApi(config);
  plugin.register(/** @type {any} */ (api));
  const reg = tools.find((t) => t.opts.name === name);
  assert.ok(reg, name);
  return reg.tool(ctx);
}

test("success: one POST with the run's identity, answer passed through", async () => {
  const content = [{ type: "text", text: "restored text\nexactly" }, { type: "text", text: "more" }];
  const d = await startDaemon((s, res) => answer(res, 200, { ok: true, content, details: { key: "tc-call_1", bytes: 25, sha256: "ab" } }));
  process.env.BS_TOOL_TEST_KEY = "k1";
  try {
    const t = tool({ daemonUrl: d.url, apiKeyEnv: "BS_TOOL_TEST_KEY" }, "purge_control");
    const out = await t.execute("call_9", { action: "restore", value_id: "tc-call_1", bogus: 1 });
    assert.deepEqual(out, { content, details: { key: "tc-call_1", bytes: 25, sha256: "ab" } });
    assert.equal(d.seen.length, 1);
    assert.equal(d.seen[0].path, "/api/plugin/v1/tool");
    assert.equal(d.seen[0].headers["x-api-key"], "k1");
    assert.deepEqual(d.seen[0].json, { agent_id: "main", session_id: "sess-1", session_key: "agent:main:main", tool_call_id: "call_9", tool: "purge_control", params: { action: "restore", value_id: "tc-call_1" } });
    await t.execute("call_9b", { action: "restore", value_id: "tc-call_1", offset: 15000, max_chars: 20000 });
    assert.deepEqual(d.seen[1].json.params, { action: "restore", value_id: "tc-call_1", offset: 15000, max_chars: 20000 });
    // key, the old name of value_id (older placeholders say it), goes to the daemon as given
    await t.execute("call_9c", { action: "restore", key: "tc-call_1" });
    assert.deepEqual(d.seen[2].json.params, { action: "restore", key: "tc-call_1" });
    d.seen.splice(1, 2);
    const set = tool({ daemonUrl: d.url }, "purge_control", {});
    await set.execute("call_10", { action: "set_extractable", value_id: "e1", value: false });
    assert.deepEqual(d.seen[1].json, { tool_call_id: "call_10", tool: "purge_control", params: { action: "set_extractable", value_id: "e1", value: "false" } });
    const grep = tool({ daemonUrl: d.url }, "recall_grep");
    await grep.execute("call_11", { pattern: "refused", regex: true, ignore_case: false, max: 5, in: "extracted", extra: "x" });
    assert.deepEqual(d.seen[2].json.params, { pattern: "refused", regex: true, ignore_case: false, max: 5, in: "extracted" });
    const expand = tool({ daemonUrl: d.url }, "recall_expand");
    await expand.execute("call_12", { id: "abc", resolve: true, max: null });
    assert.deepEqual(d.seen[3].json.params, { id: "abc", resolve: true });
    const describe = tool({ daemonUrl: d.url }, "recall_describe");
    await describe.execute("call_13", { id: "abc" });
    assert.deepEqual(d.seen[4].json.params, { id: "abc" });
  } finally {
    delete process.env.BS_TOOL_TEST_KEY;
    await d.close();
  }
});

test("purge_control teaches paging: offset and max_chars in the schema, Next: in the description", () => {
  const t = tool({}, "purge_control");
  const props = /** @type {any} */ (t.parameters).properties;
  assert.deepEqual(props.offset, { ...props.offset, type: "integer", minimum: 0 });
  assert.deepEqual(props.max_chars, { ...props.max_chars, type: "integer", minimum: 1000, maximum: 100000 });
  assert.match(t.description, /Next:, call again with the offset/);
});

test("ok:false from the daemon becomes a failed tool result with its wording", async () => {
  const msg = 'entry "x" has no extracted values in session main/abc: expected an id from [[extracted-<id>]]';
  const d = await startDaemon((s, res) => answer(res, 200, { ok: false, error: msg, content: [{ type: "text", text: msg }] }));
  try {
    const out = await tool({ daemonUrl: d.url }, "purge_control").execute("c", { action: "restore", value_id: "x" });
    assert.deepEqual(out, { content: [{ type: "text", text: msg }], details: { ok: false, error: msg } });
    const d2 = await startDaemon((s, res) => answer(res, 200, { ok: false, error: "nope" }));
    try {
      const out2 = await tool({ daemonUrl: d2.url }, "recall_describe").execute("c", { id: "x" });
      assert.deepEqual(out2, { content: [{ type: "text", text: "BrainSurgeon: nope" }], details: { ok: false, error: "nope" } });
    } finally {
      await d2.close();
    }
  } finally {
    await d.close();
  }
});

/** @type {[string, import("./helpers.js").Handler, RegExp][]} */
const failures = [
  ["HTTP 400", (s, res) => answer(res, 400, { error: "unknown tool" }), /HTTP 400: unknown tool/],
  ["HTTP 500 with no JSON", (s, res) => answer(res, 500, "oops"), /HTTP 500: oops/],
  ["garbage body", (s, res) => answer(res, 200, "{not json"), /not JSON/],
  ["no content", (s, res) => answer(res, 200, { ok: true }), /no ok flag and content blocks/],
  ["timeout", () => {}, /did not answer within 150 ms/],
];
for (const [name, h, why] of failures) {
  test(`failure as a tool result: ${name}`, async () => {
    const d = await startDaemon(h);
    try {
      const out = /** @type {any} */ (await tool({ daemonUrl: d.url, toolTimeoutMs: 150 }, "purge_control").execute("c", { action: "get_context" }));
      assert.equal(out.details.ok, false);
      assert.match(out.details.error, why);
      assert.equal(out.content.length, 1);
      assert.match(out.content[0].text, /^BrainSurgeon: /);
      assert.match(out.content[0].text, why);
    } finally {
      await d.close();
    }
  });
}

test("failure as a tool result: daemon down, bad daemonUrl, aborted, missing key file", async () => {
  const url = await deadUrl();
  const down = /** @type {any} */ (await tool({ daemonUrl: url }, "recall_grep").execute("c", { pattern: "x" }));
  assert.match(down.content[0].text, /^BrainSurgeon: cannot reach the daemon at http:\/\/127\.0\.0\.1:\d+: .*\(is `brainsurgeon serve` running\?\)/);
  assert.equal(down.details.ok, false);
  const remote = /** @type {any} */ (await tool({ daemonUrl: "http://example.com:8000" }, "recall_grep").execute("c", { pattern: "x" }));
  assert.match(remote.details.error, /not loopback http/);
  const ac = new AbortController();
  ac.abort();
  const aborted = /** @type {any} */ (await tool({ daemonUrl: url }, "recall_grep").execute("c", { pattern: "x" }, ac.signal));
  assert.match(aborted.details.error, /aborted/);
  const nokey = /** @type {any} */ (await tool({ daemonUrl: url, apiKeyFile: "/nonexistent/key" }, "recall_grep").execute("c", { pattern: "x" }));
  assert.match(nokey.details.error, /cannot read apiKeyFile/);
  const weird = /** @type {any} */ (await tool({ daemonUrl: url }, "purge_control").execute("c", undefined));
  assert.equal(weird.details.ok, false);
});

test("large details shrink to {ok, error}: the host keeps details in the transcript", async () => {
  const content = [{ type: "text", text: "x" }];
  const huge = { key: "r0", result: { content: { "/message/content/0/text": "y".repeat(20000) } } };
  const d = await startDaemon((s, res) =>
    answer(res, 200, s.json.tool === "recall_grep" ? { ok: false, error: "e".repeat(9000), content } : { ok: true, content, details: huge }),
  );
  try {
    const out = await tool({ daemonUrl: d.url }, "purge_control").execute("call_1", { action: "restore", value_id: "r0" });
    assert.deepEqual(out, { content, details: { ok: true } });
    const bad = await tool({ daemonUrl: d.url }, "recall_grep").execute("call_2", { pattern: "p" });
    assert.equal(bad.details.ok, false);
    assert.equal(bad.details.error.length, 2000);
    assert.equal(d.seen[0].headers["content-type"], "application/json");
    assert.equal(d.seen[0].headers.origin, undefined);
  } finally {
    await d.close();
  }
});
