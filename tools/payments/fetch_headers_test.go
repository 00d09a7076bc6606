package payments_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/switchboard-hq/switchboard/store/storetest"
)

// TestX402FetchHeaderBounds: x402_fetch sends the caller's headers within bounds (at most 32,
// names HTTP tokens, values at most 4096 characters) and refuses, with a message naming the
// header and nothing sent, the connection's own, the host, credentials and x402's headers.
// Both databases.
func TestX402FetchHeaderBounds(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			w := newFetchWorld(t, dialect)
			a := w.agent(t, "headers@example.com", true, nil)
			status, out := w.fetch(t, a, map[string]any{"headers": map[string]any{"X-Trace": "abc", "Accept": "application/json"}}, nil)
			if status != 200 || out["paidUsd"] != 0.25 {
				t.Fatalf("a fetch with headers: %d %v", status, out)
			}
			w.seller.mu.Lock()
			seen := w.seller.seen
			w.seller.mu.Unlock()
			if seen.Get("X-Trace") != "abc" || seen.Get("Accept") != "application/json" {
				t.Fatalf("the seller saw headers %v", seen)
			}
			many := map[string]any{}
			for i := range 33 {
				many[fmt.Sprintf("X-H%d", i)] = "v"
			}
			for _, c := range []struct {
				name    string
				headers map[string]any
				want    string
			}{
				{"too many", many, "headers"},
				{"a long value", map[string]any{"X-Long": strings.Repeat("a", 4097)}, "headers"},
				{"not a token", map[string]any{"X Bad": "v"}, "headers"},
				{"a control character", map[string]any{"X-Split": "a\r\nHost: evil"}, "control character"},
				{"hop-by-hop", map[string]any{"Connection": "close"}, "Connection is not sent"},
				{"upgrade", map[string]any{"Upgrade": "websocket"}, "Upgrade is not sent"},
				{"host", map[string]any{"host": "example.com"}, "host is not sent"},
				{"a payment", map[string]any{"Payment-Signature": "x"}, "Payment-Signature is not sent"},
				{"a v1 payment", map[string]any{"X-PAYMENT": "x"}, "X-PAYMENT is not sent"},
			} {
				t.Run(c.name, func(t *testing.T) {
					w.seller.mu.Lock()
					w.seller.seen = nil
					w.seller.mu.Unlock()
					status, out := w.fetch(t, a, map[string]any{"headers": c.headers}, nil)
					e, _ := out["error"].(map[string]any)
					if status != 400 || e["code"] != "BAD_INPUT" || !strings.Contains(fmt.Sprint(e["message"]), c.want) {
						t.Fatalf("want 400 BAD_INPUT %q: %d %v", c.want, status, out)
					}
					w.seller.mu.Lock()
					defer w.seller.mu.Unlock()
					if w.seller.seen != nil {
						t.Fatalf("a refused request reached the seller: %v", w.seller.seen)
					}
				})
			}
			if rows := w.movements(t, a.userID); len(rows) != 1 {
				t.Fatalf("%d records; want the one paid request", len(rows))
			}
		})
	}
}
