// The MCP conformance suite's server scenarios against a real switchboard. Every applicable
// scenario must pass with at least one check run; the others exercise the suite's own
// fixture tools, prompts and resources (a server built for the suite registers
// `test_simple_text`, `test_image_content` and so on), and each is listed below with why.
// A scenario the suite adds later is in neither list and fails the last test, so nobody
// misses it. The suite's authorization scenarios (auth/...) are all client scenarios in this
// version (they test a client against the suite's own authorization server), so none runs
// against a server; oauth.test.mjs drives Switchboard's authorization with the SDK's client.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { promisify } from "node:util";
import { startServer } from "./harness.mjs";

const run = promisify(execFile);
const require = createRequire(import.meta.url);
const cli = join(dirname(require.resolve("@modelcontextprotocol/conformance/package.json")), "dist", "index.js");
const conformance = (...args) => run(process.execPath, [cli, ...args], { maxBuffer: 16 << 20 }).catch((e) => e);

const applicable = [
  "server-initialize",
  "ping",
  "tools-list",
  "logging-set-level",
  "resources-list",
  "prompts-list",
  "dns-rebinding-protection",
];

const fixture = "calls the suite's fixture tool; Switchboard serves its own tools, not the suite's";
const notApplicable = {
  "completion-complete": "needs prompts or resource templates to complete; Switchboard has neither and does not declare the completions capability",
  "tools-call-simple-text": fixture + " (test_simple_text)",
  "tools-call-image": fixture + " (test_image_content)",
  "tools-call-audio": fixture + " (test_audio_content)",
  "tools-call-embedded-resource": fixture + " (test_embedded_resource)",
  "tools-call-mixed-content": fixture + " (test_multiple_content_types)",
  "tools-call-with-logging": fixture + " (test_tool_with_logging)",
  "tools-call-error": fixture + " (test_error_handling); Switchboard's errors are isError results, checked by clients.test.mjs",
  "tools-call-with-progress": fixture + " (test_tool_with_progress)",
  "tools-call-sampling": fixture + " (test_sampling); Switchboard never asks the client to sample",
  "tools-call-elicitation": fixture + " (test_elicitation); Switchboard never elicits",
  "json-schema-2020-12": fixture + " (json_schema_2020_12_tool); our schemas are compiled as 2020-12 by Ajv in clients.test.mjs",
  "elicitation-sep1034-defaults": fixture + " (test_elicitation_sep1034_defaults)",
  "elicitation-sep1330-enums": fixture + " (test_elicitation_sep1330_enums)",
  "server-sse-polling": fixture + " (test_reconnection) and needs a session id; /mcp is stateless so any replica serves any request",
  "server-sse-multiple-streams": "needs a session-holding server (GET streams per session); /mcp is stateless, so the suite runs no check",
  "resources-read-text": "reads the suite's fixture resource; Switchboard publishes no resources",
  "resources-read-binary": "reads the suite's fixture resource; Switchboard publishes no resources",
  "resources-templates-read": "reads the suite's fixture resource template; Switchboard publishes none",
  "resources-subscribe": "subscribes to the suite's fixture resource; Switchboard publishes no resources",
  "resources-unsubscribe": "subscribes to the suite's fixture resource; Switchboard publishes no resources",
  "prompts-get-simple": "gets the suite's fixture prompt; Switchboard publishes no prompts",
  "prompts-get-with-args": "gets the suite's fixture prompt; Switchboard publishes no prompts",
  "prompts-get-embedded-resource": "gets the suite's fixture prompt; Switchboard publishes no prompts",
  "prompts-get-with-image": "gets the suite's fixture prompt; Switchboard publishes no prompts",
};

let server;
before(async () => (server = await startServer()));
after(() => server?.stop());

for (const scenario of applicable) {
  test(`conformance: ${scenario}`, async () => {
    const r = await conformance("server", "--url", server.url + "/mcp", "--scenario", scenario);
    const out = `${r.stdout}\n${r.stderr}`;
    const m = /Passed: (\d+)\/(\d+), (\d+) failed, (\d+) warnings/.exec(out);
    assert.ok(m, `no result line:\n${out}`);
    const [, passed, , failed, warnings] = m.map(Number);
    assert.equal(failed, 0, out);
    assert.equal(warnings, 0, out);
    assert.ok(passed > 0, `no check ran:\n${out}`);
    assert.equal(r.code ?? 0, 0, out);
  });
}

test("conformance: every server scenario of the suite is either run or listed as not applicable", async () => {
  const r = await conformance("list", "--server");
  const listed = [...`${r.stdout}`.matchAll(/^\s+- ([a-z0-9-]+) \[/gm)].map((m) => m[1]);
  assert.ok(listed.length > 20, r.stdout);
  for (const s of listed) {
    assert.ok(applicable.includes(s) || s in notApplicable, `new conformance scenario ${s}: run it or say why it does not apply`);
  }
  for (const s of [...applicable, ...Object.keys(notApplicable)]) {
    assert.ok(listed.includes(s), `scenario ${s} is no longer in the suite; drop it here`);
  }
});
