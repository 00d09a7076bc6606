package jsonrpc

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// A node that refuses batches answers one error object; the client then sends the calls one
// by one.
func TestBatchFallsBackToSingleCalls(t *testing.T) {
	requests := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests++
		body, _ := io.ReadAll(r.Body)
		if strings.HasPrefix(strings.TrimSpace(string(body)), "[") {
			io.WriteString(w, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"batch requests are not supported"}}`)
			return
		}
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		json.Unmarshal(body, &req)
		if req.Method == "bad" {
			io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(req.ID)+`,"error":{"code":-32601,"message":"no such method"}}`)
			return
		}
		io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(req.ID)+`,"result":"`+req.Method+`"}`)
	}))
	defer srv.Close()
	c := New(srv.URL, srv.Client(), 1<<20, time.Now)
	a, b, bad := &Call{Method: "a"}, &Call{Method: "b"}, &Call{Method: "bad"}
	if err := c.Batch(context.Background(), a, b, bad); err != nil {
		t.Fatal(err)
	}
	if string(a.Result) != `"a"` || string(b.Result) != `"b"` || bad.Err == nil || bad.Err.Error() != "JSON-RPC error -32601: no such method" {
		t.Fatalf("results %s %s %v", a.Result, b.Result, bad.Err)
	}
	if requests != 4 {
		t.Fatalf("requests = %d, want the batch then three single calls", requests)
	}
}

func TestBatchReportsMissingAnswersAndBadBodies(t *testing.T) {
	body := `[]`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, body) }))
	defer srv.Close()
	c := New(srv.URL, srv.Client(), 1<<20, time.Now)
	a := &Call{Method: "a"}
	if err := c.Batch(context.Background(), a); err != nil || a.Err == nil {
		t.Fatalf("an unanswered call must carry an error: %v %v", err, a.Err)
	}
	body = `<html>oops</html>`
	if err := c.Batch(context.Background(), &Call{Method: "a"}); err == nil || !strings.Contains(err.Error(), "malformed JSON") {
		t.Fatalf("HTML body: %v", err)
	}
	body = strings.Repeat(" ", 2<<20)
	if err := c.Batch(context.Background(), &Call{Method: "a"}); err == nil || !strings.Contains(err.Error(), "too large") {
		t.Fatalf("oversized body: %v", err)
	}
}
