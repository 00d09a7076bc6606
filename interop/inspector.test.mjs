// MCP Inspector's CLI lists the tools with --strict, which reports every tool-schema
// portability problem (boolean schemas, untyped schemas, type arrays, remote $refs): zero
// findings, over Streamable HTTP and over stdio.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { promisify } from "node:util";
import { bin, baseEnv, startServer } from "./harness.mjs";

const run = promisify(execFile);
const require = createRequire(import.meta.url);
const cli = join(dirname(require.resolve("@modelcontextprotocol/inspector/package.json")), "clients", "launcher", "build", "index.js");

let server;
before(async () => (server = await startServer()));
after(() => server?.stop());

async function strictList(target, env = process.env) {
  const r = await run(process.execPath, [cli, "--cli", "--method", "tools/list", "--strict", ...target], { env, maxBuffer: 16 << 20 }).catch((e) => e);
  const findings = r.stderr.split("\n").filter((l) => /^(Warning|Error)\b/.test(l));
  assert.deepEqual(findings, [], r.stderr);
  assert.equal(r.code ?? 0, 0, r.stderr);
  const { tools } = JSON.parse(r.stdout);
  assert.ok(tools.length >= 20, r.stdout);
}

// Every toolset, so every tool is checked (a keyless host is shown onboarding and agent).
test("inspector --strict over Streamable HTTP: no findings", () => strictList([server.url + "/mcp?toolsets=onboarding,agent,partner,owner"]));

test("inspector --strict over stdio: no findings", () =>
  // The Inspector hands the server only the environment named with -e (and a few defaults).
  strictList(["-e", "SWITCHBOARD_TOOLSETS=onboarding,agent,partner", "--transport", "stdio", "--", bin, "stdio"], { ...baseEnv(server.dataDir) }));
