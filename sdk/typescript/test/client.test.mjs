// @switchboard-hq/client against a live `switchboard serve` (SQLite, development mailer) and
// the example partner: onboarding by e-mail code, keys, lookups, wallets, the partner routes,
// invocation with the write-confirmation round trip, every error typed, retries, timeouts.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { startServer, startPartner } from "../../harness.mjs";
import { Client, SwitchboardError, NotApprovedError, confirmationFrom } from "../dist/index.js";

let server, partner, n = 0;
before(async () => {
  server = await startServer();
  partner = await startPartner(server.url);
});
after(async () => {
  await partner?.stop();
  await server?.stop();
});

const unique = (p) => `${p}-${process.pid}-${++n}`;

async function onboard() {
  const email = `${unique("ts-client")}@example.com`;
  const anon = new Client({ baseUrl: server.url });
  assert.deepEqual(await anon.signup({ email }), { ok: true });
  const account = await anon.verify({ email, code: await server.code(email) });
  return { client: new Client({ apiKey: account.apiKey, baseUrl: server.url }), account };
}

// rejects asserts a call fails with a SwitchboardError of this code and status, with a
// message and the request id, and returns it.
async function rejects(promise, code, status) {
  const err = await promise.then(
    (v) => assert.fail(`expected ${code}, got ${JSON.stringify(v)}`),
    (e) => e,
  );
  assert.ok(err instanceof SwitchboardError, `expected a SwitchboardError, got ${err}`);
  assert.equal(err.code, code, err.message);
  assert.equal(err.status, status);
  assert.ok(err.message.length > 0);
  assert.match(err.requestId ?? "", /^[0-9a-f-]{36}$|^injected$/);
  return err;
}

async function publish(client, category, endpoint = partner.url + "/rest") {
  return client.publishIntent({
    publicIdentifier: `@${unique("ts-" + category.toLowerCase())}`.slice(0, 33),
    name: `Echo ${category}`, description: "echoes a query", category, toolEndpoint: endpoint, feeRate: 0,
    parametersSchema: { type: "object", properties: { query: { type: "string" } }, required: ["query"] },
  });
}

test("onboarding, keys and the account", async () => {
  const { client, account } = await onboard();
  assert.match(account.apiKey, /^sb_test_/);
  assert.equal(account.scopes.length, 8);
  assert.equal(account.spendLimitUsd, 50);
  assert.match(account.wallets.evm, /^0x[0-9a-fA-F]{40}$/);

  const info = await client.account();
  assert.equal(info.userId, account.userId);
  assert.deepEqual(info.wallets, account.wallets);
  assert.equal(info.keys.length, 1);

  const minted = await client.createKey({ name: "reader", scopes: ["read"], spendLimitUsd: 2.5, rateLimitPerMinute: 10 });
  assert.ok(minted.secret.startsWith("sb_test_"));
  assert.deepEqual([minted.scopes, minted.spendLimitUsd, minted.rateLimitPerMinute], [["read"], 2.5, 10]);
  const { keys } = await client.listKeys();
  assert.equal(keys.length, 2);
  assert.ok(!JSON.stringify(keys).includes(minted.secret), "the key list shows a secret");

  const reader = client.withApiKey(minted.secret);
  assert.equal((await reader.account()).userId, account.userId);
  await rejects(reader.listIntents(), "FORBIDDEN", 403);

  const revoked = await client.revokeKey(minted.id);
  assert.ok(revoked.revokedAt);
  const gone = await rejects(reader.account(), "UNAUTHENTICATED", 401);
  assert.match(gone.message, /revoked/);
  await rejects(client.revokeKey("no-such-key"), "NOT_FOUND", 404);

  const anon = new Client({ baseUrl: server.url });
  await rejects(anon.verify({ email: "nobody@example.com", code: "00000000" }), "UNAUTHENTICATED", 401);
  const bad = await rejects(anon.signup({ email: "not an e-mail" }), "BAD_INPUT", 400);
  assert.ok(bad.details, "BAD_INPUT carries details");
  assert.match((await rejects(anon.account(), "UNAUTHENTICATED", 401)).message, /agent_signup/);
});

