// A fresh `switchboard serve` on SQLite for the SDK tests (the interop harness's setup): a
// temporary data directory, a free loopback port, the development mailer (codes read from the
// log), every upstream pointed at a closed port, and local partner endpoints allowed so a
// partner on loopback can be published and tested. startPartner runs the example partner
// (cmd/example-partner) against it. sdk/run builds both binaries.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

const bin = process.env.SWITCHBOARD_BIN;
const partnerBin = process.env.EXAMPLE_PARTNER_BIN;

const offline = Object.fromEntries(
  ["ETHEREUM", "ARBITRUM", "BASE", "POLYGON", "OPTIMISM", "AVALANCHE", "BSC"].map((c) => [`SWITCHBOARD_RPC_${c}`, "http://127.0.0.1:9"]),
);
Object.assign(offline, {
  SWITCHBOARD_SOLANA_RPC_URL: "http://127.0.0.1:9",
  SWITCHBOARD_COINGECKO_URL: "http://127.0.0.1:9",
  SWITCHBOARD_DEFILLAMA_URL: "http://127.0.0.1:9",
  SWITCHBOARD_JUPITER_URL: "http://127.0.0.1:9",
});

export function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
    s.on("error", reject);
  });
}

async function waitFor(url, ok, child, log) {
  for (let i = 0; ; i++) {
    try {
      const r = await fetch(url, { method: "GET" });
      if (ok(r.status)) return;
    } catch {}
    if (child.exitCode !== null || i > 200) throw new Error(`${url} did not come up:\n${log()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

// env adds to (or overrides) the server's environment, e.g. SWITCHBOARD_TASK_AFTER.
export async function startServer(env = {}) {
  if (!bin) throw new Error("set SWITCHBOARD_BIN to a built switchboard binary (sdk/run does)");
  const dataDir = mkdtempSync(join(tmpdir(), "switchboard-sdk-"));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const environ = {
    ...process.env, ...offline,
    SWITCHBOARD_DATA_DIR: dataDir, SWITCHBOARD_DATABASE_URL: "", SWITCHBOARD_SMTP_URL: "", SWITCHBOARD_API_KEY: "",
    SWITCHBOARD_ENV: "test", SWITCHBOARD_ALLOW_LOCAL_ENDPOINTS: "true",
    SWITCHBOARD_ADDR: `127.0.0.1:${port}`, SWITCHBOARD_BASE_URL: url, ...env,
  };
  const child = spawn(bin, ["serve"], { env: environ, stdio: ["ignore", "ignore", "pipe"] });
  let log = "";
  child.stderr.setEncoding("utf8");
  child.stderr.on("data", (d) => (log += d));
  const exited = new Promise((resolve) => child.on("exit", resolve));
  await waitFor(`${url}/healthz`, (s) => s === 200, child, () => log);
  return {
    url,
    log: () => log,
    // code returns the newest one-time code the development mailer logged for email.
    async code(email) {
      for (let i = 0; i < 100; i++) {
        const lines = log.split("\n").filter((l) => l.includes("DEVELOPMENT MAILER") && l.includes(email));
        const m = lines.length && /\b(\d{8})\b/.exec(JSON.parse(lines.at(-1)).text);
        if (m) return m[1];
        await new Promise((r) => setTimeout(r, 50));
      }
      throw new Error(`no code logged for ${email}:\n${log}`);
    },
    async stop() {
      child.kill("SIGTERM");
      await exited;
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

// startPartner runs the example partner verifying with serviceUrl's public key; its REST
// endpoint is `${url}/rest` (parametersSchema {query}).
export async function startPartner(serviceUrl) {
  if (!partnerBin) throw new Error("set EXAMPLE_PARTNER_BIN to a built example-partner binary (sdk/run does)");
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const child = spawn(partnerBin, ["-service-url", serviceUrl, "-addr", `127.0.0.1:${port}`], { stdio: ["ignore", "ignore", "pipe"] });
  let log = "";
  child.stderr.setEncoding("utf8");
  child.stderr.on("data", (d) => (log += d));
  const exited = new Promise((resolve) => child.on("exit", resolve));
  await waitFor(`${url}/rest`, (s) => s > 0, child, () => log);
  return {
    url,
    async stop() {
      child.kill("SIGTERM");
      await exited;
    },
  };
}
