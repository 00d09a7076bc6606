// MCP revision 2026-07-28 end to end: the go-sdk client pinned to it (interop/goclient; the
// TypeScript SDK speaks up to 2025-11-25) against a real switchboard and the example partner.
// It connects by server/discover (stateless: 2026-07-28 cannot be reached by initialize),
// reads tools/list's caching hints and icons, and invokes a write intent whose confirmation
// arrives as a form elicitation inside an input_required result: approved, the partner is
// called once and the charge taken; declined, nothing is sent, nothing stays reserved, and the
// quote cannot be confirmed afterwards.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFile, spawn } from "node:child_process";
import { promisify } from "node:util";
import { freePort, onboard, startServer } from "./harness.mjs";

const goclient = process.env.GOCLIENT_BIN;
const partnerBin = process.env.EXAMPLE_PARTNER_BIN;
if (!goclient || !partnerBin) throw new Error("set GOCLIENT_BIN and EXAMPLE_PARTNER_BIN (interop/run builds them)");

let server, partner, caller, publisher, handle;

async function rest(method, path, key, body) {
  const r = await fetch(server.url + path, {
    method, headers: { "content-type": "application/json", ...(key ? { "x-api-key": key } : {}) }, body: body ? JSON.stringify(body) : undefined,
  });
  return { status: r.status, body: await r.json() };
}

before(async () => {
  server = await startServer({ SWITCHBOARD_ENV: "test", SWITCHBOARD_ALLOW_LOCAL_ENDPOINTS: "true" });
  const port = await freePort();
  partner = spawn(partnerBin, ["-service-url", server.url, "-addr", `127.0.0.1:${port}`], { stdio: ["ignore", "ignore", "inherit"] });
  for (let i = 0; ; i++) {
    try { await fetch(`http://127.0.0.1:${port}/rest`); break; } catch { if (i > 200) throw new Error("example-partner did not come up"); await new Promise((r) => setTimeout(r, 50)); }
  }
  publisher = (await onboard(server, "rev-publisher@example.com")).apiKey;
  caller = (await onboard(server, "rev-caller@example.com")).apiKey;
  handle = "@interop-write";
  const pub = await rest("POST", "/v1/partner/intents", publisher, {
    publicIdentifier: handle, name: "Interop write", description: "echoes a query as a write", category: "EXECUTE",
    toolEndpoint: `http://127.0.0.1:${port}/rest`, feeRate: 0.001, payoutAddresses: { evm: "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed" }, parametersSchema: { type: "object", properties: { query: { type: "string" } }, required: ["query"] },
  });
  assert.equal(pub.status, 201, JSON.stringify(pub.body));
  const act = await rest("POST", `/v1/partner/intents/${pub.body.id}/active`, publisher, { active: true });
  assert.equal(act.status, 200, JSON.stringify(act.body));
});
after(async () => {
  partner?.kill("SIGTERM");
  await server?.stop();
});

async function run(args) {
  const { stdout } = await promisify(execFile)(goclient, ["-url", server.url + "/mcp", "-key", caller, ...args], { encoding: "utf8" });
  return JSON.parse(stdout);
}

const credit = async () => (await rest("GET", "/v1/account", caller)).body.credit;

test("2026-07-28: server/discover, tools/list with ttlMs, cacheScope and icons", async () => {
  const r = await run(["-revision", "2026-07-28"]);
  assert.equal(r.protocolVersion, "2026-07-28");
  assert.equal(r.ttlMs, 300000);
  assert.equal(r.cacheScope, "private", "a keyed list is the caller's own (its scopes choose the tools)");
  assert.ok(r.tools >= 10, `${r.tools} tools`);
  assert.equal(r.toolsWithIcons, r.tools);
});

test("2026-07-28: a write confirmed by elicitation is sent once and charged", async () => {
  const before = await credit();
  const r = await run(["-revision", "2026-07-28", "-tool", "invoke_partner_message", "-args", JSON.stringify({ message: `${handle} ship it` }), "-decision", "approve"]);
  assert.equal(r.elicitations.length, 1);
  const e = r.elicitations[0];
  assert.equal(e.mode, "form");
  for (const part of ["partner fee", "platform fee", "infrastructure", "Total:", "(maxChargeUsd)", '{"query":"ship it"}']) assert.ok(e.message.includes(part), `${part} in ${e.message}`);
  assert.deepEqual(e.requestedSchema.properties.decision.oneOf.map((o) => o.const), ["approve", "decline"]);
  assert.equal(r.result.isError, undefined, JSON.stringify(r.result));
  const out = r.result.structuredContent;
  assert.equal(out.success, true);
  assert.equal(out.handle, handle);
  const receipt = await rest("GET", `/v1/partner/receipts/${out.requestId}`, publisher);
  assert.equal(receipt.status, 200, "the partner answered the approved call");
  const after = await credit();
  assert.ok(after.availableUsd < before.availableUsd, `charged: ${before.availableUsd} -> ${after.availableUsd}`);
  assert.equal(after.reservedUsd, 0);
});

for (const [name, decision] of [["the form's decline", "decline"], ["the host's decline button", "reject"]]) {
  test(`2026-07-28: a write declined by ${name} sends nothing and reserves nothing`, async () => {
    const before = await credit();
    const r = await run(["-revision", "2026-07-28", "-tool", "invoke_partner_message", "-args", JSON.stringify({ message: `${handle} not this` }), "-decision", decision]);
    assert.equal(r.elicitations.length, 1);
    assert.equal(r.result.isError, true);
    const err = JSON.parse(r.result.content[0].text).error;
    assert.equal(err.code, "CONFLICT");
    assert.match(err.message, /declined/);
    assert.deepEqual(await credit(), before);
    const receipt = await rest("GET", `/v1/partner/receipts/${err.details.requestId}`, publisher);
    assert.equal(receipt.status, 404, "no call reached the partner");
    const late = await rest("POST", "/v1/invoke", caller, { message: `${handle} not this`, confirmRequestId: err.details.requestId });
    assert.equal(late.status, 409);
    assert.match(late.body.error.message, /declined/);
  });
}

test("a client without elicitation keeps the confirmRequestId round trip", async () => {
  for (const args of [["-revision", "2026-07-28"], ["-revision", "2025-11-25"]]) {
    const r = await run([...args, "-tool", "invoke_partner_message", "-args", JSON.stringify({ message: `${handle} later` })]);
    assert.equal(r.elicitations?.length ?? 0, 0);
    const err = JSON.parse(r.result.content[0].text).error;
    assert.equal(err.code, "CONFIRMATION_REQUIRED", JSON.stringify(err));
    assert.ok(err.details.requestId && err.details.maxChargeUsd !== undefined);
  }
});
