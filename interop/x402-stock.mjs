// Stock x402 clients paying a Switchboard flat-fee intent, run by the Go test
// TestX402StockClients (tools/dispatch, build tag x402interop) against anvil: it sets up the
// chain, Switchboard and the partner, then runs this with Node 22 (interop/run does both).
// Only stock code pays: @x402/fetch with @x402/evm's exact EVM scheme and a plain viem account
// over HTTP; over MCP, the official MCP SDK client with @x402/core's x402Client making the
// payload (x402 publishes no MCP client package on npm); and viem's signTypedData on the
// quote's typedData as it is. Prints one line per scenario: PASS or FAIL, and exits 1 on any
// FAIL.
import { readFileSync } from "node:fs";
import { wrapFetchWithPayment, x402Client, decodePaymentResponseHeader } from "@x402/fetch";
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import { privateKeyToAccount } from "viem/accounts";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const { SWITCHBOARD_URL: url, SWITCHBOARD_API_KEY: key, PAYER_KEY, TOKEN, CHAIN_ID } = process.env;
const network = `eip155:${CHAIN_ID}`;
const account = privateKeyToAccount(PAYER_KEY);
const versions = Object.fromEntries(
  ["@x402/fetch", "@x402/evm", "@x402/core", "viem", "@modelcontextprotocol/sdk"].map((p) => [
    p,
    JSON.parse(readFileSync(new URL(`./node_modules/${p}/package.json`, import.meta.url))).version,
  ]),
);
console.log("clients", JSON.stringify(versions));

// A stock client: the exact EVM scheme on every eip155 network, and the test token allowed
// (a stock client only pays assets it knows or is told to; that is its user's setting).
function stockClient() {
  const client = new x402Client();
  registerExactEvmScheme(client, { signer: account });
  client.setSpendControls({ allowedAssets: [{ network, asset: TOKEN, maxAmountPerPayment: "5000000" }] });
  return client;
}

let failed = false;
async function scenario(name, fn) {
  try {
    const detail = await fn();
    console.log(`PASS ${name}${detail ? ": " + detail : ""}`);
  } catch (e) {
    failed = true;
    console.log(`FAIL ${name}: ${e.stack || e}`);
  }
}
function must(cond, what) {
  if (!cond) throw new Error(what);
}

const fetchWithPayment = wrapFetchWithPayment(fetch, stockClient());
const invoke = (message) =>
  fetchWithPayment(url + "/v1/invoke", {
    method: "POST",
    headers: { "content-type": "application/json", "x-api-key": key },
    body: JSON.stringify({ message }),
  });

await scenario("http: @x402/fetch pays a flat-fee intent (settled)", async () => {
  const r = await invoke("@x402ok forecast for Lisbon");
  const body = await r.json();
  must(r.status === 200 && body.success === true, `status ${r.status} ${JSON.stringify(body)}`);
  const sr = decodePaymentResponseHeader(r.headers.get("PAYMENT-RESPONSE"));
  must(sr.success === true && sr.transaction && sr.network === network && sr.payer === account.address, `PAYMENT-RESPONSE ${JSON.stringify(sr)}`);
  return `settle ${sr.transaction}`;
});

await scenario("http: @x402/fetch, the partner fails: refunded on chain", async () => {
  const r = await invoke("@x402fail anything");
  const body = await r.json();
  must(r.status === 200 && body.success === false && body.payment?.state === "refunded", `status ${r.status} ${JSON.stringify(body)}`);
  const sr = decodePaymentResponseHeader(r.headers.get("PAYMENT-RESPONSE"));
  must(sr.success === false && sr.transaction === body.payment.refundTx, `PAYMENT-RESPONSE ${JSON.stringify(sr)}`);
  return `refund ${sr.transaction}`;
});

await scenario("http: the 402 is well-formed (absolute resource.url, exact, bazaar)", async () => {
  const r = await fetch(url + "/v1/invoke", {
    method: "POST",
    headers: { "content-type": "application/json", "x-api-key": key },
    body: JSON.stringify({ message: "@x402ok quote only" }),
  });
  must(r.status === 402, `status ${r.status}`);
  const pr = JSON.parse(Buffer.from(r.headers.get("PAYMENT-REQUIRED"), "base64").toString());
  must(pr.x402Version === 2 && new URL(pr.resource.url).protocol.startsWith("http"), `resource ${JSON.stringify(pr.resource)}`);
  const a = pr.accepts[0];
  must(a.scheme === "exact" && a.network === network && a.asset.toLowerCase() === TOKEN.toLowerCase() && a.extra.name && a.extra.version, JSON.stringify(a));
  must(pr.extensions?.bazaar?.info?.input?.type === "http", `bazaar ${JSON.stringify(pr.extensions)}`);
});

await scenario("mcp: MCP SDK client + x402Client pays over _meta", async () => {
  const client = new Client({ name: "x402-interop", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(url + "/mcp"), { requestInit: { headers: { "x-api-key": key } } }));
  try {
    const args = { message: "@x402ok forecast for Porto" };
    const first = await client.callTool({ name: "invoke_partner_message", arguments: args });
    must(first.isError === true, `unpaid call: ${JSON.stringify(first)}`);
    const pr = first.structuredContent;
    must(pr?.x402Version === 2 && Array.isArray(pr.accepts), `structuredContent ${JSON.stringify(first.structuredContent)}`);
    must(JSON.stringify(JSON.parse(first.content[0].text)) === JSON.stringify(pr), "content[0].text is not the PaymentRequired");
    must(pr.extensions?.bazaar?.info?.input?.type === "mcp" && pr.extensions.bazaar.info.input.tool === "invoke_partner_message", `bazaar ${JSON.stringify(pr.extensions)}`);
    const payload = await stockClient().createPaymentPayload(pr);
    const paid = await client.callTool({ name: "invoke_partner_message", arguments: args, _meta: { "x402/payment": payload } });
    must(!paid.isError && paid.structuredContent?.success === true, `paid call: ${JSON.stringify(paid)}`);
    const sr = paid._meta?.["x402/payment-response"];
    must(sr?.success === true && sr.transaction && sr.payer === account.address, `_meta ${JSON.stringify(paid._meta)}`);
    return `settle ${sr.transaction}`;
  } finally {
    await client.close();
  }
});

await scenario("viem: signTypedData on the quote's typedData as it is (ReceiveWithAuthorization)", async () => {
  const post = (body) =>
    fetch(url + "/v1/invoke", { method: "POST", headers: { "content-type": "application/json", "x-api-key": key }, body: JSON.stringify(body) });
  const message = "@x402ok forecast for Faro";
  const r = await post({ message, payer: account.address });
  const quote = (await r.json()).error?.details?.quote;
  must(r.status === 402 && quote, `quote ${r.status}`);
  const signature = await account.signTypedData(quote.typedData);
  const paid = await post({
    message,
    confirmRequestId: quote.requestId,
    payment: { signature, primaryType: quote.typedData.primaryType, authorization: quote.typedData.message },
  });
  const body = await paid.json();
  must(paid.status === 200 && body.payment?.state === "settled", `paid ${paid.status} ${JSON.stringify(body)}`);
});

process.exit(failed ? 1 : 0);
