package evm

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/switchboard-hq/switchboard/chain/jsonrpc"
)

// MaxBody bounds an RPC answer.
const MaxBody = 8 << 20

// ErrNotToken is an address whose contract does not answer like an ERC-20.
var ErrNotToken = errors.New("not an ERC-20 token contract")

// Client reads one EVM chain.
type Client struct {
	chainID  int64
	rpc      *jsonrpc.Client
	verified atomic.Bool // the endpoint answered eth_chainId with chainID
}

// ChainID is the chain the client was made for.
func (c *Client) ChainID() int64 { return c.chainID }

// NewClient returns a client for the chain chainID served at url.
func NewClient(chainID int64, url string, hc *http.Client, now func() time.Time) *Client {
	return &Client{chainID: chainID, rpc: jsonrpc.New(url, hc, MaxBody, now)}
}

// batch runs calls, first checking (once per client) that the endpoint serves the right chain:
// a misconfigured URL must not report another chain's balances.
func (c *Client) batch(ctx context.Context, calls ...*jsonrpc.Call) error {
	var idCall *jsonrpc.Call
	if !c.verified.Load() {
		idCall = &jsonrpc.Call{Method: "eth_chainId"}
		calls = append([]*jsonrpc.Call{idCall}, calls...)
	}
	if err := c.rpc.Batch(ctx, calls...); err != nil {
		return err
	}
	if idCall != nil {
		if idCall.Err != nil {
			return fmt.Errorf("eth_chainId: %w", idCall.Err)
		}
		got, err := quantity(idCall.Result)
		if err != nil {
			return fmt.Errorf("eth_chainId: %w", err)
		}
		if !got.IsInt64() || got.Int64() != c.chainID {
			return fmt.Errorf("the RPC endpoint serves chain id %s, not %d: check its URL setting", got, c.chainID)
		}
		c.verified.Store(true)
	}
	return nil
}

// quantity reads a JSON-RPC hex quantity ("0x1a").
func quantity(raw json.RawMessage) (*big.Int, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("malformed quantity: %w", err)
	}
	if !strings.HasPrefix(s, "0x") || len(s) < 3 || len(s) > 66 {
		return nil, fmt.Errorf("malformed quantity %q", s)
	}
	n, ok := new(big.Int).SetString(s[2:], 16)
	if !ok {
		return nil, fmt.Errorf("malformed quantity %q", s)
	}
	return n, nil
}

func hexData(raw json.RawMessage) ([]byte, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("malformed data: %w", err)
	}
	if !strings.HasPrefix(s, "0x") {
		return nil, fmt.Errorf("malformed data: no 0x prefix")
	}
	return hex.DecodeString(s[2:])
}

func hexAddr(a [20]byte) string { return "0x" + hex.EncodeToString(a[:]) }

type callObject struct {
	To   string `json:"to"`
	Data string `json:"data"`
}

func aggregateCall(calls []Call3) *jsonrpc.Call {
	return &jsonrpc.Call{Method: "eth_call", Params: []any{
		callObject{To: Multicall3, Data: "0x" + hex.EncodeToString(EncodeAggregate3(calls))}, "latest"}}
}

func aggregateResult(call *jsonrpc.Call, want int) ([]Result3, error) {
	if call.Err != nil {
		return nil, fmt.Errorf("eth_call aggregate3: %w", call.Err)
	}
	data, err := hexData(call.Result)
	if err != nil {
		return nil, fmt.Errorf("eth_call aggregate3: %w", err)
	}
	res, err := DecodeAggregate3(data)
	if err != nil {
		return nil, err
	}
	if len(res) != want {
		return nil, fmt.Errorf("aggregate3 returned %d results for %d calls", len(res), want)
	}
	return res, nil
}

// Holdings are balances read in one round trip.
type Holdings struct {
	Wei    []*big.Int   // native balance per holder
	Tokens [][]*big.Int // Tokens[t][h]: balance of token t held by holder h; nil when that call failed
	Failed []string     // per token: why its balanceOf failed ("" when it did not)
}

