// The verifier against the repository's signing vectors (testdata/signing/vectors.json, the
// ones CI checks with Node and Go) and every rule of the spec, with keys made here.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createPrivateKey, generateKeyPairSync, sign } from "node:crypto";
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import { canonicalize, Verifier, VerificationError, Dedupe, partnerHandler, checkContentType } from "../dist/index.js";
import { Agent, request } from "node:http";

const vectors = JSON.parse(readFileSync(new URL("../../../testdata/signing/vectors.json", import.meta.url), "utf8"));
const envelopes = vectors.vectors.filter((v) => v.envelope);

async function refused(promise, status, pattern) {
  const e = await promise.then((v) => assert.fail(`accepted: ${JSON.stringify(v)}`), (e) => e);
  assert.ok(e instanceof VerificationError, String(e));
  assert.equal(e.status, status, e.message);
  if (pattern) assert.match(e.message, pattern);
  return e;
}

test("canonical JSON of every vector", () => {
  assert.ok(vectors.vectors.length > 20);
  for (const v of vectors.vectors) assert.equal(canonicalize(v.value), v.canonical, v.name);
});

test("every envelope vector verifies as REST and as MCP_HTTP headers", async () => {
  assert.ok(envelopes.length >= 4);
  for (const v of envelopes) {
    const env = v.envelope;
    const verifier = new Verifier({ publicKey: vectors.publicKeyPem, now: () => env.timestamp });
    const got = await verifier.verify(JSON.stringify(env), { "idempotency-key": env.requestId });
    assert.deepEqual(got, env, v.name);
    // from a Buffer and from a value a JSON body parser made, too
    assert.deepEqual(await verifier.verify(Buffer.from(JSON.stringify(env))), env);
    assert.deepEqual(await verifier.verify(JSON.parse(JSON.stringify(env))), env);
    const headers = ({
      "X-Service-Signature": env.serviceSignature, "X-Service-Timestamp": String(env.timestamp),
      "X-Service-Request-Id": env.requestId, "X-Service-Intent-Id": env.intentDefinitionId, "X-Service-User-Id": env.userId,
      "Idempotency-Key": env.requestId,
    });
    assert.deepEqual(await verifier.verifyHeaders(headers, env.args), env, v.name);
    if (/^[\x20-\x7e]*$/.test(env.userId + env.requestId + env.intentDefinitionId)) {
      assert.deepEqual(await verifier.verifyHeaders(new Headers(headers), env.args), env, `${v.name} (fetch Headers)`);
    }
  }
});

test("REST refusals: 401 for signature, window and Idempotency-Key; 400 for shape", async () => {
  const env = envelopes[0].envelope;
  const verifier = new Verifier({ publicKey: vectors.publicKeyPem, now: () => env.timestamp });
  const body = (patch) => JSON.stringify({ ...env, ...patch });
  await refused(verifier.verify(body({ serviceSignature: undefined })), 401, /missing/);
  await refused(verifier.verify(body({ serviceSignature: "" })), 401, /missing/);
  await refused(verifier.verify(body({ serviceSignature: Buffer.alloc(63).toString("base64") })), 401, /64 bytes/);
  await refused(verifier.verify(body({ serviceSignature: Buffer.alloc(65).toString("base64") })), 401, /64 bytes/);
  await refused(verifier.verify(body({ serviceSignature: env.serviceSignature.replace(/==$/, "") })), 401, /64 bytes/);
  await refused(verifier.verify(body({ serviceSignature: 42 })), 401);
  await refused(verifier.verify(body({ serviceSignature: Buffer.alloc(64, 7).toString("base64") })), 401, /does not verify/);
  await refused(verifier.verify(body({ args: { ...env.args, extra: 1 } })), 401, /does not verify/);
  await refused(verifier.verify(body({ userId: "someone-else" })), 401, /does not verify/);
  await refused(verifier.verify(body({}), { "idempotency-key": "another-id" }), 401, /Idempotency-Key/);
  await refused(verifier.verify(body({}), { "Idempotency-Key": ["another-id"] }), 401, /Idempotency-Key/);
  for (const skew of [5 * 60_000 + 1, -(5 * 60_000 + 1)]) {
    const late = new Verifier({ publicKey: vectors.publicKeyPem, now: () => env.timestamp + skew });
    await refused(late.verify(body({})), 401, /5 minutes/);
  }
  const edge = new Verifier({ publicKey: vectors.publicKeyPem, now: () => env.timestamp + 5 * 60_000 });
  assert.equal((await edge.verify(body({}))).requestId, env.requestId, "exactly 5 minutes is inside the window");
  await refused(verifier.verify("{not json"), 400);
  await refused(verifier.verify("[1,2]"), 400);
  await refused(verifier.verify("null"), 400);
});

