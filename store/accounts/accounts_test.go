package accounts_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/accounts"
	"github.com/switchboard-hq/switchboard/store/storetest"
	"github.com/switchboard-hq/switchboard/store/watch"
)

func newKey(id, accountID, hash string) *accounts.APIKey {
	return &accounts.APIKey{ID: id, AccountID: accountID, Name: "k", Prefix: "sb_test_abc", Hash: hash,
		Scopes: []string{"read", "publish"}, SpendLimitMicro: 50_000_000, RateLimitPerMinute: 30,
		CreatedAt: time.Now().UTC()}
}

func TestCreateAccountIsAtomic(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		rows := accounts.New(s)
		now := time.Now().UTC()
		acct := &accounts.Account{ID: "a1", Email: "a@example.com", CreatedAt: now}
		wallets := []*accounts.Wallet{
			{ID: "w1", AccountID: "a1", Family: accounts.FamilyEVM, Address: "0xabc", SealedKey: []byte{1}, MasterKeyID: "m", CreatedAt: now},
			{ID: "w2", AccountID: "a1", Family: accounts.FamilySVM, Address: "So1", SealedKey: []byte{2}, MasterKeyID: "m", CreatedAt: now},
		}
		if err := rows.Create(ctx, acct, wallets, newKey("k1", "a1", "h1")); err != nil {
			t.Fatal(err)
		}
		// A second account whose key collides with the first key's hash must leave nothing.
		acct2 := &accounts.Account{ID: "a2", Email: "b@example.com", CreatedAt: now}
		w2 := []*accounts.Wallet{{ID: "w3", AccountID: "a2", Family: accounts.FamilyEVM, Address: "0xdef", SealedKey: []byte{1}, MasterKeyID: "m", CreatedAt: now}}
		err := rows.Create(ctx, acct2, w2, newKey("k2", "a2", "h1"))
		if !errors.Is(err, store.ErrConflict) {
			t.Fatalf("duplicate key hash: got %v, want ErrConflict", err)
		}
		if _, err := rows.ByEmail(ctx, "b@example.com"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("account of failed transaction: got %v, want ErrNotFound", err)
		}
		ws, err := rows.Wallets(ctx, "a2")
		if err != nil || len(ws) != 0 {
			t.Fatalf("wallets of failed transaction: %v, %v", ws, err)
		}
		// Duplicate e-mail is a conflict too.
		err = rows.Create(ctx, &accounts.Account{ID: "a3", Email: "a@example.com", CreatedAt: now}, nil, newKey("k3", "a3", "h3"))
		if !errors.Is(err, store.ErrConflict) {
			t.Fatalf("duplicate e-mail: got %v, want ErrConflict", err)
		}
	})
}

func TestKeysRoundTripAndRevoke(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		rows := accounts.New(s)
		now := time.Now().UTC().Truncate(time.Microsecond)
		if err := rows.Create(ctx, &accounts.Account{ID: "a1", Email: "a@example.com", CreatedAt: now}, nil, newKey("k1", "a1", "h1")); err != nil {
			t.Fatal(err)
		}
		got, err := rows.KeyByHash(ctx, "h1")
		if err != nil {
			t.Fatal(err)
		}
		if got.ID != "k1" || len(got.Scopes) != 2 || got.Scopes[1] != "publish" || got.SpendLimitMicro != 50_000_000 {
			t.Fatalf("key round trip: %+v", got)
		}
		if _, err := rows.RevokeKey(ctx, "someone-else", "k1", now, nil); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("revoke another account's key: got %v, want ErrNotFound", err)
		}
		first, err := rows.RevokeKey(ctx, "a1", "k1", now, nil)
		if err != nil || first.RevokedAt == nil || !first.RevokedAt.Equal(now) {
			t.Fatalf("revoke: %+v %v", first, err)
		}
		again, err := rows.RevokeKey(ctx, "a1", "k1", now.Add(time.Hour), nil)
		if err != nil || !again.RevokedAt.Equal(now) {
			t.Fatalf("second revoke moved revokedAt: %+v %v", again, err)
		}
	})
}

