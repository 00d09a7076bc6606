package payments_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/ledger"
	"github.com/switchboard-hq/switchboard/store/storetest"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/idempotency"
	"github.com/switchboard-hq/switchboard/tools/payments"
)

// recordedAuth is the authorization an x402 payment's record holds.
type recordedAuth struct {
	From, To, Value, ValidAfter, ValidBefore, Nonce, Token string
	ChainID                                                int64
}

func authOf(t *testing.T, inv store.Invocation) recordedAuth {
	t.Helper()
	var args struct{ Authorization *recordedAuth }
	if err := json.Unmarshal([]byte(inv.Args), &args); err != nil || args.Authorization == nil {
		t.Fatalf("the record's args %s hold no authorization (%v)", inv.Args, err)
	}
	return *args.Authorization
}

// TestX402FetchLostAnswers: a seller that takes the signed payment and drops the connection
// leaves the payment dispatching, its authorization (from, to, value, window, nonce, token,
// chain) on the record; a retry with the same Idempotency-Key, before and after
// idempotency.Abandoned, signs nothing and says the outcome is being determined. The sweeper
// concludes it by the chain, once even when two sweeps race: the one the seller settled
// succeeded with its transaction; the one never settled is left while its authorization is
// valid, then failed once it expired. The retries then answer those outcomes; ledger-check is
// clean. Both databases.
func TestX402FetchLostAnswers(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			w := newFetchWorld(t, dialect)
			settledA := w.agent(t, "settled@example.com", true, nil)
			lostA := w.agent(t, "lost@example.com", true, nil)
			hdr := map[string]string{"Idempotency-Key": "lost-1"}
			lost := func(t *testing.T, a agent, mode string) store.Invocation {
				t.Helper()
				w.seller.dropping(mode)
				defer w.seller.dropping("")
				status, out := w.fetch(t, a, map[string]any{}, hdr)
				e, _ := out["error"].(map[string]any)
				if status != 502 || e["code"] != "UPSTREAM" || !strings.Contains(fmt.Sprint(e["message"]), "being determined") {
					t.Fatalf("a paid request whose answer was lost: %d %v", status, out)
				}
				rows := w.movements(t, a.userID)
				if len(rows) != 1 || rows[0].State != store.InvDispatching || fmt.Sprint(e["details"].(map[string]any)["requestId"]) != rows[0].RequestID {
					t.Fatalf("records %+v; the error %v", rows, e)
				}
				au := authOf(t, rows[0])
				if au.From != a.wallet.Hex() || au.To != w.seller.payTo.Hex() || au.Value != "250000" || au.Token != w.chain.Token.Hex() || au.ChainID != 31337 || len(au.Nonce) != 66 || au.ValidBefore == "" {
					t.Fatalf("the recorded authorization %+v", au)
				}
				return rows[0]
			}
			settled := lost(t, settledA, "settled")
			never := lost(t, lostA, "unsettled")
			if asked, paid := w.seller.counts(); paid != 1 || asked < 2 {
				t.Fatalf("the seller saw %d payments and settled %d; want 1 settled", asked, paid)
			}
			retry := func(t *testing.T, a agent, wantStatus int, wantCode, wantText string) {
				t.Helper()
				asked, _ := w.seller.counts()
				status, out := w.fetch(t, a, map[string]any{}, hdr)
				e, _ := out["error"].(map[string]any)
				if status != wantStatus || e["code"] != wantCode || !strings.Contains(fmt.Sprint(e["message"]), wantText) {
					t.Fatalf("the retry: %d %v; want %d %s %q", status, out, wantStatus, wantCode, wantText)
				}
				if now, _ := w.seller.counts(); now != asked {
					t.Fatalf("the retry sent %d payments to the seller", now-asked)
				}
			}
			retry(t, settledA, 409, "CONFLICT", "still in flight")
			// Past the idempotency window's bound for a call in flight, still nothing is signed.
			w.env.Clock.Advance(idempotency.Abandoned + time.Minute)
			retry(t, settledA, 409, "CONFLICT", "dispatching")
			retry(t, lostA, 409, "CONFLICT", "dispatching")

			// Two sweeps race: the settled payment is concluded once, the other left (valid).
			var wg sync.WaitGroup
			for range 2 {
				wg.Go(func() {
					if _, _, err := w.env.App.Sweep(ctx); err != nil {
						t.Error(err)
					}
				})
			}
			wg.Wait()
			row := w.movements(t, settledA.userID)[0]
			if row.State != store.InvSucceeded || row.TxHash == nil || len(*row.TxHash) != 66 || row.RequestID != settled.RequestID {
				t.Fatalf("the settled payment after the sweep: %+v", row)
			}
			if n := w.events(t, settledA.userID, "x402.paid"); n != 1 {
				t.Fatalf("%d x402.paid events, want 1", n)
			}
			if row := w.movements(t, lostA.userID)[0]; row.State != store.InvDispatching {
				t.Fatalf("an unsettled payment still valid was concluded: %+v", row)
			}
			retry(t, settledA, 502, "UPSTREAM", "settled on chain")
			retry(t, lostA, 409, "CONFLICT", "dispatching")

			// Its authorization expires on chain: the next sweeps fail it, once.
			w.chain.Warp(t, 10*time.Minute)
			for range 2 {
				wg.Go(func() {
					if _, _, err := w.env.App.Sweep(ctx); err != nil {
						t.Error(err)
					}
				})
			}
			wg.Wait()
			if row := w.movements(t, lostA.userID)[0]; row.State != store.InvFailed || row.TxHash != nil || row.RequestID != never.RequestID {
				t.Fatalf("the expired payment after the sweep: %+v", row)
			}
			if n := w.events(t, lostA.userID, "x402.failed"); n != 1 || w.events(t, lostA.userID, "x402.paid") != 0 {
				t.Fatalf("%d x402.failed events, want 1", n)
			}
			retry(t, lostA, 502, "UPSTREAM", "never settled")
			if got := w.chain.Balance(t, w.seller.payTo); got != 250_000 {
				t.Fatalf("the seller holds %d, want 250000 (paid once)", got)
			}
			if got := w.chain.Balance(t, lostA.wallet); got != 10_000_000 {
				t.Fatalf("the unsettled payer holds %d, want 10000000", got)
			}
			if got := w.chain.Balance(t, common.HexToAddress(settledA.wallet.Hex())); got != 9_750_000 {
				t.Fatalf("the settled payer holds %d, want 9750000", got)
			}
			if err := ledger.Check(ctx, w.env.App.Store); err != nil {
				t.Fatalf("ledger-check: %v", err)
			}
		})
	}
}