// signed makes an envelope signed by a key of the test's own.
function keys() {
  const { publicKey, privateKey } = generateKeyPairSync("ed25519");
  return {
    pem: publicKey.export({ type: "spki", format: "pem" }),
    sign(fields) {
      const sig = sign(null, Buffer.from(canonicalize(fields)), privateKey).toString("base64");
      return { ...fields, serviceSignature: sig };
    },
  };
}

test("shape problems of a validly signed envelope are 400", async () => {
  const k = keys();
  const now = 1_700_000_000_000;
  const verifier = new Verifier({ publicKey: k.pem, now: () => now });
  const good = { requestId: "r-1", intentDefinitionId: "i-1", userId: "u-1", args: { q: 1 }, timestamp: now };
  assert.equal((await verifier.verify(JSON.stringify(k.sign(good)))).requestId, "r-1");
  for (const [name, patch] of [
    ["no requestId", { requestId: undefined }], ["numeric userId", { userId: 7 }], ["empty requestId", { requestId: "" }],
    ["args an array", { args: [1] }], ["args missing", { args: undefined }], ["timestamp a string", { timestamp: String(now) }],
  ]) {
    await refused(verifier.verify(JSON.stringify(k.sign({ ...good, ...patch }))), 400, undefined, name);
  }
  // A key that is not the service's: 401.
  const other = keys();
  await refused(verifier.verify(JSON.stringify(other.sign(good))), 401, /does not verify/);
});

test("MCP_HTTP header refusals", async () => {
  const env = envelopes[0].envelope;
  const verifier = new Verifier({ publicKey: vectors.publicKeyPem, now: () => env.timestamp });
  const base = {
    "x-service-signature": env.serviceSignature, "x-service-timestamp": String(env.timestamp),
    "x-service-request-id": env.requestId, "x-service-intent-id": env.intentDefinitionId, "x-service-user-id": env.userId,
  };
  await refused(verifier.verifyHeaders({ ...base, "x-service-signature": undefined }, env.args), 401, /missing/);
  await refused(verifier.verifyHeaders({ ...base, "x-service-signature": [env.serviceSignature, env.serviceSignature] }, env.args), 401, /more than one/);
  await refused(verifier.verifyHeaders({ ...base, "x-service-user-id": "other" }, env.args), 401, /does not verify/);
  await refused(verifier.verifyHeaders(base, { ...env.args, more: true }), 401, /does not verify/);
  await refused(verifier.verifyHeaders({ ...base, "idempotency-key": "x" }, env.args), 401, /Idempotency-Key/);
  await refused(verifier.verifyHeaders({ ...base, "x-service-timestamp": "soon" }, env.args), 400);
  await refused(verifier.verifyHeaders({ ...base, "x-service-intent-id": undefined }, env.args), 400);
  await refused(verifier.verifyHeaders(base, [1]), 400);
  const empty = envelopes.find((v) => Object.keys(v.envelope.args).length === 0).envelope;
  const v2 = new Verifier({ publicKey: vectors.publicKeyPem, now: () => empty.timestamp });
  const h2 = { ...base, "x-service-signature": empty.serviceSignature, "x-service-timestamp": String(empty.timestamp), "x-service-request-id": empty.requestId, "x-service-intent-id": empty.intentDefinitionId, "x-service-user-id": empty.userId };
  assert.equal((await v2.verifyHeaders(h2, null)).requestId, empty.requestId, "null arguments are {}");
  assert.equal((await v2.verifyHeaders(h2, undefined)).requestId, empty.requestId, "absent arguments are {}");
});

// keyServer serves the vectors' public key and counts fetches; `down` makes it answer 500.
async function keyServer() {
  const s = { fetches: 0, down: false };
  const srv = createServer((req, res) => {
    if (req.url === "/.well-known/service-keys") {
      res.writeHead(s.down ? 500 : 404).end("no key set"); // a service that publishes only the PEM key (not counted)
      return;
    }
    s.fetches++;
    if (s.down || req.url !== "/.well-known/service-public-key") {
      res.writeHead(500).end("down");
      return;
    }
    res.writeHead(200, { "content-type": "application/x-pem-file", "cache-control": "public, max-age=3600" }).end(vectors.publicKeyPem);
  });
  await new Promise((r) => srv.listen(0, "127.0.0.1", r));
  s.url = `http://127.0.0.1:${srv.address().port}`;
  s.close = () => new Promise((r) => srv.close(r));
  return s;
}