test("lookups and connected wallets", async () => {
  const { client, account } = await onboard();
  const { status, tokens } = await client.resolveToken({ query: "usdc on base" });
  assert.equal(status, "OK");
  assert.deepEqual([tokens[0].ticker, tokens[0].chain, tokens[0].decimals], ["USDC", "base", 6]);

  // Every price provider is a closed port: the service says it cannot quote, typed.
  const noRetry = new Client({ apiKey: account.apiKey, baseUrl: server.url, maxRetries: 0 });
  const e = await rejects(noRetry.price({ query: "ETH" }), "UNAVAILABLE", 503);
  assert.match(e.message, /cannot quote/);
  assert.equal(e.details.ticker, "ETH");
  await rejects(noRetry.balances({ chains: ["base", "solana"] }), "UNAVAILABLE", 503);
  await rejects(client.discover({ query: "" }), "BAD_INPUT", 400);

  const added = await client.addConnectedWallet({ address: "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed", label: "cold" });
  assert.deepEqual([added.wallet.family, added.wallet.label], ["evm", "cold"]);
  const list = await client.listConnectedWallets();
  assert.equal(list.wallets.length, 1);
  await client.removeConnectedWallet(list.wallets[0].address);
  await rejects(client.removeConnectedWallet(list.wallets[0].address), "NOT_FOUND", 404);
});

test("partner routes and invoke", async () => {
  const { client, account } = await onboard();
  const intent = await publish(client, "QUERY");
  assert.equal(intent.isActive, false);
  assert.equal(intent.ownerId, account.userId);
  await rejects(client.publishIntent({ publicIdentifier: intent.publicIdentifier, name: "dup", description: "dup", category: "QUERY", toolEndpoint: partner.url + "/rest", feeRate: 0 }), "CONFLICT", 409);

  const t = await client.testEndpoint({ intentId: intent.id });
  assert.deepEqual([t.roundTrip.verdict, t.probe.verdict, t.readyToActivate], ["OK", "PASS", true]);
  assert.equal((await client.setActive(intent.id, true)).intent.isActive, true);
  const { results } = await client.discover({ query: "echoes a query", limit: 50 });
  assert.ok(results.some((r) => r.handle === intent.publicIdentifier && r.own));

  const inv = await client.invoke({ message: `${intent.publicIdentifier} hello from TypeScript` });
  assert.equal(inv.success, true);
  assert.equal(inv.result.query, "hello from TypeScript");
  assert.equal(inv.result.requestId, inv.requestId);

  const upd = await client.updateIntent(intent.id, { name: "Echo (renamed)" });
  assert.equal(upd.intent.name, "Echo (renamed)");
  assert.match((await rejects(client.updateIntent(intent.id, { category: "PRICE" }), "BAD_INPUT", 400)).message, /immutable/);

  const earn = await client.earnings({ intentId: intent.id });
  assert.deepEqual([earn.byIntent.length, earn.byIntent[0].calls, earn.byIntent[0].succeeded], [1, 1, 1]);
  const bundle = await client.publishIntentBundle({
    intents: ["QUERY", "ANALYZE"].map((category) => ({
      publicIdentifier: `@${unique("ts-b")}`, name: category, description: "bundled", category, toolEndpoint: partner.url + "/rest", feeRate: 0,
    })),
  });
  assert.equal(bundle.intents.length, 2);
  assert.equal((await client.listIntents()).intents.length, 3);
  assert.ok((await client.archiveIntent(intent.id)).archivedAt);
  assert.equal((await client.listIntents()).intents.length, 2);
  assert.equal((await client.listIntents({ includeArchived: true })).intents.length, 3);
  await rejects(client.invoke({ message: `${intent.publicIdentifier} again` }), "NOT_FOUND", 404);
  await rejects(client.setActive("no-such-intent", true), "NOT_FOUND", 404);
});

test("write confirmation round trip", async () => {
  const { client } = await onboard();
  const intent = await publish(client, "EXECUTE");
  await client.setActive(intent.id, true);
  const input = { message: `${intent.publicIdentifier} do the thing` };

  const err = await rejects(client.invoke(input), "CONFIRMATION_REQUIRED", 409);
  const conf = confirmationFrom(err);
  assert.deepEqual([conf.handle, conf.category, conf.args.query], [intent.publicIdentifier, "EXECUTE", "do the thing"]);
  assert.equal(confirmationFrom(new Error("x")), undefined);

  const declined = await client.invokeWithConfirmation(input, () => false).catch((e) => e);
  assert.ok(declined instanceof NotApprovedError);
  assert.equal(declined.cause.code, "CONFIRMATION_REQUIRED");

  let asked;
  const inv = await client.invokeWithConfirmation(input, async (c) => ((asked = c), true));
  assert.equal(inv.success, true);
  assert.equal(inv.requestId, asked.requestId);
});