// An option runs in the creating transaction on its Q, and what it writes lands with the
// account or not at all.
func TestCreateOptionRunsInTheTransaction(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		rows := accounts.New(s)
		now := time.Now().UTC()
		grant := func(ctx context.Context, q *store.Q, acct *accounts.Account) error {
			if _, err := q.LockCredit(ctx, acct.ID, acct.CreatedAt); err != nil {
				return err
			}
			return q.AdjustCredit(ctx, acct.ID, store.CreditDelta{Available: 7}, acct.CreatedAt) // queued on PostgreSQL
		}
		if err := rows.Create(ctx, &accounts.Account{ID: "g1", Email: "g1@example.com", CreatedAt: now}, nil, nil, nil, grant); err != nil {
			t.Fatal(err)
		}
		if acct, err := rows.ByID(ctx, "g1"); err != nil || acct.Tier != accounts.DefaultTier {
			t.Fatalf("the created account: %+v %v", acct, err)
		}
		if c, err := s.Credit(ctx, "g1"); err != nil || c.AvailableMicro != 7 {
			t.Fatalf("the option's credit: %+v %v", c, err)
		}
		refuse := errors.New("refused")
		err := rows.Create(ctx, &accounts.Account{ID: "g2", Email: "g2@example.com", CreatedAt: now}, nil, nil, grant,
			func(context.Context, *store.Q, *accounts.Account) error { return refuse })
		if !errors.Is(err, refuse) {
			t.Fatalf("a refusing option: %v", err)
		}
		if _, err := rows.ByID(ctx, "g2"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("the account of a refused option: %v", err)
		}
		if c, err := s.Credit(ctx, "g2"); err != nil || c.AvailableMicro != 0 {
			t.Fatalf("the credit of a refused option: %+v %v", c, err)
		}
	})
}

// A key is minted only under a live parent and below the account's live keys' limit; a
// revocation takes the key's whole live subtree, tells the process's watchers of each id once
// it commits, and leaves a key that is not under it alone.
func TestMintRevokeTreeAndTouch(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		rows := accounts.New(s)
		now := time.Now().UTC().Truncate(time.Second)
		if err := rows.Create(ctx, &accounts.Account{ID: "a1", Email: "a@example.com", CreatedAt: now}, nil, newKey("root", "a1", "h-root")); err != nil {
			t.Fatal(err)
		}
		under := func(id, parent string) *accounts.APIKey {
			k := newKey(id, "a1", "h-"+id)
			k.ParentID = &parent
			return k
		}
		for _, k := range []*accounts.APIKey{under("child", "root"), under("grandchild", "child"), under("sibling", "root")} {
			if err := rows.MintKey(ctx, k, 4); err != nil {
				t.Fatalf("mint %s: %v", k.ID, err)
			}
		}
		if err := rows.MintKey(ctx, under("fifth", "root"), 4); !errors.Is(err, accounts.ErrTooManyKeys) {
			t.Fatalf("a fifth live key: %v", err)
		}
		gc, err := rows.KeyByID(ctx, "grandchild")
		if err != nil {
			t.Fatal(err)
		}
		up, err := rows.KeyAncestors(ctx, gc)
		if err != nil || len(up) != 2 || up[0].ID != "child" || up[1].ID != "root" {
			t.Fatalf("ancestors of grandchild: %v %v", up, err)
		}
		if ok, err := rows.KeyUnder(ctx, "a1", "grandchild", "root"); !ok || err != nil {
			t.Fatalf("grandchild under root: %v %v", ok, err)
		}
		if ok, err := rows.KeyUnder(ctx, "a1", "sibling", "child"); ok || err != nil {
			t.Fatalf("sibling under child: %v %v", ok, err)
		}

		heard, live := make(chan watch.Change, 8), make(chan bool, 8)
		watching, stop := context.WithCancel(ctx)
		defer stop()
		go s.Changes().Watch(watching, func(c watch.Change) {
			if c.Kind == watch.KeyChange {
				heard <- c
			}
		}, func(on bool) {
			select {
			case live <- on:
			default:
			}
		})
		for on := false; !on; {
			select {
			case on = <-live:
			case <-time.After(5 * time.Second):
				t.Fatal("the watch never went live")
			}
		}
		var revoked []string
		err = s.InTx(ctx, func(ctx context.Context, q *store.Q) (err error) {
			revoked, err = accounts.RevokeTree(ctx, q, "a1", "child", now)
			return err
		})
		if err != nil || len(revoked) != 2 {
			t.Fatalf("revoke child's tree: %v %v", revoked, err)
		}
		seen := map[string]bool{}
		for len(seen) < 2 {
			select {
			case c := <-heard:
				seen[c.ID] = true
			case <-time.After(5 * time.Second):
				t.Fatalf("watchers heard %v of the revoked child and grandchild", seen)
			}
		}
		if !seen["child"] || !seen["grandchild"] {
			t.Fatalf("watchers heard %v, want child and grandchild", seen)
		}
		if err := rows.MintKey(ctx, under("late", "grandchild"), 4); !errors.Is(err, accounts.ErrParentRevoked) {
			t.Fatalf("a key under a revoked one: %v", err)
		}
		if err := rows.MintKey(ctx, under("late", "sibling"), 4); err != nil {
			t.Fatalf("a key under the live sibling: %v", err)
		}

		used := now.Add(time.Minute)
		if err := rows.TouchKeys(ctx, map[string]time.Time{"root": used, "sibling": now}); err != nil {
			t.Fatal(err)
		}
		if err := rows.TouchKeys(ctx, map[string]time.Time{"root": now}); err != nil {
			t.Fatal(err)
		}
		keys, err := rows.Keys(ctx, "a1")
		if err != nil || len(keys) != 5 {
			t.Fatalf("keys: %v %v", keys, err)
		}
		for _, k := range keys {
			switch k.ID {
			case "root", "sibling": // each gets the batch's latest time, never an earlier one
				if k.LastUsedAt == nil || !k.LastUsedAt.Equal(used) {
					t.Fatalf("%s last used %v, want %v", k.ID, k.LastUsedAt, used)
				}
			case "child", "grandchild":
				if k.RevokedAt == nil || !k.RevokedAt.Equal(now) {
					t.Fatalf("%s revoked %v, want %v", k.ID, k.RevokedAt, now)
				}
			}
		}
	})
}

