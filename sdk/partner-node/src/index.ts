// @switchboard-hq/partner: verify Switchboard's signed calls in a Node partner, as the spec
// says ("Signature verification (partner side)", "Authentication"): the envelope minus
// serviceSignature canonicalized (keys sorted at every level, arrays in order, no
// whitespace), a 64-byte Ed25519 signature checked with the service's public key (fetched
// from /.well-known/service-public-key, cached one hour, the stale key kept when a refresh
// fails, 503 when none was ever fetched), a timestamp within 5 minutes, and an
// Idempotency-Key equal to requestId. REST calls carry the envelope as the body; MCP_HTTP
// calls carry the signed fields as X-Service-* headers beside the tool's arguments.
//
// The canonicalization and signature check are the ones CI runs over the signing vectors
// (testdata/signing/verify-vectors.mjs), with node:crypto only.
import { createPublicKey, verify as edVerify, type KeyObject } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";

export const MAX_CLOCK_SKEW_MS = 5 * 60 * 1000;
export const KEY_CACHE_TTL_MS = 60 * 60 * 1000;
export const PUBLIC_KEY_PATH = "/.well-known/service-public-key";
/** The key set: the key signing now, the next one (published an hour and more before a rotation switches to it), the previous one. */
export const KEY_SET_PATH = "/.well-known/service-keys";
const STALE_RETRY_MS = 60 * 1000; // between refresh attempts while a stale key serves
const MISSING_RETRY_MS = 5 * 1000; // between fetches while no key is known (forged floods)
const MAX_BODY = 1 << 20;
// Past MAX_BODY a body is still read (and dropped) up to DRAIN_LIMIT, so the 413 reaches a
// client that is still sending instead of a connection reset; further than that the 413 goes
// at once and the connection is closed (a sender that far over is not worth the bandwidth).
const DRAIN_LIMIT = 16 << 20;

/** The request envelope a partner receives (REST body; MCP_HTTP headers + args). */
export interface Envelope {
  requestId: string;
  intentDefinitionId: string;
  userId: string;
  args: Record<string, unknown>;
  timestamp: number;
  serviceSignature: string;
}

/** A Switchboard event as verifyWebhook returns it: the body's fields and its webhook-id. */
export interface WebhookEvent {
  /** The webhook-id: the same on every retry and replay; process each id once. */
  id: string;
  type: string;
  timestamp: string;
  data: Record<string, unknown>;
}

/** A refused call, with the HTTP status to answer (400, 401, 413, 415, 503) and the failure code. */
export class VerificationError extends Error {
  override readonly name = "VerificationError";
  /** closeConnection: answer with `Connection: close` (a body far over the limit was left unread). */
  constructor(readonly status: number, readonly code: string, message: string, readonly closeConnection = false) {
    super(message);
  }
}

const tooLarge = (close = false) => new VerificationError(413, "PAYLOAD_TOO_LARGE", "request body is over 1 MiB: Switchboard's calls are smaller", close);

/**
 * checkContentType refuses a body that is not application/json with 415 (what the service's
 * battery and `switchboard partner check` want; Switchboard always sends application/json).
 * A request without a Content-Type is let through to the JSON parse.
 */
export function checkContentType(headers?: HeadersLike): void {
  const ct = headerValues(headers, "content-type")[0];
  if (ct === undefined || ct === "") return;
  if (ct.split(";")[0]!.trim().toLowerCase() !== "application/json") {
    throw new VerificationError(415, "UNSUPPORTED_MEDIA_TYPE", `send the envelope as application/json, not ${ct.split(";")[0]!.trim()}`);
  }
}

const unauthorized = (m: string) => new VerificationError(401, "UNAUTHORIZED", m);
const badInput = (m: string) => new VerificationError(400, "BAD_INPUT", m);

/** The failure response envelope. */
export function failure(code: string, message: string) {
  return { success: false as const, error: { code, message } };
}

