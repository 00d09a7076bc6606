// Package signing implements the signed partner calls of Switchboard, both sides:
//
// Service side: Canonicalize (RFC 8785 canonical JSON, byte-identical to JavaScript's
// JSON.stringify with recursively sorted keys), Signer (Ed25519 over the canonical
// {args, intentDefinitionId, requestId, timestamp, userId}), SetHeaders, Pseudonym (pairwise
// pseudonymous userId) and RoundTripper (signs every HTTP attempt of a REST or MCP_HTTP
// call, re-signing retries with a fresh timestamp and the same requestId).
//
// Partner side: Verifier (public key from the service URL, PEM or a key; cached one hour;
// stale key kept when a refresh fails; 503 without any key), Middleware for REST endpoints,
// MCPMiddleware and Verifier.VerifyHeaders for MCP_HTTP endpoints, and Dedupe /
// DedupeMiddleware to replay the first response per requestId for about 60 seconds, and
// Charging to answer a success with its providerCostMicro: Switchboard pays a partner what it
// reports, capped by its published feeRate, and nothing when it reports nothing, so answer
// with Charging(result, micro), micro being FeeRateMicro of your feeRate for the quoted rate.
//
// Numbers: every JavaScript partner reads JSON numbers as IEEE-754 doubles, so Canonicalize
// rejects any number whose value a double cannot hold exactly as written (for example
// integers beyond 2^53 such as 12345678901234567890) instead of rounding it. Send amounts
// as decimal strings. Invalid UTF-8, unpaired surrogate escapes and duplicate keys are
// rejected too.
//
// The package imports nothing else of Switchboard, so partners can depend on it alone.
// docs/partners.md is the partner guide; testdata/signing holds cross-language test vectors.
package signing
