// MCP authorization end to end, the way a remote MCP host connects by URL alone: the official
// TypeScript SDK client with its OAuth client provider meets the 401 challenge, discovers the
// authorization server, registers itself, and sends the human to the authorize URL — here a
// headless Chromium (Debian's, driven by puppeteer-core) that signs in with the e-mailed code
// and allows the connection on the consent page. The code comes back to the client's loopback
// redirect URI; the client exchanges it and lists and calls tools with the token, then
// refreshes it.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import puppeteer from "puppeteer-core";
import { startServer } from "./harness.mjs";

const chromium = process.env.CHROMIUM || "/usr/bin/chromium";
let server, browser, profile;

before(async () => {
  server = await startServer();
  profile = mkdtempSync(join(tmpdir(), "switchboard-chromium-"));
  browser = await puppeteer.launch({
    executablePath: chromium,
    headless: true,
    userDataDir: profile,
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
      "--disable-component-update", "--disable-sync"],
  });
});
after(async () => {
  await browser?.close();
  if (profile) rmSync(profile, { recursive: true, force: true });
  await server?.stop();
});

// A loopback redirect URI, as native MCP hosts use (RFC 8252): it receives the code.
async function callbackServer() {
  let deliver;
  const code = new Promise((resolve) => (deliver = resolve));
  const srv = createServer((req, res) => {
    const u = new URL(req.url, "http://127.0.0.1");
    res.end("You can close this window.");
    deliver({ code: u.searchParams.get("code"), state: u.searchParams.get("state"), error: u.searchParams.get("error") });
  });
  await new Promise((r) => srv.listen(0, "127.0.0.1", r));
  return { url: `http://127.0.0.1:${srv.address().port}/callback`, code, close: () => srv.close() };
}

// The MCP host's side: what the SDK asks it to keep.
class Provider {
  constructor(redirectUrl, onRedirect) {
    this._redirect = redirectUrl;
    this._onRedirect = onRedirect;
    this.saved = {};
  }
  get redirectUrl() {
    return this._redirect;
  }
  get clientMetadata() {
    return { client_name: "Interop Host", redirect_uris: [this._redirect], grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"], token_endpoint_auth_method: "none" };
  }
  clientInformation() {
    return this.saved.client;
  }
  saveClientInformation(info) {
    this.saved.client = info;
  }
  tokens() {
    return this.saved.tokens;
  }
  saveTokens(tokens) {
    this.saved.tokens = tokens;
  }
  redirectToAuthorization(url) {
    this.authorizationUrl = url;
    this._onRedirect(url);
  }
  saveCodeVerifier(v) {
    this.saved.verifier = v;
  }
  codeVerifier() {
    return this.saved.verifier;
  }
}

// The human in the browser: sign in with the e-mailed code, then allow the connection.
async function humanAllows(url, email) {
  const page = await browser.newPage();
  try {
    await page.goto(url.toString(), { waitUntil: "load" });
    await page.type("#email", email);
    await Promise.all([page.waitForNavigation(), page.click("button[type=submit]")]);
    await page.type("#code", await server.code(email));
    await Promise.all([page.waitForNavigation(), page.click("button[type=submit]")]);
    const heading = await page.$eval("h1", (h) => h.textContent);
    assert.equal(heading, "Connect Interop Host", `after sign-in the consent page shows who asks, got ${heading}`);
    // The host asked for every scope; the human grants only read.
    await page.$$eval("input[name=scopes]", (boxes) => boxes.forEach((b) => (b.checked = b.value === "read")));
    await Promise.all([page.waitForNavigation().catch(() => {}), page.click('button[name=decision][value=allow]')]);
  } finally {
    await page.close();
  }
}

test("an MCP host connects by URL alone: 401 challenge, registration, browser sign-in and consent, token, refresh", async () => {
  const cb = await callbackServer();
  let authorizing;
  const provider = new Provider(cb.url, (url) => (authorizing = humanAllows(url, "oauth-human@example.com")));
  const transport = new StreamableHTTPClientTransport(new URL(server.url + "/mcp"), { authProvider: provider });
  const client = new Client({ name: "interop-oauth-host", version: "1.0.0" });
  try {
    await client.connect(transport);
    // Anonymous listing works (agents onboard through it); a keyed call is challenged.
    const { tools } = await client.listTools();
    assert.ok(tools.some((t) => t.name === "account_get"));
    await assert.rejects(client.callTool({ name: "account_get", arguments: {} }), UnauthorizedError);
    assert.ok(provider.saved.client?.client_id?.startsWith("mcp_"), "the SDK registered the host");
    assert.equal(provider.authorizationUrl.searchParams.get("code_challenge_method"), "S256");
    assert.equal(provider.authorizationUrl.searchParams.get("resource"), server.url + "/mcp");
    await authorizing;
    const back = await cb.code;
    assert.equal(back.error, null, `the authorization answered ${back.error}`);
    await transport.finishAuth(back.code);
    assert.ok(provider.saved.tokens?.access_token?.startsWith("sbat_"));

    // The same client, now with a token: tools answer as the human's account, with the scopes chosen.
    const account = await client.callTool({ name: "account_get", arguments: {} });
    assert.equal(account.isError, undefined, JSON.stringify(account));
    assert.deepEqual(account.structuredContent.scopes, ["read"]);
    const denied = await client.callTool({ name: "partner_list_intents", arguments: {} });
    assert.equal(denied.isError, true);
    assert.equal(JSON.parse(denied.content[0].text).error.code, "FORBIDDEN");

    // An access token that stops working is refreshed through the SDK (rotation).
    const old = provider.saved.tokens;
    provider.saved.tokens = { ...old, access_token: "sbat_expired_or_revoked" };
    const again = await client.callTool({ name: "account_get", arguments: {} });
    assert.equal(again.isError, undefined, JSON.stringify(again));
    assert.notEqual(provider.saved.tokens.refresh_token, old.refresh_token, "the refresh token rotated");
  } finally {
    await client.close();
    cb.close();
  }
});
