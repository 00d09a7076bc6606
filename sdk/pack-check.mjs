// npm pack of each SDK package installs in an empty project and works there: the tarball
// holds dist (JS + .d.ts) and the README only, a TypeScript consumer type-checks against the
// installed declarations, and the README quickstarts run unmodified against a live server
// (the partner quickstart passes the service's test-endpoint check).
//   SWITCHBOARD_BIN=... node sdk/pack-check.mjs
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { startServer, freePort } from "./harness.mjs";
import { quickstarts, run, start } from "./readme.mjs";

const sdk = fileURLToPath(new URL(".", import.meta.url));
const tsc = join(sdk, "typescript/node_modules/typescript/bin/tsc");
const npm = (args, cwd) => execFileSync("npm", args, { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });

function install(pkgDir, consumerTs, extra = []) {
  const pkg = JSON.parse(readFileSync(join(pkgDir, "package.json"), "utf8"));
  const dir = mkdtempSync(join(tmpdir(), "sdk-pack-"));
  const [packed] = JSON.parse(npm(["pack", "--json", "--pack-destination", dir], pkgDir));
  const files = packed.files.map((f) => f.path).sort();
  assert.ok(files.includes("dist/index.js") && files.includes("dist/index.d.ts") && files.includes("README.md"), `${pkg.name}: ${files}`);
  assert.ok(files.every((f) => f.startsWith("dist/") || ["README.md", "package.json"].includes(f)), `${pkg.name} packs more than dist and README: ${files}`);
  const project = join(dir, "project");
  execFileSync("mkdir", [project]);
  writeFileSync(join(project, "package.json"), JSON.stringify({ name: "pack-check", private: true, type: "module" }));
  npm(["install", "--prefer-offline", "--no-audit", "--no-fund", "--loglevel=error", join(dir, packed.filename), ...extra], project);
  assert.ok(existsSync(join(project, "node_modules", pkg.name, "dist/index.d.ts")));
  writeFileSync(join(project, "consumer.ts"), consumerTs);
  writeFileSync(join(project, "tsconfig.json"), JSON.stringify({
    compilerOptions: { target: "ES2022", module: "NodeNext", moduleResolution: "NodeNext", strict: true, noEmit: true, lib: ["ES2022", "DOM"], types: extra.length ? ["node"] : [], skipLibCheck: false },
    files: ["consumer.ts"],
  }));
  execFileSync(process.execPath, [tsc, "-p", project], { encoding: "utf8" });
  console.log(`${pkg.name}: ${packed.filename} (${files.length} files) installs in an empty project and type-checks`);
  return { dir, project };
}

const server = await startServer();
const cleanup = [];
try {
  // The client: the README quickstart, unmodified, in the project.
  const client = install(join(sdk, "typescript"), `
import { Client, SwitchboardError, type Account, type Invocation } from "@switchboard-hq/client";
const c = new Client({ apiKey: "k", baseUrl: "https://switchboard.example" });
const a: Promise<Account> = c.verify({ email: "a@example.com", code: "12345678" });
const i: Promise<Invocation> = c.invoke({ message: "@x hi" });
const code: string | undefined = new SwitchboardError({ code: "BAD_INPUT", message: "m", status: 400, operation: "x" }).requestId;
void a; void i; void code;
`);
  cleanup.push(client.dir);
  const qs = quickstarts(join(sdk, "typescript/README.md"));
  const env = { SWITCHBOARD_URL: server.url, EMAIL: "pack-check@example.com" };
  await run(qs.signup, { dir: client.project, env });
  const out = await run(qs.use, { dir: client.project, env: { ...env, CODE: await server.code(env.EMAIL) } });
  assert.match(out, /^USDC base 0x/m);
  assert.match(out, /^UNAVAILABLE 503 /m);
  console.log("@switchboard-hq/client: README quickstart ran from the installed tarball");

  // The partner kit: the README quickstart partner passes test-endpoint.
  const partner = install(join(sdk, "partner-node"), `
import { createVerifier, type Envelope, VerificationError } from "@switchboard-hq/partner";
const v = createVerifier({ serviceUrl: "https://switchboard.example" });
const e: Promise<Envelope> = v.verify("{}", { "idempotency-key": "x" });
const s: number = new VerificationError(401, "UNAUTHORIZED", "m").status;
void e; void s;
`, ["@types/node@22.20.5"]); // a Node TypeScript project has Node's types
  cleanup.push(partner.dir);
  const port = await freePort();
  const p = start(quickstarts(join(sdk, "partner-node/README.md")).rest, { dir: partner.project, env: { SWITCHBOARD_URL: server.url, PORT: String(port) } });
  try {
    for (let i = 0; ; i++) {
      try { await fetch(`http://127.0.0.1:${port}`); break; } catch { if (i > 100) throw new Error(p.output()); await new Promise((r) => setTimeout(r, 50)); }
    }
    const email = "pack-check-partner@example.com";
    const post = (path, body, key) => fetch(server.url + path, { method: "POST", headers: { "content-type": "application/json", ...(key ? { "x-api-key": key } : {}) }, body: JSON.stringify(body) }).then((r) => r.json());
    await post("/v1/agents/signup", { email });
    const { apiKey } = await post("/v1/agents/verify", { email, code: await server.code(email) });
    const t = await post("/v1/partner/test-endpoint", { toolEndpoint: `http://127.0.0.1:${port}`, args: { query: "packed" } }, apiKey);
    assert.equal(t.roundTrip?.verdict, "OK", JSON.stringify(t));
    assert.equal(t.probe.verdict, "PASS", JSON.stringify(t.probe));
    assert.deepEqual(t.roundTrip.response.result, { answer: "You asked: packed" });
    // and every check of the battery (a 2 MiB body 413, text/plain 415, ...), not only the probe
    assert.deepEqual(t.checks.filter((c) => c.verdict !== "PASS"), [], "the battery");
    console.log(`@switchboard-hq/partner: README quickstart from the installed tarball passes test-endpoint (${t.checks.length} battery checks PASS)`);
  } finally {
    p.child.kill();
    await p.exited;
  }
} finally {
  await server.stop();
  for (const d of cleanup) rmSync(d, { recursive: true, force: true });
}
