package idempotency

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"testing"

	"github.com/switchboard-hq/switchboard/store"
	idem "github.com/switchboard-hq/switchboard/store/idempotency"
	"github.com/switchboard-hq/switchboard/store/storetest"
	"github.com/switchboard-hq/switchboard/tools/wallets"
)

// storedRow reads the row of key idemKey (the rig's one caller and tool).
func storedRow(t *testing.T, st *store.Store, idemKey string) *idem.Key {
	t.Helper()
	k := new(idem.Key)
	if err := st.DB().NewSelect().Model(k).Where("idem_key = ?", idemKey).Scan(context.Background()); err != nil {
		t.Fatal(err)
	}
	return k
}

func legacyAEAD(t *testing.T) cipher.AEAD {
	t.Helper()
	block, err := aes.NewCipher(legacyKey)
	if err != nil {
		t.Fatal(err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		t.Fatal(err)
	}
	return aead
}

// Issue 46 item 6: an answer kept for its retries (a secret shown once, like a new API key's)
// is sealed under the master key, not under the server secret's key: the row holds neither
// the secret nor anything the server secret opens. A master key rotation's re-seal moves it,
// and once the old key is dropped a retry still answers the same secret, without running.
func TestAnAnswerIsSealedUnderTheMasterKey(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		before := newRigWith(t, st, legacyKey, masterA) // as the app runs: the legacy key configured
		first, e := before.call(t, `{"name":"a","idempotencyKey":"k-1"}`)
		if e != nil {
			t.Fatal(e)
		}
		row := storedRow(t, st, "k-1")
		if row.MasterKeyID != wallets.KeyID(masterA) || len(row.Answer) == 0 || bytes.Contains(row.Answer, []byte(first.Secret)) {
			t.Fatalf("stored row: under %q, %q; want it sealed under master key %s, without the secret %s", row.MasterKeyID, row.Answer, wallets.KeyID(masterA), first.Secret)
		}
		legacy := legacyAEAD(t)
		n := legacy.NonceSize()
		for _, aad := range [][]byte{aad(row), legacyAAD(row)} {
			if _, err := legacy.Open(nil, row.Answer[:n], row.Answer[n:], aad); err == nil {
				t.Fatal("the server secret's key opens the stored answer")
			}
		}
		if plain, err := before.svc.sealer.Open(row.Answer, row.MasterKeyID, aad(row)); err != nil || !bytes.Contains(plain, []byte(first.Secret)) {
			t.Fatalf("the master key opens the stored answer to %q (%v); want the first answer", plain, err)
		}

		// The rotation: new,old on every replica, then the re-seal.
		rotating := newRigWith(t, st, legacyKey, masterB, masterA)
		if again, e := rotating.call(t, `{"name":"a","idempotencyKey":"k-1"}`); e != nil || again != first || rotating.runs.Load() != 0 {
			t.Fatalf("a retry under new,old: %+v %v, runs %d; want the first answer", again, e, rotating.runs.Load())
		}
		if left, err := rotating.svc.SealedElsewhere(ctx); err != nil || left != 1 {
			t.Fatalf("before the re-seal: %d answers under the old key (%v), want 1", left, err)
		}
		if moved, bad, err := rotating.svc.Reseal(ctx); err != nil || moved != 1 || len(bad) != 0 {
			t.Fatalf("re-seal: %d moved, unopenable %v, %v; want 1", moved, bad, err)
		}
		if moved, _, err := rotating.svc.Reseal(ctx); err != nil || moved != 0 {
			t.Fatalf("re-seal again: %d moved (%v); want nothing left to do", moved, err)
		}
		if left, err := rotating.svc.SealedElsewhere(ctx); err != nil || left != 0 {
			t.Fatalf("after the re-seal: %d answers under the old key (%v)", left, err)
		}
		if row := storedRow(t, st, "k-1"); row.MasterKeyID != wallets.KeyID(masterB) || bytes.Contains(row.Answer, []byte(first.Secret)) {
			t.Fatalf("after the re-seal the row is under %q: %q", row.MasterKeyID, row.Answer)
		}

		// The old key dropped (and no legacy key): the retry still answers the secret.
		after := newRigWith(t, st, nil, masterB)
		if again, e := after.call(t, `{"name":"a","idempotencyKey":"k-1"}`); e != nil || again != first || after.runs.Load() != 0 {
			t.Fatalf("a retry with the new key alone: %+v %v, runs %d; want the first answer", again, e, after.runs.Load())
		}
		// Without the old key and before a re-seal, an answer under it says so; it is not run again.
		old := newRigWith(t, st, nil, masterA)
		if _, e := old.call(t, `{"name":"b","idempotencyKey":"k-2"}`); e != nil {
			t.Fatal(e)
		}
		if _, e := after.call(t, `{"name":"b","idempotencyKey":"k-2"}`); e == nil || after.runs.Load() != 0 {
			t.Fatalf("an answer under a key not configured: %v, runs %d; want an error, no run", e, after.runs.Load())
		}
		if _, bad, err := after.svc.Reseal(ctx); err != nil || len(bad) != 1 {
			t.Fatalf("re-seal without the old key: unopenable %v, %v; want the one row named", bad, err)
		}
	})
}

// An answer an earlier release sealed with the server secret's key (an empty master_key_id) still
// answers its retries, and the re-seal moves it under the master key: then it opens without
// the server secret's key.
func TestALegacyAnswerMovesUnderTheMasterKey(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		r := newRigWith(t, st, legacyKey, masterA)
		first, e := r.call(t, `{"name":"a","idempotencyKey":"old-1"}`)
		if e != nil {
			t.Fatal(e)
		}
		// Rewrite the row as an earlier release sealed it.
		row := storedRow(t, st, "old-1")
		plain, err := r.svc.sealer.Open(row.Answer, row.MasterKeyID, aad(row))
		if err != nil {
			t.Fatal(err)
		}
		legacy := legacyAEAD(t)
		nonce := make([]byte, legacy.NonceSize())
		sealed := legacy.Seal(nonce, nonce, plain, legacyAAD(row))
		if _, err := st.DB().NewUpdate().Model((*idem.Key)(nil)).Set("answer = ?", sealed).Set("master_key_id = ''").
			Where("idem_key = ?", "old-1").Exec(ctx); err != nil {
			t.Fatal(err)
		}
		if again, e := r.call(t, `{"name":"a","idempotencyKey":"old-1"}`); e != nil || again != first || r.runs.Load() != 1 {
			t.Fatalf("a retry of a legacy answer: %+v %v, runs %d", again, e, r.runs.Load())
		}
		if left, _ := r.svc.SealedElsewhere(ctx); left != 1 {
			t.Fatalf("the legacy answer is not counted as left: %d", left)
		}
		if moved, bad, err := r.svc.Reseal(ctx); err != nil || moved != 1 || len(bad) != 0 {
			t.Fatalf("re-seal: %d moved, unopenable %v, %v", moved, bad, err)
		}
		if row := storedRow(t, st, "old-1"); row.MasterKeyID != wallets.KeyID(masterA) {
			t.Fatalf("after the re-seal the row is under %q", row.MasterKeyID)
		}
		without := newRigWith(t, st, nil, masterA)
		if again, e := without.call(t, `{"name":"a","idempotencyKey":"old-1"}`); e != nil || again != first || without.runs.Load() != 0 {
			t.Fatalf("a retry without the legacy key after the re-seal: %+v %v", again, e)
		}
	})
}
