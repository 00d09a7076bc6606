// Long-running calls as tasks (issue 50) with @switchboard-hq/client against a live serve
// whose task threshold is 5 s (SWITCHBOARD_TASK_AFTER) and the example partner behind a
// proxy that holds a call as long as its query asks ("sleep-1500"), and answers 500 for
// "fail": invoke with async answers the task at once, invokeAndWait polls it to the call's
// answer with progress, its error is thrown as the call would have thrown it, a cancelled
// task is refunded, and a short intent answers in its request all the same.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { startServer, startPartner } from "../../harness.mjs";
import { Client, SwitchboardError, isTask } from "../dist/index.js";

let server, partner, proxy, n = 0;
before(async () => {
  server = await startServer({ SWITCHBOARD_TASK_AFTER: "5s" });
  partner = await startPartner(server.url);
  proxy = await slowProxy(partner.url + "/rest");
});
after(async () => {
  await proxy?.close();
  await partner?.stop();
  await server?.stop();
});

const unique = (p) => `${p}-${process.pid}-${++n}`;

// slowProxy forwards every request to target, after the delay its body names (sleep-<ms>);
// a body with "fail" is answered 500 after it. A request whose caller goes away is dropped.
async function slowProxy(target) {
  const p = { arrived: 0, forwarded: 0, dropped: 0 };
  const srv = createServer(async (req, res) => {
    const chunks = [];
    for await (const c of req) chunks.push(c);
    const body = Buffer.concat(chunks);
    p.arrived++;
    const ms = Number(/sleep-(\d+)/.exec(body.toString())?.[1] ?? 0);
    const gone = await new Promise((resolve) => {
      const t = setTimeout(() => resolve(false), ms);
      res.on("close", () => { clearTimeout(t); resolve(true); });
    });
    if (gone) return void p.dropped++;
    if (body.includes("fail")) {
      res.writeHead(500, { "content-type": "text/plain" });
      return void res.end("partner broke");
    }
    const headers = { ...req.headers };
    delete headers.host;
    delete headers["content-length"];
    const r = await fetch(target, { method: req.method, headers, body: body.length ? body : undefined });
    p.forwarded++;
    res.writeHead(r.status, { "content-type": r.headers.get("content-type") ?? "application/json" });
    res.end(Buffer.from(await r.arrayBuffer()));
  });
  await new Promise((r) => srv.listen(0, "127.0.0.1", r));
  p.url = `http://127.0.0.1:${srv.address().port}/rest`;
  p.close = () => { srv.closeAllConnections(); return new Promise((r) => srv.close(r)); };
  return p;
}

// until polls cond for up to 10 s and fails with what it waited for.
async function until(cond, what) {
  for (const end = Date.now() + 10_000; !cond(); await new Promise((r) => setTimeout(r, 20))) {
    if (Date.now() > end) assert.fail(`waited 10 s: ${what}`);
  }
}

async function onboard() {
  const email = `${unique("ts-tasks")}@example.com`;
  const anon = new Client({ baseUrl: server.url });
  await anon.signup({ email });
  const account = await anon.verify({ email, code: await server.code(email) });
  return new Client({ apiKey: account.apiKey, baseUrl: server.url });
}

async function intent(client, timeoutMs) {
  const it = await client.publishIntent({
    publicIdentifier: `@${unique("ts-long")}`.slice(0, 33), name: "Slow echo", description: "echoes a query, slowly",
    category: "QUERY", toolEndpoint: proxy.url, feeRate: 0, timeoutMs,
    parametersSchema: { type: "object", properties: { query: { type: "string" } }, required: ["query"] },
  });
  await client.setActive(it.id, true);
  return it.publicIdentifier;
}

