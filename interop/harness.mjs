// A fresh `switchboard serve` on SQLite for the interop checks: a temporary data directory,
// a free loopback port, the development mailer (codes read from the log, as an operator
// would), and nothing reaching the internet.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

export const bin = process.env.SWITCHBOARD_BIN;
if (!bin) throw new Error("set SWITCHBOARD_BIN to a built switchboard binary (interop/run does)");

// Every upstream points at a closed port: the checks must not depend on the network.
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

// baseEnv is the environment both `serve` and `stdio` run with: the same data directory, so a
// key minted over HTTP works over stdio.
export function baseEnv(dataDir) {
  const env = { ...process.env, ...offline, SWITCHBOARD_DATA_DIR: dataDir, SWITCHBOARD_DATABASE_URL: "", SWITCHBOARD_SMTP_URL: "", SWITCHBOARD_API_KEY: "" };
  return env;
}

// startServer runs `switchboard serve`; extraEnv adds to its environment.
export async function startServer(extraEnv = {}) {
  const dataDir = mkdtempSync(join(tmpdir(), "switchboard-interop-"));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const env = { ...baseEnv(dataDir), SWITCHBOARD_ADDR: `127.0.0.1:${port}`, SWITCHBOARD_BASE_URL: url, ...extraEnv };
  const child = spawn(bin, ["serve"], { env, stdio: ["ignore", "ignore", "pipe"] });
  let log = "";
  child.stderr.setEncoding("utf8");
  child.stderr.on("data", (d) => (log += d));
  const exited = new Promise((resolve) => child.on("exit", resolve));
  for (let i = 0; ; i++) {
    try {
      const r = await fetch(`${url}/healthz`);
      if (r.ok) break;
    } catch {}
    if (child.exitCode !== null || i > 100) throw new Error(`switchboard serve did not come up:\n${log}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    url,
    dataDir,
    log: () => log,
    // code returns the newest one-time code the development mailer logged for email.
    // The log reaches us through a pipe, so it may trail the HTTP answer a little.
    async code(email) {
      for (let i = 0; i < 50; i++) {
        const lines = log.split("\n").filter((l) => l.includes("DEVELOPMENT MAILER") && l.includes(email));
        const m = lines.length && /\b(\d{8})\b/.exec(JSON.parse(lines.at(-1)).text);
        if (m) return m[1];
        await new Promise((r) => setTimeout(r, 100));
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

// onboard gets a key through the REST door (signup, then verify with the logged code).
export async function onboard(server, email) {
  const post = (path, body) =>
    fetch(server.url + path, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) }).then(async (r) => {
      const j = await r.json();
      if (!r.ok) throw new Error(`${path}: ${r.status} ${JSON.stringify(j)}`);
      return j;
    });
  await post("/v1/agents/signup", { email });
  return post("/v1/agents/verify", { email, code: await server.code(email) });
}