// An account's tier and signing switch are set on its row (an unknown account is not
// found); its wallets are re-sealed under a new master key once each.
func TestTierSigningAndReseal(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		rows := accounts.New(s)
		now := time.Now().UTC()
		ws := []*accounts.Wallet{
			{ID: "w1", AccountID: "a1", Family: accounts.FamilyEVM, Address: "0xabc", SealedKey: []byte{1}, MasterKeyID: "old", CreatedAt: now},
			{ID: "w2", AccountID: "a1", Family: accounts.FamilySVM, Address: "So1", SealedKey: []byte{2}, MasterKeyID: "old", CreatedAt: now},
		}
		if err := rows.Create(ctx, &accounts.Account{ID: "a1", Email: "a@example.com", CreatedAt: now}, ws, nil); err != nil {
			t.Fatal(err)
		}
		if err := rows.SetTier(ctx, "a1", "partner"); err != nil {
			t.Fatal(err)
		}
		if tier, err := rows.TierOf(ctx, "a1"); err != nil || tier != "partner" {
			t.Fatalf("tier %q %v", tier, err)
		}
		if err := rows.SetTier(ctx, "nobody", "partner"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("the tier of no account: %v", err)
		}
		if err := rows.SetSigning(ctx, "a1", true); err != nil {
			t.Fatal(err)
		}
		if acct, err := rows.ByID(ctx, "a1"); err != nil || !acct.SigningEnabled {
			t.Fatalf("signing: %+v %v", acct, err)
		}
		if err := rows.SetSigning(ctx, "nobody", true); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("the signing of no account: %v", err)
		}
		if got, err := rows.Wallets(ctx, "a1"); err != nil || len(got) != 2 || got[0].Family != accounts.FamilyEVM {
			t.Fatalf("wallets, EVM first: %v %v", got, err)
		}

		batch, err := rows.WalletsSealedElsewhere(ctx, "new", "", 10)
		if err != nil || len(batch) != 2 || batch[0].ID != "w1" {
			t.Fatalf("sealed elsewhere: %v %v", batch, err)
		}
		if after, err := rows.WalletsSealedElsewhere(ctx, "new", "w1", 10); err != nil || len(after) != 1 || after[0].ID != "w2" {
			t.Fatalf("sealed elsewhere after w1: %v %v", after, err)
		}
		if ok, err := rows.ResealWallet(ctx, "w1", "old", []byte{9}, "new"); !ok || err != nil {
			t.Fatalf("reseal w1: %v %v", ok, err)
		}
		if ok, err := rows.ResealWallet(ctx, "w1", "old", []byte{8}, "new"); ok || err != nil {
			t.Fatalf("reseal w1 again: %v %v", ok, err)
		}
		if w, k, err := rows.SealedElsewhere(ctx, "new"); err != nil || w != 1 || k != 0 {
			t.Fatalf("still sealed elsewhere: %d wallets, %d service keys, %v", w, k, err)
		}
	})
}
