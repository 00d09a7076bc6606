// The client against the live service's description of itself: the generated types are
// current, every /v1 operation has a method, and retries follow the tools' idempotentHint.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { startServer } from "../../harness.mjs";
import { generate, target } from "../scripts/generate.mjs";
import { Client, OPERATIONS } from "../dist/index.js";
import { COVERAGE } from "./coverage.mjs";

let server, doc;
before(async () => {
  server = await startServer();
  doc = await (await fetch(server.url + "/openapi.json")).json();
});
after(() => server?.stop());

test("src/openapi.ts is what openapi-typescript generates from the live /openapi.json", async () => {
  const want = await generate(doc);
  assert.ok(readFileSync(target, "utf8") === want, "src/openapi.ts is out of date: run `npm run generate` in sdk/typescript (with SWITCHBOARD_BIN set)");
});

test("every /v1 operation has a client method, with the documented method and path", () => {
  const documented = [];
  for (const [path, ops] of Object.entries(doc.paths)) {
    if (!path.startsWith("/v1/")) continue;
    for (const [method, op] of Object.entries(ops)) {
      documented.push(op.operationId);
      const mine = OPERATIONS[op.operationId];
      assert.ok(mine, `${method.toUpperCase()} ${path} (${op.operationId}) has no client method`);
      assert.deepEqual([mine.method, mine.path], [method.toUpperCase(), path], op.operationId);
      const name = COVERAGE[op.operationId];
      assert.equal(typeof Client.prototype[name], "function", `${op.operationId}: no Client.${name}`);
    }
  }
  assert.deepEqual(documented.sort(), Object.keys(OPERATIONS).sort());
  assert.deepEqual(Object.keys(COVERAGE).sort(), Object.keys(OPERATIONS).sort());
});

test("a call is retried only when its tool is marked idempotent", async () => {
  // Every toolset, so the partner tools are listed too (a keyless host sees onboarding and agent).
  const r = await fetch(server.url + "/mcp?toolsets=onboarding,agent,partner,owner", {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
  });
  let text = await r.text();
  if (text.includes("data: ")) text = text.slice(text.indexOf("data: ") + 6).trim();
  const hints = Object.fromEntries(JSON.parse(text).result.tools.map((t) => [t.name, t.annotations?.idempotentHint === true]));
  // The task tools are not listed: MCP hosts reach them as tasks/get and tasks/cancel, which the
  // extension defines as safe to repeat (reading a task; cancelling a cancelled task changes nothing).
  const unlisted = new Set(["task_get", "task_cancel"]);
  for (const id of unlisted) assert.equal(hints[id], undefined, `${id} is listed as a tool`);
  for (const [id, op] of Object.entries(OPERATIONS)) {
    if (unlisted.has(id)) {
      assert.equal(op.idempotent, true, `${id}: a task read or cancel is safe to retry`);
      continue;
    }
    assert.equal(op.idempotent, hints[id], `${id}: client idempotent=${op.idempotent}, idempotentHint=${hints[id]}`);
    if (op.method === "GET") assert.ok(hints[id], `${id}: a GET not marked idempotent`);
  }
});
