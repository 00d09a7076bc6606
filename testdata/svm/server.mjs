// A real Solana runtime (litesvm) served to the Go tests over the JSON-RPC methods a wallet's
// send uses. litesvm has no blocks: this harness keeps a block height and the blockhashes it
// handed out with the last height each is valid at, and refuses an expired one as a cluster
// does. Test-only methods (svm_*) airdrop, write accounts, advance the height (a new
// blockhash each time) and hold broadcasts (taken, answered, not landed: a dropped packet)
// until released. Prints the port it listens on, then serves until stdin closes.
import http from "node:http";
import { LiteSVM } from "litesvm";
import { getAddressCodec, getBase58Decoder } from "@solana/kit";

const addr = getAddressCodec();
const b58dec = getBase58Decoder(); // bytes -> base58 string
const VALID_FOR = 150; // blocks a blockhash lasts, as on mainnet

const svm = new LiteSVM();
const inner = svm.inner;
inner.setBlockhashCheck(false); // the harness judges blockhashes by height
let height = 1;
const hashes = new Map(); // blockhash -> last valid block height
hashes.set(inner.latestBlockhash(), height + VALID_FOR);
const statuses = new Map(); // signature -> { slot, err }
let holding = false;
const held = [];

const key = (s) => addr.encode(s);

function shortvec(bytes, at) {
  let len = 0, shift = 0, i = at;
  for (;;) {
    const b = bytes[i++];
    len |= (b & 0x7f) << shift;
    if ((b & 0x80) === 0) return [len, i];
    shift += 7;
  }
}

// parse reads a legacy or v0 wire transaction's first signature and recent blockhash.
function parse(raw) {
  let [nsig, at] = shortvec(raw, 0);
  const sig = b58dec.decode(raw.subarray(at, at + 64));
  at += nsig * 64;
  if (raw[at] & 0x80) at++; // versioned message prefix
  at += 3; // header
  const [nkeys, after] = shortvec(raw, at);
  at = after + nkeys * 32;
  return { sig, blockhash: b58dec.decode(raw.subarray(at, at + 32)) };
}

class RpcError extends Error {
  constructor(code, message, data) {
    super(message);
    this.code = code;
    this.data = data;
  }
}

function describe(failed) {
  const e = failed.err();
  return typeof e === "number" || typeof e === "string" ? String(e) : e.toString();
}

// land executes raw now; statuses remember it (a failed one with its error, as skipPreflight
// would land it).
function land(raw) {
  const { sig } = parse(raw);
  const res = inner.sendLegacyTransaction(raw);
  const slot = Number(inner.getClock().slot);
  if (res.constructor.name === "FailedTransactionMetadata") {
    const why = describe(res);
    if (/AlreadyProcessed/i.test(why)) {
      throw new RpcError(-32002, "Transaction simulation failed: This transaction has already been processed");
    }
    throw new RpcError(-32002, "Transaction simulation failed: " + why, { logs: res.meta().logs() });
  }
  statuses.set(sig, { slot, err: null });
  return sig;
}

function checkBlockhash(raw) {
  const { blockhash } = parse(raw);
  const last = hashes.get(blockhash);
  if (last === undefined || height > last) {
    throw new RpcError(-32002, "Transaction simulation failed: Blockhash not found");
  }
}

const ctx = () => ({ slot: Number(inner.getClock().slot) });
const b64 = (s) => Uint8Array.from(Buffer.from(s, "base64"));