// signedAt signs an envelope at time t with the vectors' TEST-ONLY private key.
const testKey = createPrivateKey(readFileSync(new URL("../../../testdata/signing/TEST-ONLY-private-key.pem", import.meta.url)));
function signedAt(t) {
  const fields = { requestId: `r-${t}`, intentDefinitionId: "i-1", userId: "u-1", args: { query: "hi" }, timestamp: t };
  return JSON.stringify({ ...fields, serviceSignature: sign(null, Buffer.from(canonicalize(fields)), testKey).toString("base64") });
}

test("the public key is fetched, cached one hour, kept stale when a refresh fails, 503 when never fetched", async () => {
  const ks = await keyServer();
  try {
    let now = 1_700_000_000_000;
    const warnings = [];
    const logger = { warn: (...a) => warnings.push(a.join(" ")) };
    const verifier = new Verifier({ serviceUrl: ks.url, now: () => now, logger });
    await verifier.verify(signedAt(now));
    await verifier.verify(signedAt(now));
    assert.equal(ks.fetches, 1, "cached");
    now += 60 * 60 * 1000 - 1;
    await verifier.verify(signedAt(now));
    assert.equal(ks.fetches, 1, "still cached just before the hour");
    now += 2;
    await verifier.verify(signedAt(now));
    assert.equal(ks.fetches, 2, "fetched again after the hour");

    // The service is down at the next refresh: the stale key keeps working, with a warning,
    // and the refresh is not retried on every call.
    ks.down = true;
    now += 60 * 60 * 1000 + 1;
    await verifier.verify(signedAt(now));
    assert.equal(ks.fetches, 3);
    assert.ok(warnings.some((w) => w.includes("using the cached key")), warnings.join("\n"));
    await verifier.verify(signedAt(now));
    assert.equal(ks.fetches, 3, "no refresh attempt on every call while stale");

    // Never fetched and the service is down: 503, and a flood of calls is not a fetch flood.
    const cold = new Verifier({ serviceUrl: ks.url, now: () => now, logger });
    await refused(cold.verify(signedAt(now)), 503, /not available/);
    const before = ks.fetches;
    for (let i = 0; i < 5; i++) await refused(cold.verify(signedAt(now)), 503);
    assert.equal(ks.fetches, before, "no fetch while waiting to retry");
    ks.down = false;
    now += 5_001;
    assert.equal((await cold.verify(signedAt(now))).args.query, "hi", "recovers once the key can be fetched");
  } finally {
    await ks.close();
  }
});

test("a public key that is not Ed25519 is refused", () => {
  const { publicKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
  assert.throws(() => new Verifier({ publicKey: publicKey.export({ type: "spki", format: "pem" }) }), /not Ed25519/);
  assert.throws(() => new Verifier({}), /exactly one/);
});

test("Dedupe replays the first answer for a requestId", async () => {
  let now = 0;
  const d = new Dedupe(60_000, () => now);
  let runs = 0;
  const work = async () => [200, { n: ++runs }];
  assert.deepEqual(await d.run("a", work), [200, { n: 1 }]);
  assert.deepEqual(await d.run("a", work), [200, { n: 1 }]);
  assert.deepEqual(await d.run("b", work), [200, { n: 2 }]);
  now = 60_001;
  assert.deepEqual(await d.run("a", work), [200, { n: 3 }]);
});

// Key rotation: with the key set cached, a call signed by the next key verifies (signing
// switched after the set was fetched, without another fetch); a previous key verifies receipts
// only; a key outside the set verifies nothing.
test("the key set carries a verifier through a key rotation", async () => {
  const pair = () => generateKeyPairSync("ed25519");
  const [cur, next, prev, stranger] = [pair(), pair(), pair(), pair()];
  const pem = (k) => k.publicKey.export({ type: "spki", format: "pem" });
  let fetches = 0;
  const fakeFetch = async (url) => {
    fetches++;
    if (String(url).endsWith("/.well-known/service-keys")) {
      return new Response(JSON.stringify({ keys: [
        { kid: "c", status: "current", publicKeyPem: pem(cur) },
        { kid: "n", status: "next", publicKeyPem: pem(next) },
        { kid: "p", status: "previous", publicKeyPem: pem(prev) },
      ] }), { status: 200, headers: { "content-type": "application/json" } });
    }
    return new Response("not found", { status: 404 });
  };
  const v = new Verifier({ serviceUrl: "https://switchboard.test", fetch: fakeFetch });
  const call = (key) => {
    const env = { requestId: "11111111-1111-4111-8111-111111111111", intentDefinitionId: "i", userId: "u", args: {}, timestamp: Date.now() };
    return { ...env, serviceSignature: sign(null, Buffer.from(canonicalize(env), "utf8"), key.privateKey).toString("base64") };
  };
  const receipt = (key) => {
    const r = { requestId: "r", keyId: "x" };
    return { receipt: r, signature: sign(null, Buffer.from(canonicalize(r), "utf8"), key.privateKey).toString("base64") };
  };
  await v.verify(JSON.stringify(call(cur)));
  await v.verify(JSON.stringify(call(next))); // signing switched: the cached set has it
  await assert.rejects(v.verify(JSON.stringify(call(prev))), VerificationError);
  await assert.rejects(v.verify(JSON.stringify(call(stranger))), VerificationError);
  await v.verifyReceipt(receipt(prev));
  await assert.rejects(v.verifyReceipt(receipt(stranger)), VerificationError);
  assert.equal(fetches, 1, "one fetch of the set served every check");
});

// post sends body to url on agent and resolves to the status, the parsed answer, its
// Connection header and whether the request went out on a socket an earlier one used.
function post(url, agent, body, headers = {}) {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: "POST", agent, headers: { "content-type": "application/json", ...headers } }, (res) => {
      let text = "";
      res.setEncoding("utf8").on("data", (d) => (text += d)).on("end", () =>
        resolve({ status: res.statusCode, body: JSON.parse(text), connection: res.headers.connection, reused: req.reusedSocket }));
    });
    req.on("error", reject);
    req.end(body);
  });
}

