// Stock x402 clients buying Switchboard credit (credit_topup), run by the Go test
// TestX402StockTopup (tools/payments, build tag x402interop) against anvil: it starts the
// chain and Switchboard, then runs this with Node 22 (interop/run does both). Only stock code
// pays: @x402/fetch with @x402/evm's exact EVM scheme and a plain viem account over HTTP; over
// MCP, the official MCP SDK client with @x402/core's x402Client making the payload. Prints one
// line per scenario: PASS or FAIL, and exits 1 on any FAIL.
import { wrapFetchWithPayment, x402Client, decodePaymentResponseHeader } from "@x402/fetch";
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import { privateKeyToAccount } from "viem/accounts";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const { SWITCHBOARD_URL: url, SWITCHBOARD_API_KEY: key, PAYER_KEY, TOKEN, CHAIN_ID } = process.env;
const network = `eip155:${CHAIN_ID}`;
const account = privateKeyToAccount(PAYER_KEY);

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

await scenario("http: @x402/fetch buys 3 USD of credit", async () => {
  const fetchWithPayment = wrapFetchWithPayment(fetch, stockClient());
  const r = await fetchWithPayment(url + "/v1/credit/topup", {
    method: "POST",
    headers: { "content-type": "application/json", "x-api-key": key },
    body: JSON.stringify({ amountUsd: 3 }),
  });
  const body = await r.json();
  must(r.status === 200 && body.creditedUsd === 3 && body.network === network && body.txHash, `status ${r.status} ${JSON.stringify(body)}`);
  const sr = decodePaymentResponseHeader(r.headers.get("PAYMENT-RESPONSE"));
  must(sr.success === true && sr.transaction === body.txHash && sr.payer === account.address, `PAYMENT-RESPONSE ${JSON.stringify(sr)}`);
  return `credit ${body.creditUsd} after ${sr.transaction}`;
});

await scenario("mcp: MCP SDK client + x402Client buys 2 USD of credit over _meta", async () => {
  const client = new Client({ name: "x402-topup", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(url + "/mcp"), { requestInit: { headers: { "x-api-key": key } } }));
  try {
    const args = { amountUsd: 2 };
    const first = await client.callTool({ name: "credit_topup", arguments: args });
    must(first.isError === true, `unpaid call: ${JSON.stringify(first)}`);
    const pr = first.structuredContent;
    must(pr?.x402Version === 2 && Array.isArray(pr.accepts), `structuredContent ${JSON.stringify(first.structuredContent)}`);
    must(pr.extensions?.bazaar?.info?.input?.tool === "credit_topup", `bazaar ${JSON.stringify(pr.extensions)}`);
    const payload = await stockClient().createPaymentPayload(pr);
    const paid = await client.callTool({ name: "credit_topup", arguments: args, _meta: { "x402/payment": payload } });
    must(!paid.isError && paid.structuredContent?.creditedUsd === 2, `paid call: ${JSON.stringify(paid)}`);
    const sr = paid._meta?.["x402/payment-response"];
    must(sr?.success === true && sr.transaction === paid.structuredContent.txHash && sr.payer === account.address, `_meta ${JSON.stringify(paid._meta)}`);
    // The same payload again: the same top-up, nothing credited twice.
    const again = await client.callTool({ name: "credit_topup", arguments: args, _meta: { "x402/payment": payload } });
    must(!again.isError && again.structuredContent?.txHash === paid.structuredContent.txHash && again.structuredContent.creditUsd === paid.structuredContent.creditUsd,
      `replayed: ${JSON.stringify(again)}`);
    return `credit ${paid.structuredContent.creditUsd} after ${sr.transaction}`;
  } finally {
    await client.close();
  }
});

process.exit(failed ? 1 : 0);
