package dispatch_test

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/ethereum/go-ethereum/crypto"
	"github.com/switchboard-hq/switchboard/cmd/switchboard/app/apptest"
	"github.com/switchboard-hq/switchboard/signing"
	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/storetest"
	"github.com/switchboard-hq/switchboard/tools/partners/partnertest"
	"github.com/switchboard-hq/switchboard/tools/webhooks"
)

// hookEndpoint creates an endpoint for key's account at url, for the call events, and returns
// verifiers of its two signatures: v1 (its secret) and v1a (the service key).
func (w *world) hookEndpoint(t *testing.T, key, url string) (v1, v1a *signing.WebhookVerifier) {
	t.Helper()
	status, out := w.env.REST(t, "POST", "/v1/webhooks/endpoints", key, map[string]any{"url": url,
		"eventTypes": []string{webhooks.CallSucceeded, webhooks.CallFailed, webhooks.CallRefunded}})
	if status != 201 && status != 200 {
		t.Fatalf("create an endpoint: %d %v", status, out)
	}
	secret, err := signing.ParseWebhookSecret(out["secret"].(string))
	if err != nil {
		t.Fatal(err)
	}
	pub := w.env.App.SigningKey.Public().(ed25519.PublicKey)
	return &signing.WebhookVerifier{Secret: secret, Now: w.env.Clock.Now},
		&signing.WebhookVerifier{PublicKeys: []ed25519.PublicKey{pub}, Now: w.env.Clock.Now}
}

// Calls tell their callers and their partners, through the real delivery worker to a TLS
// receiver, with both signatures valid: the caller's account gets each of its calls with the
// key that made it; the intent's owner gets the same call under the caller's pseudonym (the
// userId its envelope carried), never the caller's account id, key or e-mail. A success is
// call.succeeded with its charge, a partner's "no" and an outage call.failed, nothing charged.
func TestCallEventsReachTheCallerAndThePartner(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			w := newWorld(t, dialect, nil)
			var mu sync.Mutex
			var hits []received
			rcv := partnertest.Start(t, http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				mu.Lock()
				hits = append(hits, received{path: r.URL.Path, header: r.Header.Clone(), body: body})
				mu.Unlock()
				rw.WriteHeader(http.StatusNoContent)
			}))
			callerV1, callerV1a := w.hookEndpoint(t, w.caller, rcv.URL+"/caller")
			partnerV1, partnerV1a := w.hookEndpoint(t, w.publisher, rcv.URL+"/partner")
			w.publish(t, "@costly", "/cost", nil)
			w.publish(t, "@nope", "/fail", nil)
			w.publish(t, "@outage", "/down", nil)

			requests := map[string]string{} // requestId -> the event type it must be
			for msg, typ := range map[string]string{"@costly what is the answer": webhooks.CallSucceeded,
				"@nope weather in Atlantis": webhooks.CallFailed, "@outage weather in Paris": webhooks.CallFailed} {
				status, out := w.invoke(t, w.caller, map[string]any{"message": msg})
				id, _ := out["requestId"].(string)
				if id == "" {
					id, _ = out["error"].(map[string]any)["details"].(map[string]any)["requestId"].(string)
				}
				if id == "" {
					t.Fatalf("%s: %d %v", msg, status, out)
				}
				requests[id] = typ
			}
			pseudonym := w.seen["/cost"][0].UserID
			w.settledStore(t)
			for range 10 {
				r, err := w.env.App.Webhooks.RunOnce(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				if r.FannedOut == 0 && r.Attempts == 0 {
					break
				}
			}

			got := map[string][]string{} // receiver path -> "requestId type"
			mu.Lock()
			defer mu.Unlock()
			for _, hit := range hits {
				path := hit.path
				v1, v1a := partnerV1, partnerV1a
				if path == "/caller" {
					v1, v1a = callerV1, callerV1a
				}
				for _, v := range []*signing.WebhookVerifier{v1, v1a} {
					if _, err := v.Verify(hit.header, hit.body); err != nil {
						t.Fatalf("%s: a signature does not verify: %v\n%s", path, err, hit.body)
					}
				}
				var b struct {
					Type string            `json:"type"`
					Data webhooks.CallData `json:"data"`
				}
				if err := json.Unmarshal(hit.body, &b); err != nil {
					t.Fatal(err)
				}
				d := b.Data
				if requests[d.RequestID] != b.Type {
					t.Fatalf("%s: %s for %s, want %s: %s", path, b.Type, d.RequestID, requests[d.RequestID], hit.body)
				}
				switch path {
				case "/caller":
					if d.KeyID == "" || d.UserID != "" {
						t.Fatalf("the caller's event: %s", hit.body)
					}
				default:
					body := string(hit.body)
					if d.UserID != pseudonym || d.KeyID != "" || strings.Contains(body, w.callerID) || strings.Contains(body, "caller@example.com") {
						t.Fatalf("the partner's event names the caller (pseudonym %s): %s", pseudonym, body)
					}
				}
				if b.Type == webhooks.CallSucceeded && (d.ChargedMicro != 3000 || d.ChargedUsd != "0.003" || d.PartnerFeeMicro != 1000) {
					t.Fatalf("a success's charge: %s", hit.body)
				}
				if b.Type == webhooks.CallFailed && (d.ChargedMicro != 0 || d.RefundedMicro != 1000 || d.ErrorCode == "") {
					t.Fatalf("a failure's charge: %s", hit.body)
				}
				got[path] = append(got[path], d.RequestID+" "+b.Type)
			}
			var want []string
			for id, typ := range requests {
				want = append(want, id+" "+typ)
			}
			slices.Sort(want)
			for _, path := range []string{"/caller", "/partner"} {
				slices.Sort(got[path])
				if !slices.Equal(got[path], want) {
					t.Fatalf("%s received %v, want each call once: %v", path, got[path], want)
				}
			}
		})
	}
}

