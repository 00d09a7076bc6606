package store_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/accounts"
	"github.com/switchboard-hq/switchboard/store/invocations"
	"github.com/switchboard-hq/switchboard/store/storetest"
	"github.com/switchboard-hq/switchboard/store/topups"
)

// TestTopupBackfill runs the backfills of the top-up record migrations on a top-up credited
// before them (no key, no invocations row): it gets the account's root key (a key minted under
// it, older or not, is not chosen) and its record (kind topup, its value, network and
// transaction); run again, it changes nothing (a top-up on the record is not given a second).
func TestTopupBackfill(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		old := time.Now().UTC().Add(-time.Hour).Truncate(time.Second)
		storetest.Account(t, s, "a")
		root := "k-a"
		if err := accounts.New(s).CreateKey(ctx, &accounts.APIKey{ID: "k-child", AccountID: "a", Name: "c", Prefix: "p", Hash: "h-child", Scopes: []string{"read"},
			CreatedAt: old.Add(-time.Hour), ParentID: &root}); err != nil {
			t.Fatal(err)
		}
		const rid = "00000000-0000-4000-8000-0000000000aa"
		tx := "0x" + strings.Repeat("1f", 32)
		if err := topups.New(s).Insert(ctx, &topups.CreditTopup{RequestID: rid, AccountID: "a", ChainID: 8453, Token: "0xt", PayTo: "0xp",
			AmountAtomic: 4_000_000, ValidBefore: old.Unix(), State: topups.Credited, PayerAddress: "0xfrom", Nonce: "0x02", PayTx: tx,
			CreatedAt: old, UpdatedAt: old}); err != nil {
			t.Fatal(err)
		}
		backfill := func() {
			t.Helper()
			key, err := os.ReadFile("migrations/20261202070001_topup_key.tx.up.sql")
			if err != nil {
				t.Fatal(err)
			}
			rows, err := os.ReadFile("migrations/20261202070002_topup_records.tx.up.sql")
			if err != nil {
				t.Fatal(err)
			}
			// The column exists already (the test database is migrated): its backfill, then the rows'.
			for _, stmt := range []string{strings.SplitN(string(key), "--bun:split", 2)[1], string(rows)} {
				if _, err := s.DB().ExecContext(ctx, stmt); err != nil {
					t.Fatalf("%s: %v", stmt, err)
				}
			}
		}
		backfill()
		backfill()
		got, err := topups.New(s).Get(ctx, rid)
		if err != nil || got.KeyID != root {
			t.Fatalf("the top-up's key after the backfill: %+v %v; want the root key %s", got, err, root)
		}
		inv, err := invocations.New(s).Get(ctx, "a", rid)
		if err != nil {
			t.Fatal(err)
		}
		if inv.Kind != store.KindTopup || inv.KeyID != root || inv.ValueMicro != 4_000_000 || inv.State != store.InvSucceeded ||
			inv.Network == nil || *inv.Network != "eip155:8453" || inv.TxHash == nil || *inv.TxHash != tx || inv.FinishedAt == nil {
			t.Fatalf("the backfilled record: %+v", inv)
		}
		var n int
		if err := s.DB().NewRaw("SELECT COUNT(*) FROM invocations WHERE kind = ?", store.KindTopup).Scan(ctx, &n); err != nil || n != 1 {
			t.Fatalf("%d top-up records after two backfills (%v), want 1", n, err)
		}
	})
}
