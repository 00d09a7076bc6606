// A stock x402 seller for x402_fetch, run by the Go test TestX402FetchPaysAStockSeller
// (tools/payments, build tag x402interop) against anvil: @x402/express's paymentMiddleware in
// front of one route, its resource server backed by a local facilitator built from
// @x402/core's x402Facilitator with @x402/evm's exact EVM facilitator scheme, which verifies
// and settles the EIP-3009 authorization Switchboard signed, on anvil, from its own key. Served
// over TLS (the certificate the test made) on a loopback port it prints as "listening PORT".
// Only stock code decides what is paid and settled.
import https from "node:https";
import { readFileSync } from "node:fs";
import express from "express";
import { paymentMiddleware, x402ResourceServer } from "@x402/express";
import { ExactEvmScheme } from "@x402/evm/exact/server";
import { x402Facilitator } from "@x402/core/facilitator";
import { registerExactEvmScheme } from "@x402/evm/exact/facilitator";
import { toFacilitatorEvmSigner } from "@x402/evm";
import { createWalletClient, defineChain, http, publicActions } from "viem";
import { privateKeyToAccount } from "viem/accounts";

const { RPC_URL, CHAIN_ID, TOKEN, PAY_TO, FACILITATOR_KEY, PRICE, CERT, KEY } = process.env;
const network = `eip155:${CHAIN_ID}`;
const chain = defineChain({
  id: Number(CHAIN_ID),
  name: "anvil",
  nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
  rpcUrls: { default: { http: [RPC_URL] } },
});

const account = privateKeyToAccount(FACILITATOR_KEY);
const wallet = createWalletClient({ account, chain, transport: http(RPC_URL) }).extend(publicActions);
const facilitator = new x402Facilitator();
registerExactEvmScheme(facilitator, {
  signer: toFacilitatorEvmSigner({ ...wallet, address: account.address }, { confirmationTimeoutMs: 30_000 }),
  networks: network,
});
// The local facilitator as the resource server's FacilitatorClient (verify, settle, supported).
const local = {
  verify: (payload, requirements) => facilitator.verify(payload, requirements),
  settle: (payload, requirements) => facilitator.settle(payload, requirements),
  getSupported: async () => facilitator.getSupported(),
};
const server = new x402ResourceServer(local).register(network, new ExactEvmScheme());

const app = express();
let paid = 0;
app.use(
  paymentMiddleware(
    {
      "GET /weather": {
        accepts: {
          scheme: "exact",
          network,
          payTo: PAY_TO,
          // The test token, by its EIP-712 domain (EIP-3009 signs over it).
          price: { amount: PRICE, asset: TOKEN, extra: { name: "USD Coin", version: "2" } },
          maxTimeoutSeconds: 120,
        },
        description: "Today's weather",
        mimeType: "application/json",
      },
    },
    server,
  ),
);
app.get("/weather", (_req, res) => {
  paid++;
  res.json({ weather: "sunny", servedPaid: paid });
});
app.get("/free", (_req, res) => res.json({ free: true }));

const srv = https.createServer({ cert: readFileSync(CERT), key: readFileSync(KEY) }, app);
srv.listen(0, "127.0.0.1", () => console.log(`listening ${srv.address().port}`));
process.on("SIGTERM", () => srv.close(() => process.exit(0)));
