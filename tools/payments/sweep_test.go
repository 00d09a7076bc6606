package payments_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/switchboard-hq/switchboard/contracts/anviltest"
	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/ledger"
	"github.com/switchboard-hq/switchboard/store/payouts"
	"github.com/switchboard-hq/switchboard/store/storetest"
	"github.com/switchboard-hq/switchboard/tools/billing"
	"github.com/switchboard-hq/switchboard/tools/payments"
	"github.com/switchboard-hq/switchboard/tools/service"
)

var partnerWallet = common.HexToAddress("0x00000000000000000000000000000000000A11CE")

// A payout left pending by a run that stopped before signing is concluded by the next run:
// when the database refuses to record that, the run fails and pays nothing (the amount is not
// handed back to the partner's book while the payout stays pending, to be handed back, and
// paid, again); once the database is back, the next run concludes it and pays the partner once.
func TestPayoutsStopWhenAStalePayoutCannotBeRecorded(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			st := storetest.Open(t, dialect)
			chain := anviltest.Start(t)
			deps := service.Deps{Store: st, Now: time.Now, Log: slog.New(slog.DiscardHandler)}
			svc, err := payments.New(ctx, payments.Config{RPCURL: chain.URL, ChainID: anviltest.ChainID, Token: chain.Token, Payer: chain.Payer,
				RelayerKey: chain.Relayer, Confirmations: 1}, deps, billing.NewService(billing.DefaultConfig(), deps, billing.Recording{}))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(svc.Shutdown)
			chain.Mint(t, chain.Client.From(), 1_000_000) // the relayer's payout float

			// The partner earned 3,000; a run took it into a payout and stopped before signing.
			book := "partner:p1:evm:" + partnerWallet.Hex()
			now := time.Now().UTC()
			stale := &payouts.Payout{ID: "po_stale", Book: book, ChainID: anviltest.ChainID, Address: partnerWallet.Hex(), AmountAtomic: 3_000,
				State: payouts.Pending, CreatedAt: now, UpdatedAt: now}
			if err := st.InTx(ctx, func(ctx context.Context, q *store.Q) error {
				if err := ledger.Post(ctx, q, "", "fees", now, ledger.Posting{Book: "external:calls", Micro: -3_000, Kind: "fee"}, ledger.Posting{Book: book, Micro: 3_000, Kind: "fee"}); err != nil {
					return err
				}
				if err := payouts.Insert(ctx, q, stale); err != nil {
					return err
				}
				return ledger.Post(ctx, q, "", "payout po_stale", now, ledger.Posting{Book: book, Micro: -3_000, Kind: "payout"}, ledger.Posting{Book: "payouts:pending", Micro: 3_000, Kind: "payout"})
			}); err != nil {
				t.Fatal(err)
			}

			// The database refuses every change to the stale payout (a real error from the database).
			refuse, allow := []string{`CREATE TRIGGER refuse_payouts BEFORE UPDATE ON payouts WHEN OLD.id = 'po_stale' BEGIN SELECT RAISE(ABORT, 'payouts refused by the test'); END`},
				`DROP TRIGGER refuse_payouts`
			if dialect == "postgres" {
				refuse = []string{`CREATE FUNCTION refuse_payouts() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'payouts refused by the test'; END $$`,
					`CREATE TRIGGER refuse_payouts BEFORE UPDATE ON payouts FOR EACH ROW WHEN (OLD.id = 'po_stale') EXECUTE FUNCTION refuse_payouts()`}
				allow = `DROP TRIGGER refuse_payouts ON payouts`
			}
			for _, q := range refuse {
				if _, err := st.DB().ExecContext(ctx, q); err != nil {
					t.Fatal(err)
				}
			}
			if paid, err := svc.Payouts(ctx); err == nil {
				t.Fatalf("a run that could not conclude a stale payout reported success (paid %s)", describe(paid))
			}
			if got := balances(t, st); got[book] != 0 || got["payouts:pending"] != 3_000 || chain.Balance(t, partnerWallet) != 0 {
				t.Fatalf("after the refused run: books %v, partner holds %d on chain; want the stale payout untouched and nothing paid", got, chain.Balance(t, partnerWallet))
			}

			if _, err := st.DB().ExecContext(ctx, allow); err != nil {
				t.Fatal(err)
			}
			paid, err := svc.Payouts(ctx)
			if err != nil || len(paid) != 1 || paid[0].State != payouts.Done || paid[0].AmountAtomic != 3_000 {
				t.Fatalf("the next run: %s %v", describe(paid), err)
			}
			if again, err := svc.Payouts(ctx); err != nil || len(again) != 0 {
				t.Fatalf("a third run paid %s %v", describe(again), err)
			}
			if got := balances(t, st); got[book] != 0 || got["payouts:pending"] != 0 || got["external:payouts:"+partnerWallet.Hex()] != 3_000 {
				t.Fatalf("books after the payout: %v", got)
			}
			if n := chain.Balance(t, partnerWallet); n != 3_000 {
				t.Fatalf("the partner holds %d on chain, want 3000 (paid once)", n)
			}
			failed, err := payouts.New(st).In(ctx, payouts.Failed)
			if err != nil || len(failed) != 1 || failed[0].ID != "po_stale" {
				t.Fatalf("failed payouts: %s %v", describe(failed), err)
			}
		})
	}
}

func describe(ps []*payouts.Payout) string {
	var out []string
	for _, p := range ps {
		out = append(out, fmt.Sprintf("%s %s %d %q", p.ID, p.State, p.AmountAtomic, p.Reason))
	}
	return "[" + strings.Join(out, "; ") + "]"
}

// balances is every non-zero ledger book.
func balances(t *testing.T, st *store.Store) map[string]int64 {
	t.Helper()
	bs, err := ledger.BookBalances(context.Background(), st, "")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, b := range bs {
		out[b.Book] = b.Micro
	}
	return out
}
