package keyring_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/signing"
	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/servicekeys"
	"github.com/switchboard-hq/switchboard/store/storetest"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/keyring"
	"github.com/switchboard-hq/switchboard/tools/service"
	"github.com/switchboard-hq/switchboard/tools/wallets"
)

func statuses(set signing.KeySet) map[string]string {
	out := map[string]string{}
	for _, k := range set.Keys {
		out[k.KeyID] = k.Status
	}
	return out
}

// A rotation publishes the next key first, switches signing only after Overlap (a replica
// follows on Refresh), keeps the previous key published, and retires it on request.
func TestRotation(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
		d := service.Deps{Store: s, Now: func() time.Time { return now }}
		sealer, err := wallets.NewSealer(bytes.Repeat([]byte{7}, 32))
		if err != nil {
			t.Fatal(err)
		}
		_, boot, _ := ed25519.GenerateKey(rand.Reader)
		bootKID := signing.KeyID(boot.Public().(ed25519.PublicKey))
		r, err := keyring.Open(ctx, keyring.Config{Bootstrap: boot}, d, sealer)
		if err != nil {
			t.Fatal(err)
		}
		if !r.Signer().PublicKey().Equal(boot.Public()) {
			t.Fatal("not signing with the bootstrap key")
		}
		// A second replica starts on the same database: the stored key wins over its own file.
		_, other, _ := ed25519.GenerateKey(rand.Reader)
		replica, err := keyring.Open(ctx, keyring.Config{Bootstrap: other}, d, sealer)
		if err != nil {
			t.Fatal(err)
		}
		if !replica.Signer().PublicKey().Equal(boot.Public()) {
			t.Fatal("a replica signs with its own bootstrap key, not the stored current one")
		}

		step, err := r.Rotate(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if step.Action != "published next key" || step.Current != bootKID || !step.SwitchAfter.Equal(now.Add(keyring.Overlap)) {
			t.Fatalf("first step %+v", step)
		}
		if st := statuses(r.KeySet()); st[bootKID] != servicekeys.KeyCurrent || st[step.Next] != servicekeys.KeyNext || len(st) != 2 {
			t.Fatalf("key set after publishing %v", st)
		}
		if !r.Signer().PublicKey().Equal(boot.Public()) {
			t.Fatal("signing switched before the overlap")
		}
		now = now.Add(keyring.Overlap - time.Second)
		var te *tools.Error
		if _, err := r.Rotate(ctx); !errors.As(err, &te) || te.Code != tools.CodeConflict {
			t.Fatalf("switching early: %v", err)
		}
		now = now.Add(time.Second)
		sw, err := r.Rotate(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if sw.Action != "switched signing" || sw.Current != step.Next || sw.Previous != bootKID {
			t.Fatalf("switch %+v", sw)
		}
		if signing.KeyID(r.Signer().PublicKey()) != step.Next {
			t.Fatal("not signing with the new key")
		}
		if err := replica.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
		if signing.KeyID(replica.Signer().PublicKey()) != step.Next || !bytes.Equal(replica.CurrentPEM(), r.CurrentPEM()) {
			t.Fatal("the replica did not follow the rotation")
		}
		if st := statuses(replica.KeySet()); st[bootKID] != servicekeys.KeyPrevious || st[step.Next] != servicekeys.KeyCurrent {
			t.Fatalf("key set after switching %v", st)
		}
		if n, err := r.Retire(ctx); err != nil || n != 1 {
			t.Fatalf("retire: %d %v", n, err)
		}
		if st := statuses(r.KeySet()); len(st) != 1 || st[step.Next] != servicekeys.KeyCurrent {
			t.Fatalf("key set after retiring %v", st)
		}
	})
}
