package billing_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/invocations"
	"github.com/switchboard-hq/switchboard/store/spending"
	"github.com/switchboard-hq/switchboard/store/storetest"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/billing"
	"github.com/switchboard-hq/switchboard/tools/webhooks"
)

func putPolicy(t *testing.T, st *store.Store, svc *billing.Service, accountID, body string) {
	t.Helper()
	err := st.InTx(context.Background(), func(ctx context.Context, q *store.Q) error {
		return spending.PutPolicy(ctx, q, &spending.Policy{AccountID: accountID, Body: body, UpdatedAt: time.Now().UTC(), UpdatedBy: "test"})
	})
	if err != nil {
		t.Fatal(err)
	}
	svc.ForgetPolicies(accountID)
}

func x402(value int64, host, payTo string) billing.Movement {
	return billing.Movement{Kind: store.KindX402, ValueMicro: value, Network: "eip155:31337", Category: billing.CategoryX402, Label: host, Recipient: payTo, Host: host}
}

func rule(err error) string {
	var te *tools.Error
	if !errors.As(err, &te) || te.Code != tools.CodePolicyDenied {
		return ""
	}
	r, _ := te.Details["rule"].(string)
	return r
}

// open records a movement dispatching through its ticket, as x402_fetch does before signing.
func openMove(t *testing.T, svc *billing.Service, p *tools.Principal, id string, m billing.Movement) (*billing.Ticket, error) {
	t.Helper()
	tk := svc.Movement(p, m)
	inv, err := tk.Record(id, map[string]any{"url": "https://" + m.Host + "/"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := tk.Admit(context.Background(), m.ValueMicro); err != nil {
		return tk, err
	}
	return tk, tk.OpenMove(context.Background(), inv, "")
}

// TestMovementTicket: a movement is judged like a call (lists by host and recipient, with EVM
// addresses in any case, the per-call maximum, the caps counting on-chain value beside
// credit, approval by category) before anything is signed; opened, it counts at its value;
// concluded, it is recorded once with its transaction hash and its x402.paid or x402.failed
// event, and a failed one stops counting; on both databases.
func TestMovementTicket(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		svc := newService(st)
		p := account(t, st, "mover")
		const payTo = "0xAbCdEf0123456789aBCdeF0123456789AbCdEf01"
		putPolicy(t, st, svc, p.AccountID, `{"caps":[{"window":"day","usd":"1"}],"perCallMaxUsd":"0.6",
			"deny":{"hosts":["Evil.Example"],"recipients":["0xabcdef0123456789abcdef0123456789abcdef02"]},"approval":{"categories":["X402"],"aboveUsd":"0.5"}}`)

		for name, c := range map[string]struct {
			m    billing.Movement
			rule string
		}{
			"denied host":      {x402(100_000, "evil.example", payTo), "deny.hosts"},
			"denied recipient": {x402(100_000, "ok.example", "0xABCDEF0123456789ABCDEF0123456789ABCDEF02"), "deny.recipients"},
			"per-call maximum": {x402(700_000, "ok.example", payTo), "perCallMaxUsd"},
		} {
			if _, err := openMove(t, svc, p, "id-"+name, c.m); rule(err) != c.rule {
				t.Errorf("%s: %v; want POLICY_DENIED %s", name, err, c.rule)
			}
		}
		var ask *billing.ErrApprovalRequired
		if _, err := openMove(t, svc, p, "00000000-0000-4000-8000-000000000001", x402(100_000, "ok.example", payTo)); !errors.As(err, &ask) || ask.Rule != "approval.categories" {
			t.Fatalf("an X402 payment under approval.categories: %v", err)
		}
		// Without the approval rule: paid, then counted in the day window.
		putPolicy(t, st, svc, p.AccountID, `{"caps":[{"window":"day","usd":"1"}],"perCallMaxUsd":"0.6"}`)
		tk, err := openMove(t, svc, p, "00000000-0000-4000-8000-000000000002", x402(600_000, "ok.example", payTo))
		if err != nil {
			t.Fatal(err)
		}
		q := spending.New(st)
		credit, onchain, err := q.SpentParts(ctx, p.AccountID, "", []time.Time{time.Now().Add(-time.Hour)})
		if err != nil || credit[0] != 0 || onchain[0] != 600_000 {
			t.Fatalf("in flight: credit %v onchain %v (%v); want 0 and 600000", credit, onchain, err)
		}
		if held, err := q.Held(ctx, p.AccountID, ""); err != nil || held != 600_000 {
			t.Fatalf("held %d (%v); want the movement's 600000", held, err)
		}
		// The cap is exact under the lock: a second movement past it is refused when opened.
		if _, err := openMove(t, svc, p, "00000000-0000-4000-8000-000000000003", x402(500_000, "ok.example", payTo)); rule(err) != "caps.day" {
			t.Fatalf("past the day cap: %v", err)
		}
		if err := tk.ConcludeMove(ctx, billing.Moved{Settled: true, TxHash: "0xabc", Status: 200, Event: webhooks.X402Data{RequestID: "r"}}); err != nil {
			t.Fatal(err)
		}
		if err := tk.ConcludeMove(ctx, billing.Moved{Settled: true, TxHash: "0xabc"}); !errors.Is(err, billing.ErrAlreadyFinished) {
			t.Fatalf("a second conclusion: %v; want ErrAlreadyFinished", err)
		}
		inv, err := invocations.New(st).ByID(ctx, "00000000-0000-4000-8000-000000000002")
		if err != nil || inv.State != store.InvSucceeded || inv.TxHash == nil || *inv.TxHash != "0xabc" || inv.Kind != store.KindX402 || inv.ValueMicro != 600_000 || inv.Network == nil {
			t.Fatalf("the record %+v (%v)", inv, err)
		}
		// A failed movement moved nothing and stops counting.
		putPolicy(t, st, svc, p.AccountID, `{"caps":[{"window":"day","usd":"2"}]}`)
		tk, err = openMove(t, svc, p, "00000000-0000-4000-8000-000000000004", x402(300_000, "ok.example", payTo))
		if err != nil {
			t.Fatal(err)
		}
		if err := tk.ConcludeMove(ctx, billing.Moved{Code: "UPSTREAM", Detail: "refused by the seller", Event: webhooks.X402Data{RequestID: "r"}}); err != nil {
			t.Fatal(err)
		}
		if _, onchain, _ := q.SpentParts(ctx, p.AccountID, "", []time.Time{time.Now().Add(-time.Hour)}); onchain[0] != 600_000 {
			t.Fatalf("after a failed movement, onchain %v; want 600000", onchain)
		}
		for typ, want := range map[string]int64{webhooks.X402Paid: 1, webhooks.X402Failed: 1} {
			n, err := st.DB().NewSelect().Model((*store.WebhookEvent)(nil)).Where("account_id = ? AND type = ?", p.AccountID, typ).Count(ctx)
			if err != nil || n != want {
				t.Errorf("%s: %d events (%v), want %d", typ, n, err, want)
			}
		}
		ledgerOK(t, st)
	})
}
