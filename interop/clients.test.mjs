// The official TypeScript MCP SDK client (the one inside Claude Desktop, Claude Code, Cursor,
// VS Code and MCP Inspector) against a real switchboard, over Streamable HTTP and stdio, with
// and without a key. listTools parses every tool with the SDK's own schemas (a boolean
// subschema fails it whole); callTool checks structuredContent against the outputSchema.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import { bin, baseEnv, onboard, startServer } from "./harness.mjs";

let server, key;

before(async () => {
  server = await startServer();
  key = (await onboard(server, "interop@example.com")).apiKey;
});
after(() => server?.stop());

async function connect(transport) {
  const client = new Client({ name: "switchboard-interop", version: "1.0.0" });
  await client.connect(transport);
  return client;
}

// Each door with or without the key, and optionally the toolsets the host chooses (?toolsets=
// over HTTP, SWITCHBOARD_TOOLSETS over stdio).
const doors = {
  http: (withKey, toolsets = "") =>
    new StreamableHTTPClientTransport(new URL(server.url + "/mcp" + (toolsets ? `?toolsets=${toolsets}` : "")), withKey ? { requestInit: { headers: { "x-api-key": key } } } : {}),
  stdio: (withKey, toolsets = "") =>
    new StdioClientTransport({
      command: bin,
      args: ["stdio"],
      env: { ...baseEnv(server.dataDir), SWITCHBOARD_API_KEY: withKey ? key : "", SWITCHBOARD_TOOLSETS: toolsets },
      stderr: "ignore",
    }),
};

const every = "onboarding,agent,partner";

function errorOf(result) {
  assert.equal(result.isError, true, `expected an error result, got ${JSON.stringify(result)}`);
  return JSON.parse(result.content[0].text).error;
}

for (const [door, transport] of Object.entries(doors)) {
  test(`${door}: a host is shown what it may call, and chooses toolsets`, async () => {
    const names = async (withKey, toolsets) => {
      const client = await connect(transport(withKey, toolsets));
      try {
        return (await client.listTools()).tools.map((t) => t.name);
      } finally {
        await client.close();
      }
    };
    const keyless = await names(false);
    assert.ok(keyless.includes("agent_signup") && keyless.includes("account_get"), `keyless: ${keyless}`);
    assert.ok(!keyless.some((n) => n.startsWith("partner_")), `keyless lists partner tools unasked: ${keyless}`);
    const keyed = await names(true); // every scope: agent and partner, no onboarding
    assert.ok(keyed.includes("partner_publish_intent") && !keyed.includes("agent_signup"), `keyed: ${keyed}`);
    assert.deepEqual((await names(true, "onboarding")).sort(), ["agent_signup", "agent_verify"]);
  });

  test(`${door}: every tool lists, and every schema compiles with Ajv (draft 2020-12, strict)`, async () => {
    const client = await connect(transport(false, every));
    try {
      const { tools } = await client.listTools();
      assert.ok(tools.length >= 20, `only ${tools.length} tools`);
      const ajv = new Ajv2020({ strict: true, allErrors: true });
      addFormats(ajv);
      for (const tool of tools) {
        assert.ok(tool.title, `${tool.name}: no title`);
        for (const hint of ["readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"]) {
          assert.equal(typeof tool.annotations?.[hint], "boolean", `${tool.name}: annotation ${hint} missing`);
        }
        for (const which of ["inputSchema", "outputSchema"]) {
          assert.doesNotThrow(() => ajv.compile(tool[which]), `${tool.name} ${which} does not compile`);
        }
      }
    } finally {
      await client.close();
    }
  });

  test(`${door}: without a key, onboarding works and keyed tools say how to get a key`, async () => {
    const client = await connect(transport(false));
    try {
      const signup = await client.callTool({ name: "agent_signup", arguments: { email: `${door}-new@example.com` } });
      assert.equal(signup.isError, undefined, JSON.stringify(signup));
      assert.deepEqual(signup.structuredContent, { ok: true });
      for (const [name, args] of [["resolve_token", { query: "usdc on base" }], ["discover", { query: "price of SOL" }]]) {
        if (door === "stdio") {
          const e = errorOf(await client.callTool({ name, arguments: args }));
          assert.equal(e.code, "UNAUTHENTICATED");
          assert.match(e.message, /SWITCHBOARD_API_KEY/);
          continue;
        }
        // Over HTTP, /mcp is an OAuth protected resource: the keyed call is challenged with a
        // 401 (an OAuth-capable host signs in), whose body says how to get a key.
        await assert.rejects(client.callTool({ name, arguments: args }), (err) => {
          assert.equal(err.code, 401, String(err));
          assert.match(String(err.message), /x-api-key/);
          assert.match(String(err.message), /agent_signup/);
          return true;
        });
      }
    } finally {
      await client.close();
    }
  });

  test(`${door}: with a key, resolve_token and discover answer and match their output schemas`, async () => {
    const client = await connect(transport(true));
    try {
      const resolved = await client.callTool({ name: "resolve_token", arguments: { query: "usdc on base" } });
      assert.equal(resolved.isError, undefined, JSON.stringify(resolved));
      assert.equal(resolved.structuredContent.status, "OK");
      const usdc = resolved.structuredContent.tokens.find((t) => t.chain === "base");
      assert.equal(usdc?.ticker, "USDC");
      assert.equal(usdc.chainId, 8453);

      const found = await client.callTool({ name: "discover", arguments: { query: "what is the price of SOL" } });
      assert.equal(found.isError, undefined, JSON.stringify(found));
      assert.ok(found.structuredContent.results.some((r) => r.handle === "@get_price"), JSON.stringify(found.structuredContent));
    } finally {
      await client.close();
    }
  });
}