// TestX402FetchGuardsItsRecord: x402_fetch run under a CallID whose record exists (a call
// taken over under the same CallID) answers what is recorded and signs nothing: dispatching,
// CONFLICT saying the outcome is being determined; concluded by the sweeper, its recorded
// error; concluded with the seller's answer, that answer. Both databases.
func TestX402FetchGuardsItsRecord(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			w := newFetchWorld(t, dialect)
			a := w.agent(t, "guard@example.com", true, nil)
			var run tools.Run
			if _, err := w.env.App.Parts().Kernel.Tool("x402_fetch").Wrapped(nil, func(next tools.Run) tools.Run { run = next; return next }); err != nil {
				t.Fatal(err)
			}
			again := func(t *testing.T, callID string) (any, error) {
				t.Helper()
				rows := w.movements(t, a.userID)
				p := &tools.Principal{AccountID: a.userID, Method: tools.AuthAPIKey, KeyID: rows[0].KeyID, Scopes: []string{string(tools.ScopeSend)}, SpendLimitMicro: 1 << 40, RateLimitPerMinute: 600}
				asked, _ := w.seller.counts()
				args, _ := json.Marshal(map[string]any{"url": w.seller.srv.URL + "/weather"})
				out, err := run(ctx, &tools.Caller{Principal: p, CallID: callID}, args)
				if now, _ := w.seller.counts(); now != asked {
					t.Fatalf("the call under a recorded CallID sent %d payments", now-asked)
				}
				return out, err
			}
			status, paid := w.fetch(t, a, map[string]any{}, map[string]string{"Idempotency-Key": "guard-2"})
			if status != 200 {
				t.Fatalf("a paid fetch: %d %v", status, paid)
			}
			out, err := again(t, paid["requestId"].(string))
			fo, ok := out.(payments.FetchOutput)
			if err != nil || !ok || fo.Payment == nil || fo.Payment.TxHash != paid["payment"].(map[string]any)["txHash"] || fo.PaidUsd.String() != "0.25" {
				t.Fatalf("under a paid record's CallID: %+v %v", out, err)
			}
			w.seller.dropping("settled")
			if status, out := w.fetch(t, a, map[string]any{}, map[string]string{"Idempotency-Key": "guard-1"}); status != 502 {
				t.Fatalf("a lost answer: %d %v", status, out)
			}
			w.seller.dropping("")
			rows := w.movements(t, a.userID)
			lost := rows[0]
			if lost.State != store.InvDispatching {
				lost = rows[1]
			}
			_, err = again(t, lost.RequestID)
			if e, ok := err.(*tools.Error); !ok || e.Code != tools.CodeConflict || !strings.Contains(e.Message, "being determined") || e.RetryAfter == 0 {
				t.Fatalf("under a dispatching record's CallID: %v", err)
			}
			w.env.Clock.Advance(2 * time.Minute)
			if _, _, err := w.env.App.Sweep(ctx); err != nil {
				t.Fatal(err)
			}
			_, err = again(t, lost.RequestID)
			if e, ok := err.(*tools.Error); !ok || e.Code != tools.CodeUpstream || !strings.Contains(e.Message, "settled on chain") {
				t.Fatalf("under a swept record's CallID: %v", err)
			}

			if _, settled := w.seller.counts(); settled != 2 || len(w.movements(t, a.userID)) != 2 {
				t.Fatalf("%d payments settled; want 2", settled)
			}
		})
	}
}
