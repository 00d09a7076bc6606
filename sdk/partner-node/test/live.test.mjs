// Partners built with the kit against a live `switchboard serve`: the README quickstart
// (node:http), Express (with and without express.json()), Hono and an MCP_HTTP server on the
// official MCP SDK each pass the service's test-endpoint check (signed round trip OK,
// negative-auth probe PASS); a partner that skips verification fails it; the quickstart
// partner is published, activated and invoked.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { fileURLToPath } from "node:url";
import express from "express";
import { Hono } from "hono";
import { serve } from "@hono/node-server";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { startServer, freePort } from "../../harness.mjs";
import { quickstarts, start } from "../../readme.mjs";
import { createVerifier, expressMiddleware, honoMiddleware, mcpMiddleware, failure } from "../dist/index.js";

const dist = fileURLToPath(new URL("../dist/index.js", import.meta.url));
const readme = fileURLToPath(new URL("../README.md", import.meta.url));

let server, key;
const closers = [];
before(async () => {
  server = await startServer();
  const email = `partner-kit-${process.pid}@example.com`;
  await api("POST", "/v1/agents/signup", { email });
  key = (await api("POST", "/v1/agents/verify", { email, code: await server.code(email) })).apiKey;
});
after(async () => {
  for (const c of closers.reverse()) await c();
  await server?.stop();
});