test("error paths: 413, 402, 429 with Retry-After, 503 from a partner that is gone", async () => {
  const { client } = await onboard();
  const intent = await publish(client, "QUERY");
  await client.setActive(intent.id, true);

  await rejects(client.invoke({ message: `${intent.publicIdentifier} big`, args: { query: "x".repeat((1 << 20) + 1) } }), "PAYLOAD_TOO_LARGE", 413);

  const tiny = await client.createKey({ name: "tiny", scopes: ["partner", "read"], spendLimitUsd: 0.0001, rateLimitPerMinute: 1 });
  const limited = client.withApiKey(tiny.secret);
  await rejects(limited.invoke({ message: `${intent.publicIdentifier} hi` }), "SPEND_LIMIT", 402);
  // The wait (60 s) is longer than the client waits by itself: thrown at once, typed.
  const rl = await rejects(limited.listKeys(), "RATE_LIMITED", 429);
  assert.ok(rl.retryAfterMs > 0 && rl.retryAfterMs <= 60_000, `retryAfterMs ${rl.retryAfterMs}`);

  const doomed = await startPartner(server.url);
  const gone = await publish(client, "QUERY", doomed.url + "/rest");
  await client.setActive(gone.id, true);
  await doomed.stop();
  assert.match((await rejects(client.invoke({ message: `${gone.publicIdentifier} anyone?` }), "UNAVAILABLE", 503)).message, /could not be reached/);
});

// faultProxy answers the first `faults` requests itself with `status` (Retry-After: 0) and
// forwards the rest to the live service; `hang` holds every request open.
async function faultProxy() {
  const p = { faults: 0, status: 503, requests: 0, hang: false };
  const srv = createServer(async (req, res) => {
    p.requests++;
    const chunks = [];
    for await (const c of req) chunks.push(c);
    if (p.hang) return;
    if (p.faults > 0) {
      p.faults--;
      res.writeHead(p.status, { "content-type": "application/json", "retry-after": "0", "x-request-id": "injected" });
      res.end(JSON.stringify({ error: { code: p.status === 429 ? "RATE_LIMITED" : "UNAVAILABLE", message: "injected", hint: "wait a moment" } }));
      return;
    }
    const headers = { ...req.headers };
    delete headers.host;
    delete headers["content-length"];
    const r = await fetch(server.url + req.url, { method: req.method, headers, body: chunks.length ? Buffer.concat(chunks) : undefined });
    res.writeHead(r.status, { "content-type": r.headers.get("content-type") ?? "application/json", "x-request-id": r.headers.get("x-request-id") ?? "" });
    res.end(Buffer.from(await r.arrayBuffer()));
  });
  await new Promise((r) => srv.listen(0, "127.0.0.1", r));
  p.url = `http://127.0.0.1:${srv.address().port}`;
  p.close = () => { srv.closeAllConnections(); return new Promise((r) => srv.close(r)); };
  return p;
}

for (const status of [429, 503]) {
  test(`retries on ${status}: safe calls only, at most maxRetries`, async () => {
    const { account } = await onboard();
    const p = await faultProxy();
    try {
      p.status = status;
      const code = status === 429 ? "RATE_LIMITED" : "UNAVAILABLE";
      const via = new Client({ apiKey: account.apiKey, baseUrl: p.url, retryBackoffMs: 1 });

      p.faults = 2;
      assert.equal((await via.listKeys()).keys.length, 1);
      assert.equal(p.requests, 3, "a GET is retried until it succeeds");

      p.requests = 0;
      p.faults = 5;
      const e = await rejects(via.listKeys(), code, status);
      assert.deepEqual([e.hint, e.requestId, p.requests], ["wait a moment", "injected", 3]);

      p.requests = 0;
      p.faults = 1;
      await rejects(via.setActive("no-such-intent", false), "NOT_FOUND", 404);
      assert.equal(p.requests, 2, "an idempotent POST is retried");

      p.requests = 0;
      p.faults = 1;
      await rejects(via.invoke({ message: "@nobody hi" }), code, status);
      p.faults = 1;
      await rejects(via.createKey({ name: "x", scopes: ["read"] }), code, status);
      assert.equal(p.requests, 2, "invoke and createKey are never retried");
    } finally {
      await p.close();
    }
  });
}

test("per-call timeout and AbortSignal", async () => {
  const p = await faultProxy();
  p.hang = true;
  try {
    const c = new Client({ apiKey: "sb_test_x", baseUrl: p.url });
    const t = await c.account({ timeoutMs: 50 }).catch((e) => e);
    assert.equal(t.name, "TimeoutError");
    const ac = new AbortController();
    const pending = c.account({ signal: ac.signal }).catch((e) => e);
    ac.abort();
    assert.equal((await pending).name, "AbortError");
    const slow = new Client({ apiKey: "sb_test_x", baseUrl: p.url, timeoutMs: 50 });
    assert.equal((await slow.listKeys().catch((e) => e)).name, "TimeoutError");
  } finally {
    await p.close();
  }
});

test("a constructor without baseUrl is refused", () => {
  assert.throws(() => new Client({ apiKey: "k" }), TypeError);
});
