// @ts-check
// The manifest, package.json and what register() does agree.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, readdirSync } from "node:fs";
import plugin, { DEFAULTS, MOVED_KEYS, OLD_ARGUMENT_NAMES, TOOL_NAMES, resolveConfig, checkDaemonUrl } from "../index.js";
import { fakeApi } from "./helpers.js";

const dir = new URL("../", import.meta.url);
const manifest = JSON.parse(readFileSync(new URL("openclaw.plugin.json", dir), "utf8"));
const pkg = JSON.parse(readFileSync(new URL("package.json", dir), "utf8"));

test("manifest and entry agree on id, tools and middleware runtimes", () => {
  assert.equal(manifest.id, "brainsurgeon");
  assert.equal(plugin.id, manifest.id);
  assert.equal(typeof plugin.register, "function");
  assert.equal(manifest.activation.onStartup, true);
  // OpenClaw 2026.7.35 and 2026.9.6 accept a string (or an array) here; only with it does `plugins inspect` list the
  // engine as a capability and a selected engine count as trusted. `brainsurgeon openclaw install` undoes the slot
  // selection that `plugins install` then makes, unless --engine asks for it.
  assert.equal(manifest.kind, "context-engine");
  const { api, tools, middlewares, hooks } = fakeApi({});
  plugin.register(/** @type {any} */ (api));
  assert.deepEqual(hooks.map((h) => h.name), ["before_tool_call"]);
  const off = fakeApi({ offload: false });
  plugin.register(/** @type {any} */ (off.api));
  assert.deepEqual(off.hooks, [], "no hook when offload is off");
  const names = tools.map((t) => t.opts.name);
  assert.deepEqual(names, manifest.contracts.tools);
  assert.deepEqual(names, TOOL_NAMES);
  for (const { tool, opts } of tools) {
    assert.equal(typeof tool, "function", `${opts.name} is registered as a factory`);
    const t = tool({ agentId: "main", sessionId: "s1", sessionKey: "agent:main:main" });
    assert.equal(t.name, opts.name);
    assert.equal(t.catalogMode, "direct-only");
    assert.equal(t.parameters.type, "object");
    assert.ok(t.description.length > 40);
    assert.ok(manifest.toolMetadata[opts.name], `toolMetadata has ${opts.name}`);
  }
  assert.equal(middlewares.length, 1);
  assert.deepEqual(middlewares[0].opts, { runtimes: manifest.contracts.agentToolResultMiddleware });
  assert.deepEqual(manifest.contracts.agentToolResultMiddleware, ["openclaw", "codex"]);
});

test("purge_control's description teaches what a placeholder means", () => {
  const { api, tools } = fakeApi({});
  plugin.register(/** @type {any} */ (api));
  const t = tools[0].tool({});
  assert.match(t.description, /\[\[extracted-<key>\]\]/);
  assert.match(t.description, /"action":"restore","value_id":"<key>"/);
});

test("tool arguments: none named like a secret (OpenClaw masks those), old names accepted", () => {
  const { api, tools } = fakeApi({});
  plugin.register(/** @type {any} */ (api));
  for (const { tool, opts } of tools) {
    const p = tool({}).parameters;
    const old = OLD_ARGUMENT_NAMES[opts.name] ?? [];
    for (const name of old) assert.equal(p.properties[name], undefined, `${opts.name}: old name ${name} is not in the spec`);
    // A tool with old names must let them through the host's schema check.
    assert.equal(p.additionalProperties, old.length > 0 ? undefined : false, `${opts.name} additionalProperties`);
  }
  assert.deepEqual(OLD_ARGUMENT_NAMES, { purge_control: ["key"] });
  assert.equal(tools[0].tool({}).parameters.properties.value_id.type, "string");
});

test("config schema: closed, and its defaults are the code's", () => {
  const s = manifest.configSchema;
  assert.equal(s.type, "object");
  assert.equal(s.additionalProperties, false);
  assert.deepEqual(Object.keys(s.properties).sort(), [...Object.keys(DEFAULTS), ...Object.keys(MOVED_KEYS), "apiKeyFile"].sort());
  for (const [k, v] of Object.entries(MOVED_KEYS)) {
    // Still in the closed schema, so that an older config loads; described as the daemon's setting now.
    assert.equal(s.properties[k].type, "integer", k);
    assert.equal(s.properties[k].default, undefined, k);
    assert.match(s.properties[k].description, new RegExp(`^No longer read: .* daemon's setting ${v} `), k);
  }
  for (const [k, v] of Object.entries(DEFAULTS)) {
    assert.deepEqual(s.properties[k].default, v, `default of ${k}`);
    assert.match(s.properties[k].description, new RegExp(`Default ${String(v).replace(/[.]/g, "\\.")}\\.`), `description of ${k} states its default`);
  }
  assert.equal(s.properties.timeoutMs.minimum, 100);
  assert.equal(s.properties.toolTimeoutMs.minimum, 100);
  assert.equal(s.properties.assembleTimeoutMs.minimum, 100);
  assert.equal(s.properties.compactTimeoutMs.minimum, 1000);
  assert.equal(resolveConfig({ assembleTimeoutMs: 99, compactTimeoutMs: 999 }).assembleTimeoutMs, DEFAULTS.assembleTimeoutMs);
  assert.equal(resolveConfig({ compactTimeoutMs: 999 }).compactTimeoutMs, DEFAULTS.compactTimeoutMs);
  assert.equal(resolveConfig({ assembleTimeoutMs: 100, compactTimeoutMs: 1000 }).compactTimeoutMs, 1000);
  const cfg = resolveConfig(undefined);
  assert.deepEqual({ ...cfg }, { ...DEFAULTS, apiKeyFile: undefined, urlProblem: undefined, movedKeys: [] });
});

