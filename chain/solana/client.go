// Package solana reads Solana balances over JSON-RPC: lamports (getBalance) and token accounts
// of both the SPL Token and Token-2022 programs (getTokenAccountsByOwner, jsonParsed), reading
// the raw integer amount and decimals, never the float uiAmount.
package solana

import (
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"time"

	"github.com/switchboard-hq/switchboard/chain/httpx"
	"github.com/switchboard-hq/switchboard/chain/jsonrpc"
)

// Token programs whose accounts hold fungible tokens.
const (
	TokenProgram     = "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA"
	Token2022Program = "TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb"
)

// MaxBody bounds an RPC answer (a wallet with thousands of token accounts fits).
const MaxBody = 16 << 20

// Client reads Solana.
type Client struct{ rpc *jsonrpc.Client }

// NewClient returns a client for the RPC endpoint at url.
func NewClient(url string, hc *http.Client, now func() time.Time) *Client {
	return &Client{rpc: jsonrpc.New(url, hc, MaxBody, now)}
}

// TokenHolding is one mint's total across an owner's token accounts.
type TokenHolding struct {
	Mint     string
	Amount   *big.Int // raw integer amount
	Decimals int
	Program  string
}

// Holdings are one owner's balances.
type Holdings struct {
	Lamports *big.Int
	Tokens   []TokenHolding // non-zero holdings, in the order first seen
}

// Holdings reads every owner's lamports and token accounts in one JSON-RPC batch.
func (c *Client) Holdings(ctx context.Context, owners []string) ([]*Holdings, error) {
	const per = 3
	calls := make([]*jsonrpc.Call, 0, per*len(owners))
	for _, o := range owners {
		calls = append(calls,
			&jsonrpc.Call{Method: "getBalance", Params: []any{o}},
			&jsonrpc.Call{Method: "getTokenAccountsByOwner", Params: []any{o, map[string]string{"programId": TokenProgram}, map[string]string{"encoding": "jsonParsed"}}},
			&jsonrpc.Call{Method: "getTokenAccountsByOwner", Params: []any{o, map[string]string{"programId": Token2022Program}, map[string]string{"encoding": "jsonParsed"}}},
		)
	}
	if err := c.rpc.Batch(ctx, calls...); err != nil {
		return nil, err
	}
	out := make([]*Holdings, len(owners))
	for i := range owners {
		h := &Holdings{}
		bal := calls[per*i]
		if bal.Err != nil {
			return nil, fmt.Errorf("getBalance: %w", bal.Err)
		}
		var b struct {
			Value json.Number `json:"value"`
		}
		if err := httpx.Decode(bal.Result, &b); err != nil {
			return nil, fmt.Errorf("getBalance: %w", err)
		}
		lamports, ok := new(big.Int).SetString(b.Value.String(), 10)
		if !ok || lamports.Sign() < 0 {
			return nil, fmt.Errorf("getBalance: malformed value %q", b.Value)
		}
		h.Lamports = lamports
		index := map[string]int{}
		for p, program := range []string{TokenProgram, Token2022Program} {
			call := calls[per*i+1+p]
			if call.Err != nil {
				return nil, fmt.Errorf("getTokenAccountsByOwner (%s): %w", programName(program), call.Err)
			}
			accts, err := parseTokenAccounts(call.Result)
			if err != nil {
				return nil, fmt.Errorf("getTokenAccountsByOwner (%s): %w", programName(program), err)
			}
			for _, a := range accts {
				if a.Amount.Sign() == 0 {
					continue
				}
				if j, seen := index[a.Mint]; seen {
					h.Tokens[j].Amount.Add(h.Tokens[j].Amount, a.Amount)
					continue
				}
				index[a.Mint] = len(h.Tokens)
				a.Program = program
				h.Tokens = append(h.Tokens, a)
			}
		}
		out[i] = h
	}
	return out, nil
}

// ProgramName names a token program for a message (SPL Token or Token-2022).
func ProgramName(p string) string { return programName(p) }

func programName(p string) string {
	if p == Token2022Program {
		return "Token-2022"
	}
	return "SPL Token"
}

type tokenAccounts struct {
	Value []struct {
		Pubkey  string `json:"pubkey"`
		Account struct {
			Data struct {
				Parsed struct {
					Info struct {
						Mint        string `json:"mint"`
						TokenAmount struct {
							Amount   string      `json:"amount"`
							Decimals json.Number `json:"decimals"`
						} `json:"tokenAmount"`
					} `json:"info"`
					Type string `json:"type"`
				} `json:"parsed"`
			} `json:"data"`
		} `json:"account"`
	} `json:"value"`
}

func parseTokenAccounts(raw json.RawMessage) ([]TokenHolding, error) {
	var ta tokenAccounts
	if err := httpx.Decode(raw, &ta); err != nil {
		return nil, err
	}
	out := make([]TokenHolding, 0, len(ta.Value))
	for _, v := range ta.Value {
		info := v.Account.Data.Parsed.Info
		if v.Account.Data.Parsed.Type != "account" || info.Mint == "" {
			continue // not a parsed token account (e.g. a mint or an unparsed extension layout)
		}
		amt, ok := new(big.Int).SetString(info.TokenAmount.Amount, 10)
		if !ok || amt.Sign() < 0 {
			return nil, fmt.Errorf("account %s: malformed amount %q", v.Pubkey, info.TokenAmount.Amount)
		}
		dec, err := info.TokenAmount.Decimals.Int64()
		if err != nil || dec < 0 || dec > 36 {
			return nil, fmt.Errorf("account %s: malformed decimals %q", v.Pubkey, info.TokenAmount.Decimals)
		}
		out = append(out, TokenHolding{Mint: info.Mint, Amount: amt, Decimals: int(dec)})
	}
	return out, nil
}