/**
 * canonicalize returns the canonical JSON of a value from JSON.parse. The object case builds
 * the text itself (JSON.stringify would put integer-like keys first); sort() without a
 * comparator orders by UTF-16 code units, as the spec (RFC 8785) requires.
 */
export function canonicalize(value: unknown): string {
  if (Array.isArray(value)) return "[" + value.map(canonicalize).join(",") + "]";
  if (value !== null && typeof value === "object") {
    const o = value as Record<string, unknown>;
    return "{" + Object.keys(o).sort()
      .filter((k) => o[k] !== undefined)
      .map((k) => JSON.stringify(k) + ":" + canonicalize(o[k]))
      .join(",") + "}";
  }
  return JSON.stringify(value);
}

const SIG_RE = /^[A-Za-z0-9+/]{86}==$/;

/** decodeSignature checks a base64 signature decodes to exactly 64 bytes. */
function decodeSignature(s: unknown): Buffer {
  if (s === undefined || s === null || s === "") throw unauthorized("missing service signature");
  if (typeof s !== "string" || !SIG_RE.test(s)) throw unauthorized("service signature is not 64 bytes of standard base64");
  const sig = Buffer.from(s, "base64");
  if (sig.length !== 64) throw unauthorized("service signature is not 64 bytes of standard base64");
  return sig;
}

/** Anything headers come in: fetch Headers, Node's IncomingHttpHeaders, a plain record. */
export type HeadersLike = Headers | Record<string, string | string[] | undefined>;

function headerValues(h: HeadersLike | undefined, name: string): string[] {
  if (!h) return [];
  if (typeof (h as Headers).get === "function" && typeof (h as Headers).has === "function") {
    const v = (h as Headers).get(name);
    return v === null ? [] : name === "set-cookie" ? [v] : v.split(/,\s*/);
  }
  const lower = name.toLowerCase();
  for (const [k, v] of Object.entries(h as Record<string, string | string[] | undefined>)) {
    if (k.toLowerCase() !== lower || v === undefined) continue;
    return Array.isArray(v) ? v : [v];
  }
  return [];
}

export interface VerifierOptions {
  /** The service's base URL; the key comes from `${serviceUrl}/.well-known/service-public-key`. */
  serviceUrl?: string;
  /** A fixed public key instead (PEM SPKI, or a KeyObject). */
  publicKey?: string | KeyObject;
  /** Clock in ms (default Date.now), for the timestamp window and the key cache. */
  now?: () => number;
  keyCacheTtlMs?: number;
  maxClockSkewMs?: number;
  /** Where a failed refresh is reported (default console). */
  logger?: { warn: (...args: unknown[]) => void };
  fetch?: typeof fetch;
}

/** Verifies signed calls from Switchboard. One per process; safe to share. */
export class Verifier {
  readonly #o: Required<Pick<VerifierOptions, "now" | "keyCacheTtlMs" | "maxClockSkewMs" | "logger" | "fetch">> & VerifierOptions;
  #key: KeyObject | undefined;
  #next: KeyObject[] = []; // the key set's next key: accepted for calls and receipts
  #previous: KeyObject[] = []; // the key set's previous key: accepted for receipts only
  #expires = 0;
  #nextAttempt = 0;
  #lastError: unknown;
  #inflight: Promise<KeyObject> | undefined;
  /** How many times the key was fetched (for monitoring). */
  fetches = 0;