// Holdings reads the native balance of every holder (eth_getBalance) and every token's
// balanceOf for every holder (one aggregate3 eth_call, failures allowed per call), all in one
// JSON-RPC batch.
func (c *Client) Holdings(ctx context.Context, holders, tokens [][20]byte) (*Holdings, error) {
	var calls []*jsonrpc.Call
	for _, h := range holders {
		calls = append(calls, &jsonrpc.Call{Method: "eth_getBalance", Params: []any{hexAddr(h), "latest"}})
	}
	var agg *jsonrpc.Call
	var sub []Call3
	if len(tokens) > 0 && len(holders) > 0 {
		for _, t := range tokens {
			for _, h := range holders {
				sub = append(sub, Call3{Target: t, AllowFailure: true, CallData: BalanceOfData(h)})
			}
		}
		agg = aggregateCall(sub)
		calls = append(calls, agg)
	}
	if err := c.batch(ctx, calls...); err != nil {
		return nil, err
	}
	out := &Holdings{Wei: make([]*big.Int, len(holders)), Tokens: make([][]*big.Int, len(tokens)), Failed: make([]string, len(tokens))}
	for i := range holders {
		if calls[i].Err != nil {
			return nil, fmt.Errorf("eth_getBalance: %w", calls[i].Err)
		}
		wei, err := quantity(calls[i].Result)
		if err != nil {
			return nil, fmt.Errorf("eth_getBalance: %w", err)
		}
		out.Wei[i] = wei
	}
	if agg == nil {
		return out, nil
	}
	res, err := aggregateResult(agg, len(sub))
	if err != nil {
		return nil, err
	}
	for t := range tokens {
		out.Tokens[t] = make([]*big.Int, len(holders))
		for h := range holders {
			r := res[t*len(holders)+h]
			if !r.Success {
				out.Failed[t] = "balanceOf reverted"
				continue
			}
			v, err := DecodeUint256(r.ReturnData)
			if err != nil {
				out.Failed[t] = "balanceOf returned no number"
				continue
			}
			out.Tokens[t][h] = v
		}
	}
	return out, nil
}

// Metadata is what an ERC-20 says about itself.
type Metadata struct {
	Name     string
	Symbol   string
	Decimals int
}

// TokenMetadata reads name(), symbol() and decimals() of token in one aggregate3 call.
// ErrNotToken when the address does not answer like an ERC-20 (no code, no decimals).
func (c *Client) TokenMetadata(ctx context.Context, token [20]byte) (Metadata, error) {
	sub := []Call3{
		{Target: token, AllowFailure: true, CallData: SelName[:]},
		{Target: token, AllowFailure: true, CallData: SelSymbol[:]},
		{Target: token, AllowFailure: true, CallData: SelDecimals[:]},
	}
	agg := aggregateCall(sub)
	if err := c.batch(ctx, agg); err != nil {
		return Metadata{}, err
	}
	res, err := aggregateResult(agg, len(sub))
	if err != nil {
		return Metadata{}, err
	}
	if !res[2].Success || !res[1].Success {
		return Metadata{}, ErrNotToken
	}
	dec, err := DecodeUint256(res[2].ReturnData)
	if err != nil || dec.Cmp(big.NewInt(36)) > 0 {
		return Metadata{}, ErrNotToken
	}
	sym, err := DecodeString(res[1].ReturnData)
	if err != nil || sym == "" {
		return Metadata{}, ErrNotToken
	}
	md := Metadata{Symbol: sym, Name: sym, Decimals: int(dec.Int64())}
	if res[0].Success {
		if name, err := DecodeString(res[0].ReturnData); err == nil && name != "" {
			md.Name = name
		}
	}
	return md, nil
}

// GasPrice is the node's current gas price in wei (eth_gasPrice).
func (c *Client) GasPrice(ctx context.Context) (*big.Int, error) {
	call := &jsonrpc.Call{Method: "eth_gasPrice"}
	if err := c.batch(ctx, call); err != nil {
		return nil, err
	}
	if call.Err != nil {
		return nil, fmt.Errorf("eth_gasPrice: %w", call.Err)
	}
	wei, err := quantity(call.Result)
	if err != nil {
		return nil, fmt.Errorf("eth_gasPrice: %w", err)
	}
	return wei, nil
}
