package servicekeys_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/accounts"
	"github.com/switchboard-hq/switchboard/store/servicekeys"
	"github.com/switchboard-hq/switchboard/store/storetest"
)

func statuses(t *testing.T, s servicekeys.ServiceKeys) map[string]string {
	t.Helper()
	ks, err := s.ServiceKeys(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, k := range ks {
		out[k.KID] = k.Status
	}
	return out
}

func TestServiceKeyRotationAndReseal(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		s, ctx := servicekeys.New(st), context.Background()
		now := time.Now().UTC().Truncate(time.Second)
		key := func(kid, status string) *servicekeys.ServiceKey {
			return &servicekeys.ServiceKey{KID: kid, Status: status, SealedPrivate: []byte("sealed-" + kid), MasterKeyID: "m1", PublicPEM: "pem", CreatedAt: now}
		}
		if err := s.InsertServiceKey(ctx, key("k1", servicekeys.KeyCurrent)); err != nil {
			t.Fatal(err)
		}
		if err := s.InsertServiceKey(ctx, key("k2", servicekeys.KeyNext)); err != nil {
			t.Fatal(err)
		}
		// Only a next key can be promoted.
		if err := s.PromoteServiceKey(ctx, "k1", now); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("promote the current key: %v, want ErrConflict", err)
		}
		if err := s.PromoteServiceKey(ctx, "k2", now); err != nil {
			t.Fatal(err)
		}
		if got := statuses(t, s); got["k1"] != servicekeys.KeyPrevious || got["k2"] != servicekeys.KeyCurrent {
			t.Fatalf("after promotion: %v", got)
		}
		if ks, _ := s.ServiceKeys(ctx); ks[0].KID != "k2" || ks[0].ActivatedAt == nil {
			t.Fatalf("current first, activated: %+v", ks[0])
		}
		if n, err := s.RetireServiceKeys(ctx); err != nil || n != 1 {
			t.Fatalf("retire: %d %v", n, err)
		}
		if got := statuses(t, s); len(got) != 1 || got["k2"] != servicekeys.KeyCurrent {
			t.Fatalf("a retired key is not listed: %v", got)
		}
		// The re-seal sees retired keys too, and changes a row once.
		ks, err := s.ServiceKeysSealedElsewhere(ctx, "m2")
		if err != nil || len(ks) != 2 || ks[0].KID != "k1" {
			t.Fatalf("sealed elsewhere: %+v %v", ks, err)
		}
		if ok, err := s.ResealServiceKey(ctx, "k1", "m1", []byte("resealed"), "m2"); err != nil || !ok {
			t.Fatalf("reseal: %v %v", ok, err)
		}
		if ok, err := s.ResealServiceKey(ctx, "k1", "m1", []byte("again"), "m2"); err != nil || ok {
			t.Fatalf("a second reseal of the same row: %v %v", ok, err)
		}
		if w, k, err := accounts.New(st).SealedElsewhere(ctx, "m2"); err != nil || w != 0 || k != 1 {
			t.Fatalf("counted sealed elsewhere: %d %d %v", w, k, err)
		}
		if ks, err := s.ServiceKeysSealedElsewhere(ctx, "m2"); err != nil || len(ks) != 1 || ks[0].KID != "k2" {
			t.Fatalf("left to reseal: %+v %v", ks, err)
		}
	})
}