// received is a request the receiver took.
type received struct {
	path   string
	header http.Header
	body   []byte
}

// A flat-fee call paid on chain tells both parties once, with paidOnChain: call.succeeded
// when the partner succeeds (the fee paid out), call.refunded when it fails (the fee refunded
// on chain). Its quote tells nothing.
func TestPaidCallsTellSucceededOrRefunded(t *testing.T) {
	w, chain := flatWorld(t)
	flat := map[string]any{"feeRate": 1.2, "feeRateUnit": "flat_usdc", "payoutAddresses": map[string]string{"evm": partnerWallet.Hex()}}
	w.publish(t, "@flatok", "/free", flat)
	w.publish(t, "@flatno", "/fail", flat)
	w.listen(t)
	payer := chain.NewKey(t)
	chain.Mint(t, crypto.PubkeyToAddress(payer.PublicKey), 5_000_000)
	want := map[string]string{}
	for handle, typ := range map[string]string{"@flatok": webhooks.CallSucceeded, "@flatno": webhooks.CallRefunded} {
		q, _ := w.quote(t, handle+" forecast for Lisbon")
		status, _, out := apptest.Do(t, "POST", w.env.URL+"/v1/invoke", w.caller, map[string]any{"message": handle + " forecast for Lisbon",
			"confirmRequestId": q["requestId"], "payment": sign(t, chain, q, payer, nil)})
		if status != 200 || out["payment"] == nil {
			t.Fatalf("%s paid: %d %v", handle, status, out)
		}
		want[q["requestId"].(string)] = typ
	}
	st := w.settledStore(t)
	for id, typ := range want {
		var evs []store.WebhookEvent
		if err := st.DB().NewSelect().Model(&evs).Where("type LIKE 'call.%' AND body LIKE ?", "%"+id+"%").Scan(context.Background()); err != nil {
			t.Fatal(err)
		}
		if len(evs) != 2 || evs[0].AccountID == evs[1].AccountID {
			t.Fatalf("%s: %d events, want one for the caller and one for the partner: %+v", id, len(evs), evs)
		}
		for _, ev := range evs {
			var b struct{ Data webhooks.CallData }
			if err := json.Unmarshal([]byte(ev.Body), &b); err != nil {
				t.Fatal(err)
			}
			if ev.Type != typ || !b.Data.PaidOnChain || b.Data.ChargedMicro != 0 {
				t.Fatalf("%s: want %s, paid on chain, no credit charged: %s", id, typ, ev.Body)
			}
		}
	}
}

// listen gives the caller's and the publisher's accounts a webhook endpoint each: a call's
// events are written only for accounts with one.
func (w *world) listen(t *testing.T) {
	t.Helper()
	for _, key := range []string{w.caller, w.publisher} {
		if status, out := w.env.REST(t, "POST", "/v1/webhooks/endpoints", key, map[string]any{"url": w.partner.URL + "/hooks"}); status != 201 {
			t.Fatalf("create an endpoint: %d %v", status, out)
		}
	}
}