const methods = {
  getLatestBlockhash: () => {
    const h = inner.latestBlockhash();
    return { context: ctx(), value: { blockhash: h, lastValidBlockHeight: hashes.get(h) } };
  },
  getBlockHeight: () => height,
  getBalance: ([a]) => ({ context: ctx(), value: Number(inner.getBalance(key(a)) ?? 0n) }),
  getMinimumBalanceForRentExemption: ([n]) => Number(inner.minimumBalanceForRentExemption(BigInt(n))),
  getAccountInfo: ([a]) => {
    const acc = inner.getAccount(key(a));
    if (acc === null || acc.lamports() === 0n) return { context: ctx(), value: null };
    return {
      context: ctx(),
      value: {
        lamports: Number(acc.lamports()), owner: addr.decode(acc.owner()), executable: acc.executable(),
        rentEpoch: 0, space: acc.data().length, data: [Buffer.from(acc.data()).toString("base64"), "base64"],
      },
    };
  },
  getTokenAccountBalance: ([a]) => {
    const acc = inner.getAccount(key(a));
    if (acc === null) throw new RpcError(-32602, "Invalid param: could not find account");
    const data = Buffer.from(acc.data());
    const mint = inner.getAccount(data.subarray(0, 32));
    const decimals = mint === null ? 0 : mint.data()[44];
    const amount = data.readBigUInt64LE(64).toString();
    return { context: ctx(), value: { amount, decimals, uiAmountString: amount } };
  },
  // simulateTransaction honours sigVerify (default false, as a cluster's) and
  // replaceRecentBlockhash (the blockhash is not judged; the latest is answered as the
  // replacement), and answers the compute units consumed.
  simulateTransaction: ([tx, cfg = {}]) => {
    const raw = b64(tx);
    if (!cfg.replaceRecentBlockhash) checkBlockhash(raw);
    const was = inner.getSigverify();
    inner.setSigverify(cfg.sigVerify === true);
    let res;
    try {
      res = inner.simulateLegacyTransaction(raw);
    } finally {
      inner.setSigverify(was);
    }
    const value = { err: null, logs: res.meta().logs(), unitsConsumed: Number(res.meta().computeUnitsConsumed()) };
    if (res.constructor.name === "FailedTransactionMetadata") value.err = describe(res);
    if (cfg.replaceRecentBlockhash) {
      const h = inner.latestBlockhash();
      value.replacementBlockhash = { blockhash: h, lastValidBlockHeight: hashes.get(h) };
    }
    return { context: ctx(), value };
  },
  sendTransaction: ([tx]) => {
    const raw = b64(tx);
    checkBlockhash(raw);
    const { sig } = parse(raw);
    if (statuses.has(sig)) {
      throw new RpcError(-32002, "Transaction simulation failed: This transaction has already been processed");
    }
    if (holding) {
      held.push(raw);
      return sig;
    }
    return land(raw);
  },
  getSignatureStatuses: ([sigs]) => ({
    context: ctx(),
    value: sigs.map((s) => {
      const st = statuses.get(s);
      return st ? { slot: st.slot, confirmations: null, err: st.err, confirmationStatus: "finalized" } : null;
    }),
  }),

  svm_airdrop: ([a, lamports]) => {
    inner.airdrop(key(a), BigInt(lamports));
    return true;
  },
  // svm_setAccount writes an account as it is (a mint, a funded token account).
  svm_setAccount: ([a, lamports, owner, data]) => {
    svm.setAccount({ address: a, lamports: BigInt(lamports), data: b64(data), programAddress: owner, executable: false });
    return true;
  },
  // svm_advance moves the block height on by n with a new latest blockhash.
  svm_advance: ([n]) => {
    height += n;
    inner.warpToSlot(inner.getClock().slot + BigInt(n));
    inner.expireBlockhash();
    hashes.set(inner.latestBlockhash(), height + VALID_FOR);
    return height;
  },
  // svm_hold [on]: while on, broadcasts are answered but not landed; svm_release lands those
  // held that are still valid (late) or forgets them (land=false: dropped for good).
  svm_hold: ([on]) => {
    holding = on;
    return true;
  },
  svm_release: ([landThem]) => {
    let landed = 0;
    for (const raw of held.splice(0)) {
      const { blockhash } = parse(raw);
      if (!landThem || height > hashes.get(blockhash)) continue;
      try {
        land(raw);
        landed++;
      } catch {}
    }
    return landed;
  },
};

function answer(req) {
  const fn = methods[req.method];
  try {
    if (!fn) throw new RpcError(-32601, "Method not found: " + req.method);
    return { jsonrpc: "2.0", id: req.id, result: fn(req.params ?? []) };
  } catch (e) {
    const err = { code: e.code ?? -32603, message: e.message };
    if (e.data !== undefined) err.data = e.data;
    return { jsonrpc: "2.0", id: req.id, error: err };
  }
}

const server = http.createServer((req, res) => {
  const chunks = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", () => {
    let body;
    try {
      body = JSON.parse(Buffer.concat(chunks).toString());
    } catch {
      res.writeHead(400).end();
      return;
    }
    const out = Array.isArray(body) ? body.map(answer) : answer(body);
    res.writeHead(200, { "Content-Type": "application/json" }).end(JSON.stringify(out));
  });
});
server.listen(0, "127.0.0.1", () => {
  process.stdout.write(server.address().port + "\n");
});
process.stdin.on("end", () => process.exit(0));
process.stdin.resume();