test("package.json is the npm package OpenClaw and pi install (type module, extensions, files, compat)", () => {
  assert.equal(pkg.name, "brainsurgeon-openclaw");
  assert.equal(pkg.type, "module");
  assert.deepEqual(pkg.openclaw.extensions, ["./index.js"]);
  assert.equal(pkg.openclaw.compat.pluginApi, ">=2026.7.0");
  // pi's loader takes a directory's package.json "pi.extensions" before its index.js, which is OpenClaw's entry.
  assert.deepEqual(pkg.pi.extensions, ["./pi.js"]);
  assert.deepEqual(pkg.files, ["index.js", "pi.js", "config.js", "client.js", "tools.js", "offload.js", "wire.js", "engine.js", "openclaw.plugin.json", "README.md"]);
  assert.equal(pkg.dependencies, undefined, "no runtime dependencies");
  const embed = readFileSync(new URL("embed.go", dir), "utf8");
  const line = embed.split("\n").find((l) => l.startsWith("//go:embed "));
  assert.deepEqual(line?.slice("//go:embed ".length).split(" ").sort(), ["package.json", ...pkg.files].sort(), "embed.go embeds what npm pack ships");
});

test("package.json's files hold every module the entry points import, and every module at the root", () => {
  /** @type {Set<string>} */
  const reached = new Set();
  /** @param {string} name */
  const visit = (name) => {
    if (reached.has(name)) return;
    reached.add(name);
    const src = readFileSync(new URL(name, dir), "utf8");
    for (const m of src.matchAll(/^(?:import|export)\b[^;]*?\bfrom "([^"]+)";/gms)) {
      const spec = m[1];
      if (spec.startsWith("node:")) continue;
      assert.match(spec, /^\.\/[a-z]+\.js$/, `${name} imports ${spec}: expected node: built-ins and ./<module>.js only`);
      visit(spec.slice(2));
    }
  };
  visit("index.js");
  visit("pi.js");
  const shipped = pkg.files.filter((/** @type {string} */ f) => f.endsWith(".js"));
  assert.deepEqual([...reached].sort(), [...shipped].sort(), "the modules index.js and pi.js reach are the .js files npm pack ships");
  const atRoot = readdirSync(dir).filter((f) => f.endsWith(".js"));
  assert.deepEqual(atRoot.sort(), [...shipped].sort(), "every .js file beside index.js is shipped");
});

test("daemonUrl must be loopback http", () => {
  for (const ok of ["http://127.0.0.1:8000", "http://localhost:9", "http://[::1]:8000/", "http://127.0.0.1"]) {
    assert.equal(checkDaemonUrl(ok), undefined, ok);
  }
  for (const bad of ["https://127.0.0.1:8000", "http://10.0.0.1:8000", "http://example.com", "http://u:p@127.0.0.1:1", "127.0.0.1:8000", ""]) {
    assert.match(String(checkDaemonUrl(bad)), /daemonUrl/, bad);
  }
  const cfg = resolveConfig({ daemonUrl: "http://example.com:8000", offload: false });
  assert.match(String(cfg.urlProblem), /not loopback http/);
  assert.equal(cfg.offload, false);
});

test("register is idempotent and never throws", () => {
  const a = fakeApi({});
  plugin.register(/** @type {any} */ (a.api));
  plugin.register(/** @type {any} */ (a.api));
  assert.equal(a.tools.length, 4);
  assert.equal(a.middlewares.length, 1);
  for (const mode of ["discovery", "tool-discovery", "full"]) {
    const b = fakeApi({ daemonUrl: "http://127.0.0.1:1" }, mode);
    plugin.register(/** @type {any} */ (b.api));
    assert.deepEqual(b.tools.map((t) => t.opts.name), TOOL_NAMES, mode);
    assert.equal(b.middlewares.length, 1, mode);
    assert.deepEqual(b.warnings, [], mode);
  }
  const bad = fakeApi({ daemonUrl: "http://example.com" });
  plugin.register(/** @type {any} */ (bad.api));
  assert.match(bad.warnings.join("\n"), /not loopback http/);
  // The keys of earlier versions that are daemon settings now: one warning naming them, in full mode only.
  for (const mode of ["discovery", "full"]) {
    const moved = fakeApi({ extractAboveChars: 50000, previewChars: 10 }, mode);
    plugin.register(/** @type {any} */ (moved.api));
    plugin.register(/** @type {any} */ (moved.api));
    if (mode !== "full") {
      assert.deepEqual(moved.warnings, [], mode);
      continue;
    }
    assert.equal(moved.warnings.length, 1);
    assert.match(moved.warnings[0], /^brainsurgeon: the plugin config sets extractAboveChars \(now source_offload_above_chars\) and previewChars \(now source_preview_chars\), which this plugin no longer reads: the offload's threshold and preview are the daemon's settings/);
  }
  assert.deepEqual(resolveConfig({ previewChars: 0 }).movedKeys, ["previewChars"]);
  const broken = fakeApi({});
  broken.api.registerTool = () => {
    throw new Error("host broke");
  };
  assert.doesNotThrow(() => plugin.register(/** @type {any} */ (broken.api)));
  assert.match(broken.warnings.join("\n"), /registration failed: host broke/);
  assert.doesNotThrow(() => plugin.register(/** @type {any} */ (undefined)));
});
