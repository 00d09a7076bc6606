package dispatch_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/cmd/switchboard/app/apptest"
	"github.com/switchboard-hq/switchboard/signing"
	"github.com/switchboard-hq/switchboard/store/storetest"
	"github.com/switchboard-hq/switchboard/tools/partners/partnertest"
)

func benchWorld(b testing.TB, dialect string) *world {
	// The served path: no answer is checked against its output schema, as in serve.
	w := newWorldOn(b, apptest.Options{Dialect: dialect, Served: true}, func(c *apptest.Config) {
		c.DefaultRateLimit = 1 << 30
		c.DefaultSpendLimit = "1000000"
		c.StartingCreditUSD = "1000000"
	})
	w.publish(b, "@bench", "/free", nil)
	return w
}

func invokeBody() []byte {
	raw, _ := json.Marshal(map[string]any{"message": "@bench hello"})
	return raw
}

func post(client *http.Client, url, key string, body []byte) error {
	req, _ := http.NewRequest("POST", url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-api-key", key)
	return drain(client.Do(req))
}

// directCall posts a signed envelope to a partner endpoint, as Switchboard does, with nothing
// in between.
func directCall(signer *signing.Signer, base http.RoundTripper, url string) error {
	rt := signing.NewRESTRoundTripper(signer, signing.CallFields{RequestID: signing.NewRequestID(), IntentDefinitionID: "i", UserID: "u", Args: json.RawMessage(`{"query":"hello"}`)}, base)
	req, _ := http.NewRequestWithContext(context.Background(), "POST", url, http.NoBody)
	return drain(rt.RoundTrip(req))
}

// drain reads and closes a response that must be a 200.
func drain(resp *http.Response, err error) error {
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 300))
		return fmt.Errorf("status %d: %s", resp.StatusCode, body)
	}
	io.Copy(io.Discard, resp.Body)
	return nil
}

// callers onboards n accounts of their own and returns their keys.
func (w *world) callers(t testing.TB, n int) []string {
	keys := make([]string, n)
	for i := range keys {
		if i%15 == 14 {
			w.env.Clock.Advance(time.Hour) // signups are limited to 20 an hour per client
		}
		keys[i] = w.env.Onboard(t, fmt.Sprintf("bench%d@example.com", i))["apiKey"].(string)
	}
	return keys
}

// BenchmarkInvoke: POST /v1/invoke to a loopback TLS partner (sign, dispatch, verify by the
// partner, reserve and settle, record), against BenchmarkPartnerDirect calling the same
// partner with a signed envelope and no Switchboard in between. The difference is the
// latency Switchboard adds.
func BenchmarkInvoke(b *testing.B) {
	for _, d := range storetest.Dialects() {
		b.Run(d, func(b *testing.B) {
			w := benchWorld(b, d)
			body := invokeBody()
			client := &http.Client{}
			b.ResetTimer()
			for b.Loop() {
				if err := post(client, w.env.URL+"/v1/invoke", w.caller, body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkPartnerDirect(b *testing.B) {
	var pub ed25519.PublicKey
	priv := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, 32))
	pub = priv.Public().(ed25519.PublicKey)
	p := partnertest.Correct(b, pub)
	signer := signing.NewSigner(priv)
	base := p.Client().Transport
	b.ResetTimer()
	for b.Loop() {
		if err := directCall(signer, base, p.URL); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkInvokeParallel: invocations per second with 32 concurrent callers (16 per CPU on
// the 2-core machine), each its own account: one account's calls serialize on its balance row,
// as they must.
func BenchmarkInvokeParallel(b *testing.B) {
	for _, d := range storetest.Dialects() {
		b.Run(d, func(b *testing.B) {
			w := benchWorld(b, d)
			keys := w.callers(b, 32)
			body := invokeBody()
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
			var next atomic.Int64
			b.SetParallelism(16)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				key := keys[int(next.Add(1)-1)%len(keys)]
				for pb.Next() {
					if err := post(client, w.env.URL+"/v1/invoke", key, body); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "invocations/s")
		})
	}
}

// BenchmarkInvokeWrite: one confirmed write (EXECUTE) per op, the quote and its confirmation,
// to the same partner as BenchmarkInvoke. A write is answered only once its outcome has
// committed, journaled first (docs/decisions.md, "Writes are answered only once their outcome is
// durable"): this is what that costs a caller.
func BenchmarkInvokeWrite(b *testing.B) {
	for _, d := range storetest.Dialects() {
		b.Run(d, func(b *testing.B) {
			w := benchWorld(b, d)
			w.publish(b, "@benchw", "/free", map[string]any{"category": "EXECUTE"})
			client := &http.Client{}
			quote, _ := json.Marshal(map[string]any{"message": "@benchw do it"})
			b.ResetTimer()
			for b.Loop() {
				req, _ := http.NewRequest("POST", w.env.URL+"/v1/invoke", bytes.NewReader(quote))
				req.Header.Set("x-api-key", w.caller)
				resp, err := client.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				var out struct {
					Error struct {
						Details struct {
							RequestID string `json:"requestId"`
						} `json:"details"`
					} `json:"error"`
				}
				json.NewDecoder(resp.Body).Decode(&out)
				resp.Body.Close()
				if resp.StatusCode != 409 || out.Error.Details.RequestID == "" {
					b.Fatalf("quote: %d", resp.StatusCode)
				}
				confirm, _ := json.Marshal(map[string]any{"message": "@benchw do it", "confirmRequestId": out.Error.Details.RequestID})
				if err := post(client, w.env.URL+"/v1/invoke", w.caller, confirm); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