test("partnerHandler answers a body over 1 MiB with 413 on a connection it keeps, and text/plain with 415", async () => {
  const env = envelopes[0].envelope;
  const verifier = new Verifier({ publicKey: vectors.publicKeyPem, now: () => env.timestamp });
  const srv = createServer(partnerHandler(verifier, () => ({ ok: true }), { feeRate: 0, log: false }));
  await new Promise((r) => srv.listen(0, "127.0.0.1", r));
  const url = `http://127.0.0.1:${srv.address().port}/`;
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  try {
    const ok = await post(url, agent, JSON.stringify(env));
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
    // 2 MiB: read to the end and refused in the failure envelope, the connection kept (the
    // next request reuses its socket), as the battery's "2 MiB body" check wants.
    const big = await post(url, agent, JSON.stringify({ ...env, args: { query: "a".repeat(2 << 20) } }));
    assert.deepEqual([big.status, big.body.error.code, big.reused], [413, "PAYLOAD_TOO_LARGE", true]);
    const after = await post(url, agent, JSON.stringify(env));
    assert.deepEqual([after.status, after.reused], [200, true]);
    // text/plain (and any non-JSON type) is 415; a charset parameter on application/json is fine.
    const plain = await post(url, agent, JSON.stringify(env), { "content-type": "text/plain" });
    assert.deepEqual([plain.status, plain.body.error.code], [415, "UNSUPPORTED_MEDIA_TYPE"]);
    assert.equal((await post(url, agent, JSON.stringify(env), { "content-type": "Application/JSON; charset=utf-8" })).status, 200);
    // Declared far over the limit: refused before it is read, and the connection closed.
    const huge = await new Promise((resolve, reject) => {
      const req = request(url, { method: "POST", headers: { "content-type": "application/json", "content-length": String(64 << 20) } }, (res) => {
        res.resume().on("end", () => resolve({ status: res.statusCode, connection: res.headers.connection }));
      });
      req.on("error", reject);
      req.write("{");
    });
    assert.deepEqual(huge, { status: 413, connection: "close" });
  } finally {
    agent.destroy();
    srv.closeAllConnections();
    await new Promise((r) => srv.close(r));
  }
});

test("checkContentType lets application/json and no Content-Type through", () => {
  for (const ct of [undefined, "application/json", "application/json; charset=utf-8", " APPLICATION/JSON "]) checkContentType(ct === undefined ? {} : { "content-type": ct });
  for (const ct of ["text/plain", "application/x-www-form-urlencoded", "application/jsonx", "multipart/form-data; boundary=x"]) {
    assert.throws(() => checkContentType(new Headers({ "content-type": ct })), (e) => e instanceof VerificationError && e.status === 415, ct);
  }
});
