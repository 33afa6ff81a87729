// gatewaycall.mjs: one long-lived Node process that sends gateway calls with OpenClaw's own gateway client
// (callGateway of the installed release's dist, the function `openclaw agent` and `openclaw gateway call` use), so
// that a test's calls skip the CLI's start-up (2 to 4 s of CPU each on a 2-core machine).
//
// Usage: node gatewaycall.mjs <openclaw package dir>, in the environment of the CLI (state dir, config, gateway port
// and token). Requests come one JSON object a line on stdin:
//   {"id": n, "method": "agent", "params": {...}, "expectFinal": true, "timeoutMs": n,
//    "clientName": "...", "mode": "...", "scopes": ["..."]}
// Answers go one JSON object a line to file descriptor 3 (stdout and stderr stay the client's own log):
//   {"ready": true, "module": "<dist file>"} once, then {"id": n, "ok": true, "result": ...} or
//   {"id": n, "ok": false, "error": "..."} per request, in the order they finish.
import { readdirSync, readFileSync, writeSync } from "node:fs";
import path from "node:path";
import readline from "node:readline";
import { pathToFileURL } from "node:url";

const answer = (o) => writeSync(3, JSON.stringify(o) + "\n");

const dist = path.join(process.argv[2] ?? "", "dist");
let found;
for (const name of readdirSync(dist).sort()) {
  if (!/^call-[^.]+\.m?js$/.test(name)) continue;
  const src = readFileSync(path.join(dist, name), "utf8");
  if (!src.includes("async function callGateway(opts)")) continue;
  // the module's export clause names it: `callGateway as <alias>`
  const m = src.match(/\bcallGateway as ([A-Za-z_$][\w$]*)/);
  if (m) {
    found = { name, alias: m[1] };
    break;
  }
}
if (!found) {
  answer({ ready: false, error: `no ${dist}/call-*.js defines and exports callGateway` });
  process.exit(2);
}
const mod = await import(pathToFileURL(path.join(dist, found.name)).href);
const callGateway = mod[found.alias];
if (typeof callGateway !== "function") {
  answer({ ready: false, error: `${found.name} exports ${found.alias}, not a function` });
  process.exit(2);
}
answer({ ready: true, module: found.name });

const rl = readline.createInterface({ input: process.stdin });
rl.on("line", async (line) => {
  let req;
  try {
    req = JSON.parse(line);
  } catch (err) {
    answer({ id: null, ok: false, error: `request is not JSON: ${err}` });
    return;
  }
  try {
    const result = await callGateway({
      method: req.method,
      params: req.params,
      expectFinal: req.expectFinal,
      timeoutMs: req.timeoutMs,
      clientName: req.clientName,
      mode: req.mode,
      scopes: req.scopes,
    });
    answer({ id: req.id, ok: true, result: result ?? null });
  } catch (err) {
    answer({ id: req.id, ok: false, error: err?.stack ?? String(err) });
  }
});
rl.on("close", () => process.exit(0));
