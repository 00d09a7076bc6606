// Switchboard's events against a live `switchboard serve`: an endpoint created with the REST
// route receives key.created when a key is minted; the official `standardwebhooks` package
// verifies its v1 signature with the whsec_ secret shown once, unmodified, and the kit's
// verifyWebhook its v1a signature with the service's published key; a tampered body or a
// stale timestamp fails both.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { Webhook } from "standardwebhooks";
import { startServer, freePort } from "../../harness.mjs";
import { createVerifier } from "../dist/index.js";

let server, key;
const closers = [];
before(async () => {
  server = await startServer();
  const email = `webhooks-${process.pid}@example.com`;
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

test("a key.created event verifies with standardwebhooks (v1) and the partner kit (v1a)", async () => {
  let resolve;
  const arrived = new Promise((r) => (resolve = r));
  const port = await freePort();
  const receiver = createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      res.writeHead(204).end();
      resolve({ headers: req.headers, body: Buffer.concat(chunks).toString("utf8") });
    });
  });
  await new Promise((r) => receiver.listen(port, "127.0.0.1", r));
  closers.push(() => { receiver.closeAllConnections(); return new Promise((r) => receiver.close(r)); });

  const created = await api("POST", "/v1/webhooks/endpoints", { url: `http://127.0.0.1:${port}/events`, eventTypes: ["key.created"] });
  assert.match(created.secret, /^whsec_/);
  assert.match(created.publicKey, /^whpk_/);
  const minted = await api("POST", "/v1/keys", { name: "hooked", scopes: ["read"] });
  const { headers, body } = await Promise.race([arrived, new Promise((_, no) => setTimeout(() => no(new Error("no event within 20 s")), 20_000))]);

  // v1: the official package, as a receiver would use it, with the secret as shown.
  const wh = new Webhook(created.secret);
  const payload = wh.verify(body, headers);
  assert.equal(payload.type, "key.created");
  assert.equal(payload.data.keyId, minted.id);
  assert.equal(payload.data.name, "hooked");
  assert.ok(!body.includes(minted.secret), "an event never carries a key's secret");

  // v1a: the kit, with the key it fetches from the service.
  const verifier = createVerifier({ serviceUrl: server.url });
  const event = await verifier.verifyWebhook(body, headers);
  assert.equal(event.id, headers["webhook-id"]);
  assert.equal(event.type, "key.created");
  assert.equal(event.data.keyId, minted.id);

  // Tampered, or replayed later: refused by both.
  const tampered = body.replace("hooked", "hacked");
  assert.throws(() => wh.verify(tampered, headers));
  await assert.rejects(verifier.verifyWebhook(tampered, headers), { status: 401 });
  const later = createVerifier({ serviceUrl: server.url, now: () => Date.now() + 10 * 60 * 1000 });
  await assert.rejects(later.verifyWebhook(body, headers), { status: 401 });
  await assert.rejects(verifier.verifyWebhook(JSON.parse(body), headers), { status: 400 });

  // The delivery is listed with its attempt.
  const list = await api("GET", "/v1/webhooks/deliveries");
  const d = list.deliveries.find((x) => x.webhookId === headers["webhook-id"]);
  assert.equal(d?.state, "delivered");
  assert.equal(d.attempts[0].status, 204);
});