async function api(method, path, body) {
  const r = await fetch(server.url + path, {
    method, headers: { "content-type": "application/json", ...(key ? { "x-api-key": key } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const j = await r.json();
  if (!r.ok) throw new Error(`${method} ${path}: ${r.status} ${JSON.stringify(j)}`);
  return j;
}

async function listen(handler) {
  const port = await freePort();
  const srv = createServer(handler);
  await new Promise((r) => srv.listen(port, "127.0.0.1", r));
  closers.push(() => { srv.closeAllConnections(); return new Promise((r) => srv.close(r)); });
  return `http://127.0.0.1:${port}`;
}

// assertPasses checks a test-endpoint report: round trip OK, probe PASS and, for REST, every
// check of the battery (the same as `switchboard partner check`) PASS, WARN included: the kit
// answers each the way the service wants, a 2 MiB body with 413 and text/plain with 415.
function assertPasses(t, what) {
  assert.equal(t.roundTrip.verdict, "OK", `${what}: ${JSON.stringify(t.roundTrip)}`);
  assert.equal(t.probe.verdict, "PASS", `${what}: ${JSON.stringify(t.probe)}`);
  assert.equal(t.readyToActivate, true);
  if (t.target.bindingType !== "REST") return;
  assert.equal(t.checks.length, 9, `${what}: ${JSON.stringify(t.checks)}`);
  const notPassed = t.checks.filter((c) => c.verdict !== "PASS");
  assert.deepEqual(notPassed, [], `${what}: the battery`);
  const status = Object.fromEntries(t.checks.map((c) => [c.name, c.status]));
  assert.equal(status["2 MiB body"], 413, what);
  assert.equal(status["Content-Type text/plain"], 415, what);
}

test("the README quickstart partner passes test-endpoint, activates, answers an invocation, is paid its quoted rate and logs each call", async () => {
  const port = await freePort();
  const p = start(quickstarts(readme).rest, { env: { SWITCHBOARD_URL: server.url, PORT: String(port) }, map: { "@switchboard-hq/partner": dist } });
  closers.push(async () => { p.child.kill(); await p.exited; });
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    try { await fetch(url); break; } catch { if (i > 100) throw new Error(p.output()); await new Promise((r) => setTimeout(r, 50)); }
  }
  const t = await api("POST", "/v1/partner/test-endpoint", { toolEndpoint: url, args: { query: "ping" } });
  assertPasses(t, "quickstart");
  assert.deepEqual(t.roundTrip.response.result, { answer: "You asked: ping" });

  const intent = await api("POST", "/v1/partner/intents", {
    publicIdentifier: "@kit-quickstart", name: "Kit quickstart", description: "answers a query", category: "QUERY", toolEndpoint: url, feeRate: 0.05,
    payoutAddresses: { evm: (await api("GET", "/v1/account")).wallets.evm },
    parametersSchema: { type: "object", properties: { query: { type: "string" } }, required: ["query"] },
  });
  assert.equal((await api("POST", `/v1/partner/intents/${intent.id}/active`, { active: true })).intent.isActive, true);
  const inv = await api("POST", "/v1/invoke", { message: "@kit-quickstart what is new?" });
  assert.equal(inv.success, true);
  assert.deepEqual(inv.result, { answer: "You asked: what is new?" });
  // Paid what the kit reports: the quoted rate, with no line of the handler's about money.
  assert.equal(inv.charge.partnerFeeMicro, 50_000, JSON.stringify(inv.charge));
  assert.equal(inv.charge.infrastructureMicro, inv.charge.reservedMicro);
  for (let i = 0; i < 40 && !p.output().includes(inv.requestId); i++) await new Promise((r) => setTimeout(r, 50));
  assert.match(p.output(), new RegExp(`switchboard call verified requestId=${inv.requestId}`));
  // The call's signed receipt verifies with the kit, from the answer and as the partner fetches
  // it; a receipt altered in any field does not.
  const verifier = createVerifier({ serviceUrl: server.url });
  const receipt = await verifier.verifyReceipt(inv.receipt);
  assert.equal(receipt.requestId, inv.requestId);
  const fetched = await api("GET", `/v1/partner/receipts/${inv.requestId}`);
  assert.deepEqual(await verifier.verifyReceipt(fetched), receipt);
  await assert.rejects(verifier.verifyReceipt({ ...inv.receipt, receipt: { ...inv.receipt.receipt, charges: { ...inv.receipt.receipt.charges, totalMicro: 1 } } }), /does not verify/);
  // A GET is not how Switchboard calls: refused, as is an unsigned POST.
  assert.equal((await fetch(url)).status, 405);
  assert.equal((await fetch(url, { method: "POST", body: "{}", headers: { "content-type": "application/json", "x-service-request-id": "forged-1" } })).status, 401);
  // fetch sends a string body as text/plain: refused 415, before any JSON is read.
  const plain = await fetch(url, { method: "POST", body: "{}", headers: { "x-service-request-id": "plain-1" } });
  assert.equal(plain.status, 415);
  assert.equal((await plain.json()).error.code, "UNSUPPORTED_MEDIA_TYPE");
  // The child's log reaches us through a pipe: give the lines a moment to arrive.
  for (let i = 0; i < 40 && !/requestId=plain-1/.test(p.output()); i++) await new Promise((r) => setTimeout(r, 50));
  assert.match(p.output(), /switchboard call refused requestId=forged-1 401/);
  assert.match(p.output(), /switchboard call refused requestId=plain-1 415 UNSUPPORTED_MEDIA_TYPE/);
});

test("Express, with and without express.json(), passes test-endpoint", async () => {
  const verifier = createVerifier({ serviceUrl: server.url });
  const app = express();
  app.post("/raw", expressMiddleware(verifier), (req, res) => res.json({ success: true, result: { echo: req.switchboard.args } }));
  app.post("/parsed", express.json(), expressMiddleware(verifier), (req, res) => res.json({ success: true, result: { echo: req.switchboard.args } }));
  const url = await listen(app);
  for (const path of ["/raw", "/parsed"]) {
    const t = await api("POST", "/v1/partner/test-endpoint", { toolEndpoint: url + path, args: { query: "ümlaut ✓", n: [1, 2.5] } });
    assertPasses(t, `express ${path}`);
    assert.deepEqual(t.roundTrip.response.result.echo, { query: "ümlaut ✓", n: [1, 2.5] });
  }
});

test("Hono passes test-endpoint", async () => {
  const verifier = createVerifier({ serviceUrl: server.url });
  const app = new Hono();
  // The middleware read the body (bounded); the handler can still read it.
  app.post("/rest", honoMiddleware(verifier), async (c) => c.json({ success: true, result: { user: c.get("switchboard").userId, sameBody: (await c.req.json()).requestId === c.get("switchboard").requestId } }));
  const port = await freePort();
  // serve listens asynchronously: wait for it (on Node 20 the first call otherwise found the port closed).
  let srv;
  await new Promise((r) => { srv = serve({ fetch: app.fetch, port, hostname: "127.0.0.1" }, r); });
  closers.push(() => new Promise((r) => srv.close(r)));
  const t = await api("POST", "/v1/partner/test-endpoint", { toolEndpoint: `http://127.0.0.1:${port}/rest` });
  assertPasses(t, "hono");
  assert.match(t.roundTrip.response.result.user, /^u_/);
  assert.equal(t.roundTrip.response.result.sameBody, true);
});

test("an MCP_HTTP partner on the official MCP SDK passes test-endpoint", async () => {
  const verifier = createVerifier({ serviceUrl: server.url });
  const handle = "@kit-mcp";
  const guard = mcpMiddleware(verifier);
  const url = await listen((req, res) => guard(req, res, async () => {
    // Stateless Streamable HTTP: a server and transport per request.
    const mcp = new Server({ name: "kit-mcp-partner", version: "1.0.0" }, { capabilities: { tools: {} } });
    mcp.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: [{ name: handle, description: "echoes its arguments", inputSchema: { type: "object" } }] }));
    mcp.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
      // The middleware verified this call; verifying again in the tool is cheap and keeps the
      // tool safe however it is reached.
      const env = await verifier.verifyHeaders(extra.requestInfo.headers, request.params.arguments);
      const body = { success: true, result: { echo: env.args, requestId: env.requestId } };
      return { content: [{ type: "text", text: JSON.stringify(body) }], structuredContent: body };
    });
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on("close", () => { transport.close(); mcp.close(); });
    await mcp.connect(transport);
    await transport.handleRequest(req, res, req.body);
  }));
  const t = await api("POST", "/v1/partner/test-endpoint", { toolEndpoint: url, bindingType: "MCP_HTTP", publicIdentifier: handle, args: { ticker: "SOL", days: 30 } });
  assertPasses(t, "mcp");
  assert.deepEqual(t.roundTrip.response.result.echo, { ticker: "SOL", days: 30 });
});

test("a partner that skips verification fails the probe", async () => {
  const url = await listen((req, res) => {
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify({ success: true, result: {} }));
  });
  const t = await api("POST", "/v1/partner/test-endpoint", { toolEndpoint: url });
  assert.equal(t.probe.verdict, "FAIL");
  assert.equal(t.readyToActivate, false);
  // and one that refuses with the kit's failure envelope but the wrong status is not PASS either
  const wrong = await listen((req, res) => {
    res.writeHead(400, { "content-type": "application/json" });
    res.end(JSON.stringify(failure("BAD_INPUT", "no")));
  });
  assert.notEqual((await api("POST", "/v1/partner/test-endpoint", { toolEndpoint: wrong })).probe.verdict, "PASS");
});