test("invoke with async answers a task; invokeAndWait polls it to the call's answer", async () => {
  const client = await onboard();
  const handle = await intent(client, 20_000);

  const started = await client.invoke({ message: `${handle} echo`, args: { query: "sleep-1500" } }, { async: true });
  assert.ok(isTask(started), `not a task: ${JSON.stringify(started)}`);
  assert.equal(started.status, "working");
  assert.match(started.taskId, /^[0-9a-f-]{36}$/);
  const done = await client.waitTask(started.taskId);
  assert.equal(done.status, "completed");
  assert.equal(done.result.success, true);
  assert.equal(done.result.requestId, started.requestId);

  const seen = [];
  const answer = await client.invokeAndWait({ message: `${handle} echo`, args: { query: "sleep-1500 again" } }, (t) => seen.push(t.status));
  assert.equal(isTask(answer), false);
  assert.equal(answer.success, true);
  assert.equal(answer.handle, handle);
  assert.match(JSON.stringify(answer.result), /sleep-1500 again/);
  assert.equal(seen[0], "working");
  assert.equal(seen.at(-1), "completed");
  assert.equal(seen.filter((s) => s === "completed").length, 1);
  const usage = await client.usage({});
  const rows = usage.rows.filter((r) => r.requestId === answer.requestId);
  assert.equal(rows.length, 1, "the call is recorded once");
  assert.ok(rows[0].chargeMicro > 0, `charged on completion: ${JSON.stringify(rows[0])}`);
});

test("invokeAndWait throws the call's error; a cancelled task is refunded", async () => {
  const client = await onboard();
  const handle = await intent(client, 20_000);

  const err = await client.invokeAndWait({ message: `${handle} echo`, args: { query: "sleep-1000 fail" } }).then(
    (v) => assert.fail(`expected an error, got ${JSON.stringify(v)}`), (e) => e);
  assert.ok(err instanceof SwitchboardError, `not a SwitchboardError: ${err}`);
  assert.equal(err.operation, "invoke_partner_message");
  assert.equal(err.code, "UNAVAILABLE", err.message);
  assert.match(err.message, /HTTP 500/);
  assert.equal(err.status, 503);
  assert.match(err.requestId, /^[0-9a-f-]{36}$/);

  const dropped = proxy.dropped, arrived = proxy.arrived;
  const started = await client.invoke({ message: `${handle} echo`, args: { query: "sleep-60000" } }, { async: true });
  assert.ok(isTask(started));
  // Cancel once the partner holds the call, so there is a call to stop.
  await until(() => proxy.arrived > arrived, "the call reached the partner");
  const asked = await client.cancelTask(started.taskId);
  assert.equal(asked.taskId, started.taskId);
  const ended = await client.waitTask(started.taskId);
  assert.equal(ended.status, "cancelled");
  assert.ok(ended.error, "a cancelled task carries the call's error");
  // The proxy hears the closed connection on its own clock, after the task has ended.
  await until(() => proxy.dropped > dropped, "the partner call was stopped");
  const row = (await client.usage({})).rows.find((r) => r.requestId === started.requestId);
  assert.deepEqual([row.chargeMicro, row.outcome], [0, "cancelled"], JSON.stringify(row));
  const seen = [];
  await assert.rejects(client.invokeAndWait({ message: `${handle} echo`, args: { query: "sleep-60000 too" } }, (t) => {
    seen.push(t.status);
    if (seen.length === 1) client.cancelTask(t.taskId);
  }), (e) => e instanceof SwitchboardError && e.operation === "invoke_partner_message");
  assert.equal(seen.at(-1), "cancelled");
});

test("a short intent answers in its request, async or not; an unknown task is NOT_FOUND", async () => {
  const client = await onboard();
  const handle = await intent(client, 2_000);
  const answer = await client.invoke({ message: `${handle} echo`, args: { query: "quick" } }, { async: true });
  assert.equal(isTask(answer), false);
  assert.equal(answer.success, true);
  const waited = await client.invokeAndWait({ message: `${handle} echo`, args: { query: "quick" } });
  assert.equal(waited.success, true);
  const e = await client.task("00000000-0000-4000-8000-000000000000").catch((x) => x);
  assert.ok(e instanceof SwitchboardError);
  assert.deepEqual([e.code, e.status], ["NOT_FOUND", 404]);
});
