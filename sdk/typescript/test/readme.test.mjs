// The README quickstart, run as written (the package name mapped to dist) against a live server.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { startServer } from "../../harness.mjs";
import { quickstarts, run } from "../../readme.mjs";

const readme = fileURLToPath(new URL("../README.md", import.meta.url));
const map = { "@switchboard-hq/client": fileURLToPath(new URL("../dist/index.js", import.meta.url)) };

let server;
before(async () => (server = await startServer()));
after(() => server?.stop());

test("README quickstart: signup, verify with the mailed code, resolve, a typed error", async () => {
  const qs = quickstarts(readme);
  assert.deepEqual(Object.keys(qs), ["signup", "use"]);
  const env = { SWITCHBOARD_URL: server.url, EMAIL: "readme-quickstart@example.com" };
  await run(qs.signup, { env, map });
  const out = await run(qs.use, { env: { ...env, CODE: await server.code(env.EMAIL) }, map });
  const lines = out.trim().split("\n");
  assert.equal(lines[0], "USDC base 0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913");
  assert.match(lines[1], /^UNAVAILABLE 503 [0-9a-f-]{36}$/);
});