  constructor(options: VerifierOptions) {
    if (!options.serviceUrl === !options.publicKey) throw new TypeError("give exactly one of serviceUrl and publicKey");
    this.#o = {
      now: Date.now, keyCacheTtlMs: KEY_CACHE_TTL_MS, maxClockSkewMs: MAX_CLOCK_SKEW_MS, logger: console,
      fetch: (...a: Parameters<typeof fetch>) => globalThis.fetch(...a), ...options,
    };
    if (options.publicKey) {
      this.#key = parseKey(options.publicKey);
      this.#expires = Infinity;
    }
  }

  /** The key in use, fetched when needed; a 503 VerificationError when none can be had. */
  async publicKey(): Promise<KeyObject> {
    const now = this.#o.now();
    if (this.#key && now < this.#expires) return this.#key;
    if (this.#inflight) return this.#key ?? this.#inflight;
    if (now < this.#nextAttempt) {
      if (this.#key) return this.#key;
      throw unavailable(this.#lastError);
    }
    this.#inflight = this.#fetchKey();
    try {
      return await this.#inflight;
    } finally {
      this.#inflight = undefined;
    }
  }

  /** Fetch the key now (e.g. at startup, to fail fast on a wrong URL). */
  async refresh(): Promise<void> {
    this.#expires = 0;
    this.#nextAttempt = 0;
    await this.publicKey();
  }

  // A call verifies with the current key or the next one (a rotation switched after the set was
  // cached); a receipt may also be by the previous key.
  #verifies(data: Buffer, key: KeyObject, sig: Buffer, receipt: boolean): boolean {
    if (edVerify(null, data, key, sig)) return true;
    return this.#next.some((k) => edVerify(null, data, k, sig)) || (receipt && this.#previous.some((k) => edVerify(null, data, k, sig)));
  }

  async #fetchKey(): Promise<KeyObject> {
    const base = this.#o.serviceUrl!.replace(/\/+$/, "");
    const url = base + PUBLIC_KEY_PATH;
    this.fetches++;
    try {
      // The key set first: caching it carries a partner through a key rotation.
      const set = await this.#o.fetch(base + KEY_SET_PATH, { headers: { accept: "application/json" }, signal: AbortSignal.timeout(10_000) }).catch(() => undefined);
      if (set && set.status === 200) {
        const doc = (await set.json()) as { keys?: { status?: string; publicKeyPem?: string }[] };
        const keys = (doc.keys ?? []).filter((k) => typeof k.publicKeyPem === "string");
        const current = keys.find((k) => k.status === "current");
        if (!current) throw new Error(`${base + KEY_SET_PATH} names no current key`);
        const key = parseKey(current.publicKeyPem!);
        this.#key = key;
        this.#next = keys.filter((k) => k.status === "next").map((k) => parseKey(k.publicKeyPem!));
        this.#previous = keys.filter((k) => k.status === "previous").map((k) => parseKey(k.publicKeyPem!));
        this.#expires = this.#o.now() + this.#o.keyCacheTtlMs;
        this.#nextAttempt = 0;
        this.#lastError = undefined;
        return key;
      }
      const r = await this.#o.fetch(url, { headers: { accept: "application/x-pem-file, text/plain, */*" }, signal: AbortSignal.timeout(10_000) });
      if (r.status !== 200) throw new Error(`fetch ${url}: HTTP ${r.status}`);
      const key = parseKey(await r.text());
      this.#key = key;
      this.#next = [];
      this.#previous = [];
      this.#expires = this.#o.now() + this.#o.keyCacheTtlMs;
      this.#nextAttempt = 0;
      this.#lastError = undefined;
      return key;
    } catch (err) {
      this.#lastError = err;
      if (this.#key) {
        this.#nextAttempt = this.#o.now() + STALE_RETRY_MS;
        this.#o.logger.warn("switchboard partner: public key refresh failed; using the cached key:", err instanceof Error ? err.message : err);
        return this.#key;
      }
      this.#nextAttempt = this.#o.now() + MISSING_RETRY_MS;
      throw unavailable(err);
    }
  }

  /**
   * Verify a Switchboard receipt ({receipt, signature}, from an invoke answer or
   * GET /v1/partner/receipts/{requestId}): the signature must be 64 bytes and verify over the
   * receipt's canonical JSON with the service key. Resolves to the receipt.
   */
  async verifyReceipt(signed: { receipt: Record<string, unknown>; signature: unknown }): Promise<Record<string, unknown>> {
    if (!signed || typeof signed !== "object" || !signed.receipt || typeof signed.receipt !== "object") {
      throw badInput("a signed receipt is {receipt, signature}");
    }
    const sig = decodeSignature(signed.signature);
    const key = await this.publicKey();
    if (!this.#verifies(Buffer.from(canonicalize(signed.receipt), "utf8"), key, sig, true)) throw unauthorized("the receipt's signature does not verify");
    return signed.receipt;
  }

  /**
   * Verify a REST call: `body` is the raw request body (or the value an upstream JSON parser
   * made of it), `headers` the request headers. Resolves to the envelope; rejects with a
   * VerificationError (400 shape, 401 signature/window/Idempotency-Key, 503 no key).
   */
  async verify(body: string | Uint8Array | Record<string, unknown>, headers?: HeadersLike): Promise<Envelope> {
    let env: unknown = body;
    if (typeof body === "string" || body instanceof Uint8Array) {
      try {
        env = JSON.parse(typeof body === "string" ? body : Buffer.from(body).toString("utf8"));
      } catch {
        throw badInput("request body is not JSON: send the request envelope");
      }
    }
    if (env === null || typeof env !== "object" || Array.isArray(env)) throw badInput("request body must be a JSON object (the request envelope)");
    const { serviceSignature, ...rest } = env as Record<string, unknown>;
    const sig = decodeSignature(serviceSignature);
    const key = await this.publicKey();
    if (!this.#verifies(Buffer.from(canonicalize(rest), "utf8"), key, sig, false)) throw unauthorized("service signature does not verify");
    for (const f of ["requestId", "intentDefinitionId", "userId"]) {
      if (typeof rest[f] !== "string") throw badInput(`request envelope: ${f} must be a string`);
    }
    if (rest.requestId === "") throw badInput("request envelope: requestId is empty");
    if (rest.args === null || typeof rest.args !== "object" || Array.isArray(rest.args)) throw badInput("request envelope: args must be an object");
    if (typeof rest.timestamp !== "number" || !Number.isFinite(rest.timestamp)) throw badInput("request envelope: timestamp must be a number (Unix ms)");
    const out = { ...(rest as unknown as Envelope), serviceSignature: serviceSignature as string };
    this.#checkFreshness(out, headers);
    return out;
  }

  /**
   * Verify an MCP_HTTP tool call: the signed fields come from the X-Service-* headers and
   * `args` are the tool call's arguments as received (undefined or null mean {}).
   */
  async verifyHeaders(headers: HeadersLike, args: unknown): Promise<Envelope> {
    const sigs = headerValues(headers, "x-service-signature");
    if (sigs.length > 1) throw unauthorized("more than one X-Service-Signature header");
    const sig = decodeSignature(sigs[0]);
    const one = (name: string) => {
      const v = headerValues(headers, name);
      if (v.length !== 1) throw badInput(`expected exactly one ${name} header`);
      return v[0]!;
    };
    const requestId = one("x-service-request-id");
    const intentDefinitionId = one("x-service-intent-id");
    const userId = one("x-service-user-id");
    const ts = one("x-service-timestamp");
    if (requestId === "") throw badInput("X-Service-Request-Id is empty");
    if (!/^-?\d+$/.test(ts)) throw badInput("X-Service-Timestamp must be Unix milliseconds");
    const a = args === undefined || args === null ? {} : args;
    if (typeof a !== "object" || Array.isArray(a)) throw badInput("tool arguments must be an object");
    const env = { requestId, intentDefinitionId, userId, args: a as Record<string, unknown>, timestamp: Number(ts) };
    const key = await this.publicKey();
    if (!this.#verifies(Buffer.from(canonicalize(env), "utf8"), key, sig, false)) throw unauthorized("service signature does not verify");
    const out = { ...env, serviceSignature: sigs[0]! };
    this.#checkFreshness(out, headers);
    return out;
  }

  /**
   * Verify a Switchboard event (a Standard Webhooks POST) by its `v1a,` signature: Ed25519 with
   * the service key over `${webhook-id}.${webhook-timestamp}.${body}`, the timestamp (Unix
   * seconds) within 5 minutes. `body` must be the raw request body, unparsed (a re-serialised
   * body no longer matches). Resolves to the event with its webhook-id, the key to process it
   * once (every retry carries the same id). The `v1,` HMAC signature beside it is for any
   * Standard Webhooks library with the endpoint's whsec_ secret.
   */
  async verifyWebhook(body: string | Uint8Array, headers: HeadersLike): Promise<WebhookEvent> {
    if (typeof body !== "string" && !(body instanceof Uint8Array)) throw badInput("pass the raw request body (a string or bytes), not parsed JSON: the signature covers the exact bytes");
    const one = (name: string) => {
      const v = headerValues(headers, name);
      if (v.length !== 1 || v[0] === "") throw badInput(`expected exactly one ${name} header`);
      return v[0]!;
    };
    const id = one("webhook-id");
    const ts = one("webhook-timestamp");
    if (!/^\d{1,12}$/.test(ts)) throw badInput("webhook-timestamp must be Unix seconds");
    const sigs = headerValues(headers, "webhook-signature").join(" ").split(" ")
      .filter((s) => s.startsWith("v1a,")).map((s) => s.slice(4));
    if (sigs.length === 0) throw unauthorized("no v1a signature in webhook-signature");
    if (Math.abs(this.#o.now() - Number(ts) * 1000) > this.#o.maxClockSkewMs) {
      throw unauthorized("webhook-timestamp is more than 5 minutes from this clock (replayed request or clock skew)");
    }
    const raw = typeof body === "string" ? Buffer.from(body, "utf8") : Buffer.from(body);
    const data = Buffer.concat([Buffer.from(`${id}.${ts}.`, "utf8"), raw]);
    const key = await this.publicKey();
    if (!sigs.some((s) => SIG_RE.test(s) && this.#verifies(data, key, Buffer.from(s, "base64"), false))) throw unauthorized("no v1a signature verifies with the service key");
    let event: unknown;
    try {
      event = JSON.parse(raw.toString("utf8"));
    } catch {
      throw badInput("the event body is not JSON");
    }
    if (event === null || typeof event !== "object" || typeof (event as WebhookEvent).type !== "string") throw badInput("the event body is not {type, timestamp, data}");
    return { ...(event as WebhookEvent), id };
  }

  #checkFreshness(env: Envelope, headers?: HeadersLike) {
    if (Math.abs(this.#o.now() - env.timestamp) > this.#o.maxClockSkewMs) {
      throw unauthorized("timestamp is more than 5 minutes from the partner's clock (replayed request or clock skew)");
    }
    for (const k of headerValues(headers, "idempotency-key")) {
      if (k !== env.requestId) throw unauthorized("Idempotency-Key header differs from requestId");
    }
  }
}

function unavailable(err: unknown) {
  const e = new VerificationError(503, "UNAVAILABLE", "the service public key is not available yet; retry later");
  (e as { cause?: unknown }).cause = err;
  return e;
}

function parseKey(k: string | KeyObject): KeyObject {
  const key = typeof k === "string" ? createPublicKey(k) : k;
  if (key.asymmetricKeyType !== "ed25519") throw new Error(`the service public key is ${key.asymmetricKeyType}, not Ed25519`);
  return key;
}

/** createVerifier is `new Verifier(options)`. */
export function createVerifier(options: VerifierOptions): Verifier {
  return new Verifier(options);
}

/** The plain function: verify one REST call with a verifier. */
export function verifyRequest(verifier: Verifier, body: string | Uint8Array | Record<string, unknown>, headers?: HeadersLike): Promise<Envelope> {
  return verifier.verify(body, headers);
}

/** What a handler answers: a result (wrapped as {success:true,result}) or a full response envelope. */
export type HandlerResult = unknown;
export type Handler = (envelope: Envelope) => HandlerResult | Promise<HandlerResult>;

function isEnvelope(v: unknown): v is { success: boolean } {
  return v !== null && typeof v === "object" && typeof (v as { success?: unknown }).success === "boolean";
}

/** PartnerFailure thrown by a handler becomes a failure envelope with its status. */
export class PartnerFailure extends Error {
  override readonly name = "PartnerFailure";
  constructor(readonly code: string, message: string, readonly status = 400) {
    super(message);
  }
}

/**
 * feeRateMicro is a usd_per_call feeRate as published (decimal USD, e.g. "0.05") in
 * micro-USD: the providerCostMicro that charges the whole quoted rate (digits past the sixth
 * decimal dropped, as Switchboard rounds a rate down).
 */
export function feeRateMicro(feeRate: string | number): number {
  const s = String(feeRate).trim();
  const m = /^(\d*)(?:\.(\d*))?$/.exec(s);
  if (!m || s === "" || s === ".") throw new TypeError(`feeRate ${JSON.stringify(feeRate)} is not a decimal USD amount such as "0.05"`);
  const micro = Number(m[1] || "0") * 1_000_000 + Number(((m[2] ?? "") + "000000").slice(0, 6));
  if (!Number.isSafeInteger(micro)) throw new TypeError(`feeRate ${JSON.stringify(feeRate)} is too large`);
  return micro;
}

/**
 * respond runs a handler on a verified envelope and returns [status, body]: the result as
 * {success:true,result,providerCostMicro} (costMicro, the quoted rate, when given), a
 * returned response envelope as is, a PartnerFailure as its failure envelope, anything else
 * as 500 INTERNAL. Switchboard pays you what you report in providerCostMicro, up to your
 * feeRate, and nothing when you report nothing.
 */
export async function respond(handler: Handler, env: Envelope, costMicro?: number): Promise<[number, unknown]> {
  try {
    const out = await handler(env);
    if (isEnvelope(out)) return [out.success ? 200 : 400, out];
    const body: Record<string, unknown> = { success: true, result: out ?? null };
    if (costMicro !== undefined) body.providerCostMicro = costMicro;
    return [200, body];
  } catch (err) {
    if (err instanceof PartnerFailure) return [err.status, failure(err.code, err.message)];
    return [500, failure("INTERNAL", "internal error")];
  }
}

/**
 * Dedupe replays the first answer to a requestId for 60 s (the spec's partner dedupe), so a
 * retried idempotent call does its work once.
 */
export class Dedupe {
  readonly #seen = new Map<string, { at: number; answer: Promise<[number, unknown]> }>();
  constructor(readonly ttlMs = 60_000, readonly now: () => number = Date.now) {}
  run(requestId: string, work: () => Promise<[number, unknown]>): Promise<[number, unknown]> {
    const t = this.now();
    for (const [k, v] of this.#seen) if (t - v.at > this.ttlMs) this.#seen.delete(k);
    const hit = this.#seen.get(requestId);
    if (hit) return hit.answer;
    const answer = work();
    this.#seen.set(requestId, { at: t, answer });
    return answer;
  }
}

function declaredLength(v: string | null | undefined): number | undefined {
  return v !== null && v !== undefined && /^\d+$/.test(v) ? Number(v) : undefined;
}

/**
 * readBody reads a node:http body of at most 1 MiB. A longer one is read to its end and
 * dropped, then refused 413, so the client reads the answer instead of a connection reset;
 * past DRAIN_LIMIT (or declared so) it is refused at once with the connection closed.
 */
function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const declared = declaredLength(headerValues(req.headers, "content-length")[0]);
    if (declared !== undefined && declared > DRAIN_LIMIT) return reject(tooLarge(true));
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    const finish = (err?: unknown) => {
      if (done) return;
      done = true;
      if (err) reject(err);
      else if (size > MAX_BODY) reject(tooLarge());
      else resolve(Buffer.concat(chunks));
    };
    req.on("data", (c: Buffer) => {
      size += c.length;
      if (size > DRAIN_LIMIT) return finish(tooLarge(true)); // the rest is not waited for
      if (size <= MAX_BODY) chunks.push(c);
      else chunks.length = 0;
    });
    req.on("end", () => finish());
    req.on("error", finish);
  });
}

/** readStream is readBody for a fetch Request's body (Hono): the same limits. */
async function readStream(raw: Request): Promise<Uint8Array> {
  const declared = declaredLength(raw.headers.get("content-length"));
  if (declared !== undefined && declared > DRAIN_LIMIT) throw tooLarge(true);
  if (!raw.body) return new Uint8Array(0);
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = raw.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.length;
    if (size > DRAIN_LIMIT) {
      await reader.cancel();
      throw tooLarge(true);
    }
    if (size <= MAX_BODY) chunks.push(value);
    else chunks.length = 0;
  }
  if (size > MAX_BODY) throw tooLarge();
  return Buffer.concat(chunks);
}

function send(res: ServerResponse, status: number, body: unknown, close = false) {
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text), ...(close ? { connection: "close" } : {}) });
  res.end(text);
}

function refuse(res: ServerResponse, err: unknown) {
  if (err instanceof VerificationError) send(res, err.status, failure(err.code, err.message), err.closeConnection);
  else send(res, 500, failure("INTERNAL", "internal error"));
}

/** The verified envelope a middleware leaves on the request. */
export type VerifiedRequest = IncomingMessage & { switchboard?: Envelope; body?: unknown };

/** Options of partnerHandler. */
export interface PartnerHandlerOptions {
  dedupe?: Dedupe | false;
  /**
   * The feeRate you published (usd_per_call, e.g. "0.05"; 0 for a free intent): every
   * result your handler returns is answered with it as providerCostMicro. Switchboard pays
   * you what you report, up to your feeRate, and nothing when you report nothing; return a
   * whole envelope with your own providerCostMicro to charge less for a call.
   */
  feeRate?: string | number;
  /** Where the one line per call (requestId, verified or refused) goes; default console.log. */
  log?: ((line: string) => void) | false;
}

/**
 * A whole REST partner endpoint for node:http: POST only, verified, deduped on requestId,
 * the handler's result sent as the response envelope with your feeRate as providerCostMicro,
 * and one log line per call.
 *
 *     http.createServer(partnerHandler(verifier, (env) => ({ answer: env.args.query }), { feeRate: "0.05" })).listen(8443)
 */
export function partnerHandler(verifier: Verifier, handler: Handler, options: PartnerHandlerOptions = {}) {
  const dedupe = options.dedupe === false ? undefined : options.dedupe ?? new Dedupe();
  const log = options.log === false ? undefined : options.log ?? ((line: string) => console.log(line));
  const costMicro = options.feeRate === undefined ? undefined : feeRateMicro(options.feeRate);
  if (costMicro === undefined) {
    (log ?? console.warn)("switchboard partner: no feeRate given, so calls report no providerCostMicro and you are paid nothing for them; pass { feeRate: \"0.05\" } (your published feeRate), or { feeRate: 0 } for a free intent");
  }
  return async (req: IncomingMessage, res: ServerResponse) => {
    if (req.method !== "POST") {
      res.setHeader("allow", "POST");
      return send(res, 405, failure("METHOD_NOT_ALLOWED", "Switchboard calls partners with POST"));
    }
    let env: Envelope;
    try {
      checkContentType(req.headers);
      env = await verifier.verify(await readBody(req), req.headers);
    } catch (err) {
      log?.(`switchboard call refused requestId=${headerOf(req, "x-service-request-id")} ${err instanceof VerificationError ? `${err.status} ${err.code}` : "500 INTERNAL"}`);
      return refuse(res, err);
    }
    log?.(`switchboard call verified requestId=${env.requestId}`);
    const work = () => respond(handler, env, costMicro);
    const [status, body] = dedupe ? await dedupe.run(env.requestId, work) : await work();
    send(res, status, body);
  };
}

function headerOf(req: IncomingMessage, name: string): string {
  const v = req.headers[name];
  return (Array.isArray(v) ? v[0] : v) ?? "-";
}

/**
 * Connect-style middleware for node:http servers and frameworks built on it: verifies the
 * call, sets req.switchboard (the envelope) and calls next(); refuses with the failure
 * envelope and status otherwise. Also reads a body an upstream parser left in req.body.
 */
export function nodeMiddleware(verifier: Verifier) {
  return async (req: VerifiedRequest, res: ServerResponse, next: (err?: unknown) => void) => {
    try {
      checkContentType(req.headers);
      const parsed = req.body;
      const body = parsed !== undefined && (typeof parsed === "string" || parsed instanceof Uint8Array || (typeof parsed === "object" && parsed !== null && Object.keys(parsed).length > 0))
        ? (parsed as string | Uint8Array | Record<string, unknown>)
        : await readBody(req);
      req.switchboard = await verifier.verify(body, req.headers);
    } catch (err) {
      return refuse(res, err);
    }
    next();
  };
}

/**
 * Express middleware (Express 4 and 5): `app.post("/rest", expressMiddleware(verifier),
 * (req, res) => res.json({ success: true, result: ... }))`; the envelope is req.switchboard.
 * Works before or after express.json() / express.raw().
 */
export const expressMiddleware = nodeMiddleware;

/** The part of a Hono context the middleware uses (no import of hono). */
interface HonoContextLike {
  req: { raw: Request };
  set(key: "switchboard", value: Envelope): void;
  json(body: unknown, status?: number): Response;
}

/**
 * Hono middleware: `app.post("/rest", honoMiddleware(verifier), (c) => c.json({ success:
 * true, result: ... }))`; the envelope is c.get("switchboard").
 */
export function honoMiddleware(verifier: Verifier) {
  return async (c: HonoContextLike, next: () => Promise<void>): Promise<Response | void> => {
    try {
      checkContentType(c.req.raw.headers);
      const body = await readStream(c.req.raw);
      // The body is read here, bounded; the handler reads it again (c.req.json()) from a copy.
      c.req.raw = new Request(c.req.raw, { body });
      c.set("switchboard", await verifier.verify(body, c.req.raw.headers));
    } catch (err) {
      if (err instanceof VerificationError) {
        const r = c.json(failure(err.code, err.message), err.status);
        if (err.closeConnection) r.headers.set("connection", "close");
        return r;
      }
      return c.json(failure("INTERNAL", "internal error"), 500);
    }
    await next();
  };
}

/**
 * MCP_HTTP: connect-style middleware in front of a Streamable HTTP MCP endpoint. A POST whose
 * JSON-RPC message (or batch) is a tools/call is verified from the X-Service-* headers and
 * the call's raw arguments and refused with 401/400/503 otherwise (that is what the
 * negative-auth probe checks); other messages (initialize, tools/list) pass. The parsed
 * body is left in req.body (hand it to the transport's handleRequest) and the envelope in
 * req.switchboard. Register the tool without an input schema so its arguments are not
 * coerced, and verify again in the tool with verifier.verifyHeaders(extra.requestInfo.headers, args)
 * if it can be reached another way.
 */
export function mcpMiddleware(verifier: Verifier) {
  return async (req: VerifiedRequest, res: ServerResponse, next: (err?: unknown) => void) => {
    if (req.method !== "POST") return next();
    try {
      const raw = await readBody(req);
      let parsed: unknown;
      try {
        parsed = JSON.parse(raw.toString("utf8"));
      } catch {
        parsed = undefined; // the MCP server answers what it cannot parse
      }
      req.body = parsed;
      for (const m of Array.isArray(parsed) ? parsed : [parsed]) {
        if (m === null || typeof m !== "object" || (m as { method?: unknown }).method !== "tools/call") continue;
        const params = (m as { params?: unknown }).params ?? {};
        if (typeof params !== "object" || params === null || Array.isArray(params)) throw badInput("tools/call params must be an object");
        req.switchboard = await verifier.verifyHeaders(req.headers, (params as { arguments?: unknown }).arguments);
      }
    } catch (err) {
      return refuse(res, err);
    }
    next();
  };
}
