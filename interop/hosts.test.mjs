// The MCP host snippets of docs/mcp-hosts.md, each read out of that page and checked two ways: it has the
// shape its host's configuration format requires, and the official TypeScript MCP client,
// given exactly those settings (placeholders replaced), connects and calls account_get.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { bin, baseEnv, onboard, startServer } from "./harness.mjs";

const page = readFileSync(join(import.meta.dirname, "..", "docs", "mcp-hosts.md"), "utf8");
const snippets = [...page.matchAll(/<!-- host: ([a-z-]+) (http|stdio)(?: toolsets=([a-z,]+))? -->\n```json\n([\s\S]*?)```/g)].map((m) => ({
  host: m[1],
  transport: m[2],
  toolsets: m[3],
  config: JSON.parse(m[4]),
}));

// What each host's format requires of one server entry, and where the entries live.
const formats = {
  "claude-code": { list: "mcpServers", http: (s) => s.type === "http" && s.url, stdio: (s) => s.type === "stdio" && s.command },
  cursor: { list: "mcpServers", http: (s) => s.url && !s.command, stdio: (s) => s.command && !s.url },
  vscode: { list: "servers", http: (s) => s.type === "http" && s.url, stdio: (s) => s.type === "stdio" && s.command },
  "claude-desktop": { list: "mcpServers", stdio: (s) => s.command && !s.url },
};

let server, account;
before(async () => {
  server = await startServer();
  account = await onboard(server, "hosts@example.com");
});
after(() => server?.stop());

test("docs/mcp-hosts.md has a snippet for every host and transport it promises", () => {
  const have = snippets.map((s) => `${s.host} ${s.transport}${s.toolsets ? ` toolsets=${s.toolsets}` : ""}`).sort();
  assert.deepEqual(have, [
    "claude-code http", "claude-code http toolsets=agent", "claude-code stdio", "claude-desktop stdio", "claude-desktop stdio toolsets=agent",
    "cursor http", "cursor http toolsets=agent", "cursor stdio", "vscode http", "vscode stdio",
  ]);
});

// resolve replaces the page's placeholders the way a user fills them in (VS Code's
// ${input:...} is the key the user types at the prompt).
function resolve(value) {
  return value
    .replace("{base}", server.url)
    .replace("sb_test_YOUR_KEY", account.apiKey)
    .replace("${input:switchboard-key}", account.apiKey)
    .replace("/path/to/switchboard-data", server.dataDir);
}

for (const { host, transport, toolsets, config } of snippets) {
  test(`${host} over ${transport}${toolsets ? ` (toolsets ${toolsets})` : ""}: the snippet is valid for the host and connects`, async () => {
    const format = formats[host];
    assert.ok(format?.[transport], `no known ${transport} format for ${host}`);
    const entries = config[format.list];
    assert.ok(entries?.switchboard, `${host} keeps servers under "${format.list}"`);
    const entry = entries.switchboard;
    assert.ok(format[transport](entry), `${host} ${transport} entry shape: ${JSON.stringify(entry)}`);
    if (JSON.stringify(entry).includes("${input:")) {
      assert.ok(config.inputs?.some((i) => i.id === "switchboard-key" && i.password), "VS Code input for the key is declared and hidden");
    }

    const t =
      transport === "http"
        ? new StreamableHTTPClientTransport(new URL(resolve(entry.url)), {
            requestInit: { headers: Object.fromEntries(Object.entries(entry.headers ?? {}).map(([k, v]) => [k, resolve(v)])) },
          })
        : new StdioClientTransport({
            command: entry.command === "switchboard" ? bin : entry.command,
            args: entry.args,
            env: { ...baseEnv(server.dataDir), ...Object.fromEntries(Object.entries(entry.env ?? {}).map(([k, v]) => [k, resolve(v)])) },
            stderr: "ignore",
          });
    const client = new Client({ name: `${host}-snippet`, version: "1.0.0" });
    await client.connect(t);
    try {
      if (toolsets === "agent") {
        // The agent toolset: no onboarding, no publishing tools.
        const names = (await client.listTools()).tools.map((t) => t.name);
        assert.ok(names.includes("account_get") && names.includes("invoke_partner_message"), `${names}`);
        assert.ok(!names.some((n) => n.startsWith("agent_") || n.startsWith("partner_")), `listed outside the agent toolset: ${names}`);
      }
      const res = await client.callTool({ name: "account_get", arguments: {} });
      assert.equal(res.isError, undefined, JSON.stringify(res));
      assert.equal(res.structuredContent.userId, account.userId);
    } finally {
      await client.close();
    }
  });
}
