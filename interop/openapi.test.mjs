// Redocly lints the served /openapi.json with the recommended rules (interop/redocly.yaml
// says why any is off): zero problems. Spectral lints it with its default ruleset
// (spectral:oas, interop/spectral.yaml): zero errors. Every operation documents its errors.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { promisify } from "node:util";
import { startServer } from "./harness.mjs";

const run = promisify(execFile);
const require = createRequire(import.meta.url);
const redocly = join(dirname(require.resolve("@redocly/cli/package.json")), "bin", "cli.js");
const spectral = join(dirname(require.resolve("@stoplight/spectral-cli/package.json")), "dist", "index.js");

let server, doc, file;
before(async () => {
  server = await startServer();
  doc = await (await fetch(server.url + "/openapi.json")).json();
  file = join(mkdtempSync(join(tmpdir(), "openapi-")), "openapi.json");
  writeFileSync(file, JSON.stringify(doc));
});
after(() => server?.stop());

test("redocly lint: no errors, no warnings", async () => {
  const r = await run(process.execPath, [redocly, "lint", "--config", join(import.meta.dirname, "redocly.yaml"), "--format", "json", file], {
    maxBuffer: 16 << 20,
    env: { ...process.env, REDOCLY_TELEMETRY: "off", REDOCLY_SUPPRESS_UPDATE_NOTICE: "true" },
  }).catch((e) => e);
  const report = JSON.parse(r.stdout);
  assert.deepEqual(report.problems.map((p) => `${p.ruleId}: ${p.message} at ${p.location?.[0]?.pointer}`), []);
  assert.equal(r.code ?? 0, 0, r.stderr);
});

test("spectral lint (spectral:oas): no errors, no warnings but info-contact", async () => {
  const r = await run(process.execPath, [spectral, "lint", "--ruleset", join(import.meta.dirname, "spectral.yaml"), "--format", "json", "--quiet", file], {
    maxBuffer: 16 << 20,
  }).catch((e) => e);
  const report = JSON.parse(r.stdout);
  // Severity 0 is error, 1 warning. An error (array-items on the any-JSON unions was one,
  // 37 times) also makes spectral exit non-zero.
  const problems = report.filter((p) => p.severity <= 1 && p.code !== "info-contact").map((p) => `${p.code}: ${p.message} at ${p.path.join(".")}`);
  assert.deepEqual(problems, []);
  assert.equal(r.code ?? 0, 0, r.stderr);
  // Each operation is tagged with its MCP toolset, and the tags are declared.
  const declared = doc.tags.map((t) => t.name);
  for (const ops of Object.values(doc.paths)) for (const op of Object.values(ops)) assert.ok(declared.includes(op.tags[0]), op.operationId);
});

test("every operation has an operationId equal to its MCP tool and documents its errors", () => {
  assert.equal(doc.servers[0].url, server.url);
  for (const [path, ops] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(ops)) {
      assert.equal(op.operationId, op["x-mcp-tool"], `${method} ${path}`);
      for (const status of ["400", "500", "503"]) {
        assert.ok(op.responses[status], `${method} ${path}: no ${status} response`);
        assert.equal(op.responses[status].content["application/json"].schema.$ref, "#/components/schemas/Error");
      }
      if (op.security === undefined) {
        for (const status of ["401", "403", "429"]) assert.ok(op.responses[status], `${method} ${path}: keyed but no ${status}`);
      }
    }
  }
});
