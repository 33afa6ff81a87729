// brainsurgeon internal/testkit/oracle/server.mjs: the pi session oracle as a long-lived process.
//
// Started by package oracle (embedded, run as `node --input-type=module -e <this file>`), one process per test
// binary, so the pi package is loaded once instead of once per comparison. It answers the same questions as
// ../shared/oracle/pi-session-oracle.mjs (summary, context, compare) with the same JSON, one request per line:
//
//	stdin:  {"id":1,"op":"summary"|"context"|"compare","files":["/abs/a.jsonl", ...]}
//	stdout: {"id":1,"result":{...}}   or   {"id":1,"error":"..."}
//
// The first stdout line is {"ready":"<package>@<version>"}. stdout carries nothing else (console output goes to
// stderr). The process exits when stdin closes, so it dies with the test binary that started it.
//
// SessionManager.open rewrites a file when it migrates it (v1/v2 -> v3) and truncates one whose header is
// unreadable, so every file is opened as a private temp copy, removed afterwards; the input is never opened by pi.
//
// Environment: PI_ORACLE_MODULES, the node_modules directory holding @mariozechner/pi-coding-agent.
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import readline from "node:readline";
import { pathToFileURL } from "node:url";

// Keep stdout for responses only: anything pi logs goes to stderr.
const out = process.stdout;
for (const k of ["log", "info", "debug", "warn"]) console[k] = (...a) => process.stderr.write(a.join(" ") + "\n");
out.on("error", () => process.exit(0)); // the test binary is gone

const modules = process.env.PI_ORACLE_MODULES;
if (!modules) {
  process.stderr.write("server.mjs: PI_ORACLE_MODULES is not set\n");
  process.exit(2);
}
const pkgDir = path.join(modules, "@mariozechner", "pi-coding-agent");
const meta = JSON.parse(fs.readFileSync(path.join(pkgDir, "package.json"), "utf8"));
const { SessionManager, convertToLlm } = await import(pathToFileURL(path.join(pkgDir, "dist", "index.js")).href);
const oracle = `${meta.name}@${meta.version}`;

const hash16 = (s) => crypto.createHash("sha256").update(s).digest("hex").slice(0, 16);
const bytes = (s) => Buffer.byteLength(s);

// withSession opens a temp copy of file with pi and passes what pi sees to fn.
function withSession(file, fn) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "bs-oracle-"));
  try {
    const copy = path.join(dir, path.basename(file));
    fs.copyFileSync(file, copy);
    const original = fs.readFileSync(copy);
    const sm = SessionManager.open(copy, dir);
    const s = {
      sm,
      migrated: !original.equals(fs.readFileSync(copy)),
      context: sm.buildSessionContext(),
      entries: sm.getEntries(),
      header: sm.getHeader(),
    };
    return fn(s);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

function describe(message, i) {
  const json = JSON.stringify(message);
  let blocks;
  if (typeof message.content === "string") blocks = ["string"];
  else if (Array.isArray(message.content)) blocks = message.content.map((b) => b?.type);
  return { i, role: message.role, bytes: bytes(json), sha: hash16(json), blocks, toolCallId: message.toolCallId, toolName: message.toolName };
}

function branchPoints(entries) {
  const children = new Map();
  for (const e of entries) {
    const parent = e.parentId ?? "<root>";
    children.set(parent, (children.get(parent) ?? 0) + 1);
  }
  return [...children.values()].filter((n) => n > 1).length;
}

function summary(file) {
  return withSession(file, (s) => {
    const entryTypes = {};
    for (const e of s.entries) entryTypes[e.type] = (entryTypes[e.type] ?? 0) + 1;
    let llm;
    try {
      llm = convertToLlm(s.context.messages);
      if (Array.isArray(llm)) llm = llm.length;
    } catch (e) {
      llm = { error: String(e) };
    }
    const all = JSON.stringify(s.context.messages);
    return {
      oracle,
      file,
      headerVersion: s.header?.version ?? null,
      sessionId: s.sm.getSessionId(),
      migratedOnOpen: s.migrated,
      entryCount: s.entries.length,
      entryTypes,
      leafId: s.sm.getLeafId(),
      branchPoints: branchPoints(s.entries),
      thinkingLevel: s.context.thinkingLevel,
      model: s.context.model ?? null,
      contextMessageCount: s.context.messages.length,
      contextBytes: bytes(all),
      contextSha: hash16(all),
      llmMessageCount: llm,
      messages: s.context.messages.map(describe),
    };
  });
}

function context(file) {
  return withSession(file, (s) => ({
    oracle,
    leafId: s.sm.getLeafId(),
    entryCount: s.entries.length,
    thinkingLevel: s.context.thinkingLevel,
    model: s.context.model ?? null,
    messages: s.context.messages,
  }));
}

function compare(before, after) {
  // Only what is needed is kept from each side, so the two temp copies never coexist.
  const side = (file) => withSession(file, (s) => ({
    ids: s.entries.map((e) => e.id),
    leaf: s.sm.getLeafId(),
    thinkingLevel: s.context.thinkingLevel,
    model: s.context.model ?? null,
    messages: s.context.messages,
  }));
  const a = side(before), b = side(after);
  const diffs = [];
  for (let i = 0; i < Math.max(a.messages.length, b.messages.length); i++) {
    const ma = a.messages[i], mb = b.messages[i];
    if ((ma === undefined ? undefined : JSON.stringify(ma)) !== (mb === undefined ? undefined : JSON.stringify(mb))) {
      diffs.push({ i, before: ma && describe(ma, i), after: mb && describe(mb, i) });
    }
  }
  const idsA = new Set(a.ids), idsB = new Set(b.ids);
  return {
    oracle,
    entryCount: [a.ids.length, b.ids.length],
    leafId: [a.leaf, b.leaf],
    sameLeaf: a.leaf === b.leaf,
    missingIdsInAfter: [...idsA].filter((id) => !idsB.has(id)),
    newIdsInAfter: [...idsB].filter((id) => !idsA.has(id)),
    thinkingLevel: [a.thinkingLevel, b.thinkingLevel],
    model: [a.model, b.model],
    contextMessageCount: [a.messages.length, b.messages.length],
    contextBytes: [bytes(JSON.stringify(a.messages)), bytes(JSON.stringify(b.messages))],
    differingMessages: diffs.length,
    diffs,
  };
}

function answer(req) {
  const files = Array.isArray(req.files) ? req.files : [];
  switch (req.op) {
    case "summary":
      if (files.length === 1) return summary(files[0]);
      break;
    case "context":
      if (files.length === 1) return context(files[0]);
      break;
    case "compare":
      if (files.length === 2) return compare(files[0], files[1]);
      break;
  }
  throw new Error(`bad request: op ${JSON.stringify(req.op)} with ${files.length} files`);
}

out.write(JSON.stringify({ ready: oracle }) + "\n");
for await (const line of readline.createInterface({ input: process.stdin, crlfDelay: Infinity })) {
  if (line.trim() === "") continue;
  let id = null, reply;
  try {
    const req = JSON.parse(line);
    id = req.id ?? null;
    reply = { id, result: answer(req) };
  } catch (e) {
    reply = { id, error: e?.stack ?? String(e) };
  }
  out.write(JSON.stringify(reply) + "\n");
}
// stdin closed: the loop ends and node exits once the last reply is flushed.
