// @ts-check
// Test helpers: a fake OpenClaw plugin api that records registrations, and a fake BrainSurgeon daemon on loopback.
import { createServer } from "node:http";

/**
 * @typedef {{path: string, headers: import("node:http").IncomingHttpHeaders, raw: string, json: any}} Seen
 * @typedef {(req: Seen, res: import("node:http").ServerResponse) => void} Handler
 */

/**
 * Starts a fake daemon on 127.0.0.1:0. handler answers each request; seen records them.
 * @param {Handler} handler
 */
export async function startDaemon(handler) {
  /** @type {Seen[]} */
  const seen = [];
  const server = createServer((req, res) => {
    /** @type {Buffer[]} */
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const raw = Buffer.concat(chunks).toString("utf8");
      let json;
      try {
        json = JSON.parse(raw);
      } catch {
        json = undefined;
      }
      const s = { path: req.url ?? "", headers: req.headers, raw, json };
      seen.push(s);
      handler(s, res);
    });
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", () => r(undefined)));
  const addr = /** @type {import("node:net").AddressInfo} */ (server.address());
  return {
    url: `http://127.0.0.1:${addr.port}`,
    seen,
    async close() {
      server.closeAllConnections();
      await new Promise((r) => server.close(() => r(undefined)));
    },
  };
}

/** Answers JSON with a status. @param {import("node:http").ServerResponse} res @param {number} status @param {unknown} body */
export function answer(res, status, body) {
  const b = typeof body === "string" ? body : JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json" });
  res.end(b);
}

/** A URL on which nothing listens (a port just freed). */
export async function deadUrl() {
  const server = createServer();
  await new Promise((r) => server.listen(0, "127.0.0.1", () => r(undefined)));
  const port = /** @type {import("node:net").AddressInfo} */ (server.address()).port;
  await new Promise((r) => server.close(() => r(undefined)));
  return `http://127.0.0.1:${port}`;
}

/**
 * A fake plugin api that records what register() does.
 * @param {Record<string, unknown>} [pluginConfig] @param {string} [mode]
 */
export function fakeApi(pluginConfig, mode = "full") {
  /** @type {{tool: any, opts: any}[]} */
  const tools = [];
  /** @type {{handler: any, opts: any}[]} */
  const middlewares = [];
  /** @type {{name: string, handler: any}[]} */
  const hooks = [];
  /** @type {string[]} */
  const warnings = [];
  /** @type {{id: string, factory: any}[]} */
  const engines = [];
  const api = {
    id: "brainsurgeon",
    name: "BrainSurgeon",
    source: "test",
    registrationMode: mode,
    config: {},
    pluginConfig,
    logger: { info() {}, warn: (/** @type {string} */ m) => warnings.push(m), error: (/** @type {string} */ m) => warnings.push(m) },
    /** @param {any} tool @param {any} opts */
    registerTool(tool, opts) {
      tools.push({ tool, opts });
    },
    /** @param {any} handler @param {any} opts */
    registerAgentToolResultMiddleware(handler, opts) {
      middlewares.push({ handler, opts });
    },
    /** @param {string} name @param {any} handler */
    on(name, handler) {
      hooks.push({ name, handler });
    },
    /** @param {string} id @param {any} factory */
    registerContextEngine(id, factory) {
      engines.push({ id, factory });
    },
  };
  return { api, tools, middlewares, hooks, warnings, engines };
}

/** A text of n code points that mixes ASCII and astral characters (surrogate pairs). @param {number} n */
export function mixedText(n) {
  const unit = ["a", "😀", "b", "é", "\n", "𝄞"];
  let s = "";
  for (let i = 0; i < n; i++) s += unit[i % unit.length];
  return s;
}
