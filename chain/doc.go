// Package chain holds Switchboard's clients for blockchains, one per upstream: evm (JSON-RPC
// with Multicall3), solana (JSON-RPC), over jsonrpc and httpx. It imports nothing else of
// ours, so token lookups, payments and payouts all share the same clients.
package chain
