// Package jsonrpc is a small JSON-RPC 2.0 client over HTTP, batch-first: EVM and Solana
// nodes both answer batches, which lets one round trip carry a whole balance query.
package jsonrpc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/switchboard-hq/switchboard/chain/httpx"
)

// Error is a JSON-RPC error object.
type Error struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *Error) Error() string {
	msg := e.Message
	if len(msg) > 200 {
		msg = msg[:200]
	}
	return fmt.Sprintf("JSON-RPC error %d: %s", e.Code, msg)
}

// Call is one method call; Batch fills Result or Err.
type Call struct {
	Method string
	Params any
	Result json.RawMessage
	Err    error
}

// Client talks to one endpoint.
type Client struct {
	url   string
	http  *http.Client
	limit int64
	now   func() time.Time
	id    atomic.Int64
}

// New returns a client for url; bodies over limit bytes are refused.
func New(url string, hc *http.Client, limit int64, now func() time.Time) *Client {
	return &Client{url: url, http: hc, limit: limit, now: now}
}

type request struct {
	JSONRPC string `json:"jsonrpc"`
	ID      int64  `json:"id"`
	Method  string `json:"method"`
	Params  any    `json:"params"`
}

type response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result"`
	Error   *Error          `json:"error"`
}

// Batch sends calls in one HTTP request (a JSON-RPC batch; a single call goes as a plain
// request) and fills each one's Result or Err. The returned error is a failure of the whole
// exchange (transport, status, malformed body). An endpoint that refuses batches (answers one
// error object) gets the calls one by one.
func (c *Client) Batch(ctx context.Context, calls ...*Call) error {
	if len(calls) == 0 {
		return nil
	}
	reqs := make([]request, len(calls))
	byID := make(map[int64]*Call, len(calls))
	for i, call := range calls {
		id := c.id.Add(1)
		params := call.Params
		if params == nil {
			params = []any{}
		}
		reqs[i] = request{JSONRPC: "2.0", ID: id, Method: call.Method, Params: params}
		byID[id] = call
	}
	var payload any = reqs
	if len(reqs) == 1 {
		payload = reqs[0] // one call goes as a plain request, which every node takes
	}
	body, err := json.Marshal(payload)
	if err != nil {
		return fmt.Errorf("encode request: %w", err)
	}
	raw, err := httpx.PostJSON(ctx, c.http, c.url, body, c.limit, c.now)
	if err != nil {
		return err
	}
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '{' {
		// Not a batch answer: a node that does not take batches says so in one error.
		var single response
		if err := httpx.Decode(raw, &single); err != nil {
			return err
		}
		if single.Error != nil && len(calls) == 1 {
			calls[0].Err = single.Error // answered with an error, whatever its id
			return nil
		}
		if single.Error != nil {
			for _, call := range calls {
				if err := c.Batch(ctx, call); err != nil {
					return err
				}
			}
			return nil
		}
		return c.fill(byID, []response{single})
	}
	var resps []response
	if err := httpx.Decode(raw, &resps); err != nil {
		return err
	}
	return c.fill(byID, resps)
}

func (c *Client) fill(byID map[int64]*Call, resps []response) error {
	for _, r := range resps {
		var id int64
		if err := json.Unmarshal(r.ID, &id); err != nil {
			continue
		}
		call, ok := byID[id]
		if !ok {
			continue
		}
		delete(byID, id)
		switch {
		case r.Error != nil:
			call.Err = r.Error
		case len(r.Result) == 0:
			call.Err = errors.New("malformed answer: no result")
		default:
			call.Result = r.Result
		}
	}
	for _, call := range byID {
		call.Err = errors.New("no answer to this call in the batch")
	}
	return nil
}
