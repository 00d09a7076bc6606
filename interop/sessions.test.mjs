// Hosts on MCP 2025-11-25 over Streamable HTTP that declare elicitation (the official
// TypeScript SDK client, as inside Claude Code, VS Code and Cursor) get a session, and a
// write's confirmation as an elicitation: approved, the partner is called once and the charge
// taken; declined, nothing is sent and nothing stays reserved. A session that is lost is
// answered 404, and a confirmation the host cannot answer falls back to the confirmRequestId
// round trip. A call the owner's spend policy sends for approval is shown as a form too.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { freePort, onboard, startServer } from "./harness.mjs";

const partnerBin = process.env.EXAMPLE_PARTNER_BIN;
if (!partnerBin) throw new Error("set EXAMPLE_PARTNER_BIN (interop/run builds it)");

let server, partner, caller, publisher;
const handle = "@session-write";

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
  publisher = (await onboard(server, "session-publisher@example.com")).apiKey;
  caller = (await onboard(server, "session-caller@example.com")).apiKey;
  const pub = await rest("POST", "/v1/partner/intents", publisher, {
    publicIdentifier: handle, name: "Session write", description: "echoes a query as a write", category: "EXECUTE",
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

const credit = async () => (await rest("GET", "/v1/account", caller)).body.credit;

// host connects the TypeScript SDK client declaring elicitation; answer(params) is what the
// human does. It returns the client, its transport and the elicitations it was shown.
async function host(answer, key = caller) {
  const asked = [];
  const client = new Client({ name: "ts-host", version: "1.0.0" }, { capabilities: { elicitation: { form: {} } } });
  client.setRequestHandler(ElicitRequestSchema, async (req) => {
    asked.push(req.params);
    return answer(req.params);
  });
  const transport = new StreamableHTTPClientTransport(new URL(server.url + "/mcp"), { requestInit: { headers: { "x-api-key": key } } });
  await client.connect(transport);
  return { client, transport, asked };
}

const invoke = (client, message, extra = {}) => client.callTool({ name: "invoke_partner_message", arguments: { message, ...extra } });
const errorOf = (res) => JSON.parse(res.content[0].text).error;

test("2025-11-25 over HTTP with elicitation: a session, and an approved write is sent once and charged", async () => {
  const { client, transport, asked } = await host(() => ({ action: "accept", content: { decision: "approve" } }));
  try {
    assert.equal(client.getServerVersion()?.name, "switchboard");
    assert.ok(transport.sessionId, "the server opened a session");
    const before = await credit();
    const res = await invoke(client, `${handle} ship it`);
    assert.equal(res.isError, undefined, JSON.stringify(res));
    assert.equal(asked.length, 1);
    assert.equal(asked[0].mode ?? "form", "form");
    for (const part of ["partner fee", "platform fee", "Total:", "(maxChargeUsd)", '{"query":"ship it"}']) assert.ok(asked[0].message.includes(part), `${part} in ${asked[0].message}`);
    const out = res.structuredContent;
    assert.equal(out.success, true);
    const receipt = await rest("GET", `/v1/partner/receipts/${out.requestId}`, publisher);
    assert.equal(receipt.status, 200, "the partner answered the approved call");
    const after = await credit();
    assert.ok(after.availableUsd < before.availableUsd, `charged: ${before.availableUsd} -> ${after.availableUsd}`);
    assert.equal(after.reservedUsd, 0);
    // The quote was dispatched once: confirming it again replays, it is not sent again.
    const again = await rest("POST", "/v1/invoke", caller, { message: `${handle} ship it`, confirmRequestId: out.requestId });
    assert.equal(again.status, 200, JSON.stringify(again.body));
    assert.deepEqual(await credit(), after, "a second confirmation charged again");
  } finally {
    await client.close();
  }
});

for (const [name, answer] of [["the form's decline", { action: "accept", content: { decision: "decline" } }], ["the host's decline button", { action: "decline" }]]) {
  test(`2025-11-25 over HTTP: a write declined by ${name} sends nothing and reserves nothing`, async () => {
    const { client, asked } = await host(() => answer);
    try {
      const before = await credit();
      const res = await invoke(client, `${handle} not this`);
      assert.equal(asked.length, 1);
      assert.equal(res.isError, true);
      const err = errorOf(res);
      assert.equal(err.code, "CONFLICT");
      assert.match(err.message, /declined/);
      assert.deepEqual(await credit(), before);
      const receipt = await rest("GET", `/v1/partner/receipts/${err.details.requestId}`, publisher);
      assert.equal(receipt.status, 404, "no call reached the partner");
    } finally {
      await client.close();
    }
  });
}

test("a session lost is answered 404; a confirmation the host cannot answer falls back to confirmRequestId", async () => {
  // A session id this replica never opened (another replica's, or one from before a restart).
  const lost = await fetch(server.url + "/mcp", {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream", "x-api-key": caller,
      "mcp-session-id": "switchboard-2.ABCDEFGHIJKLMNOPQRSTUVWXYZ", "mcp-protocol-version": "2025-11-25" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
  });
  assert.equal(lost.status, 404);

  const { client, asked } = await host(() => { throw new Error("the window was closed"); });
  try {
    const res = await invoke(client, `${handle} after the loss`);
    assert.equal(asked.length, 1);
    const err = errorOf(res);
    assert.equal(err.code, "CONFIRMATION_REQUIRED", JSON.stringify(err));
    const done = await invoke(client, `${handle} after the loss`, { confirmRequestId: err.details.requestId });
    assert.equal(done.isError, undefined, JSON.stringify(done));
    assert.equal(done.structuredContent.success, true);
    assert.equal(asked.length, 1, "a confirmRequestId call is not asked again");
    const receipt = await rest("GET", `/v1/partner/receipts/${err.details.requestId}`, publisher);
    assert.equal(receipt.status, 200);
  } finally {
    await client.close();
  }
});

test("a TypeScript client without elicitation keeps the stateless confirmRequestId round trip", async () => {
  const client = new Client({ name: "ts-plain", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL(server.url + "/mcp"), { requestInit: { headers: { "x-api-key": caller } } });
  await client.connect(transport);
  try {
    assert.equal(transport.sessionId, undefined);
    const err = errorOf(await invoke(client, `${handle} plain`));
    assert.equal(err.code, "CONFIRMATION_REQUIRED");
  } finally {
    await client.close();
  }
});

test("2025-11-25 over HTTP: a call its owner's policy sends for approval is shown as a form; checking while it is pending sends nothing", async () => {
  const owner = (await onboard(server, "session-owner@example.com")).apiKey;
  const set = await rest("PUT", "/v1/policy", owner, { policy: { approval: { aboveUsd: "0" } } });
  assert.equal(set.status, 200, JSON.stringify(set.body));
  let shown = 0;
  const { client, asked } = await host(() => (++shown < 3 ? { action: "accept", content: { next: "check" } } : { action: "accept", content: { next: "stop" } }), owner);
  try {
    const res = await invoke(client, `${handle} needs the owner`);
    assert.equal(asked.length, 3, "asked, then asked again after each check while pending");
    assert.match(asked[0].message, /approval \(approval\.aboveUsd\)/);
    assert.match(asked[1].message, /Still waiting/);
    const err = errorOf(res);
    assert.equal(err.code, "APPROVAL_PENDING", JSON.stringify(err));
    const receipt = await rest("GET", `/v1/partner/receipts/${err.details.requestId}`, publisher);
    assert.equal(receipt.status, 404, "no call reached the partner");
    const listed = await rest("GET", "/v1/approvals?pending=true", owner);
    assert.equal(listed.body.approvals.length, 1, JSON.stringify(listed.body));
  } finally {
    await client.close();
  }
});
