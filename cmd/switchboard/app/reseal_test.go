package app_test

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/switchboard-hq/switchboard/cmd/switchboard/app"
	"github.com/switchboard-hq/switchboard/cmd/switchboard/app/apptest"
	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/accounts"
	idem "github.com/switchboard-hq/switchboard/store/idempotency"
	"github.com/switchboard-hq/switchboard/store/storetest"
	"github.com/switchboard-hq/switchboard/tools/wallets"
)

// Issue 35 item 7: a master key rotation end to end. Rows sealed under the old key are sealed
// again under the new one by Reseal (admin reseal); a run stopped part way is carried on by
// the next, a finished one leaves nothing to do, and afterwards the service starts and every
// wallet key opens with the new key alone, unchanged.
func TestResealMovesEveryRowToTheNewMasterKey(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			st := storetest.Open(t, dialect)
			oldKey, newKey := masterKey(t), masterKey(t)
			replica := func(masterKeys string) *apptest.Env {
				return apptest.Start(t, apptest.Options{Store: st, Config: func(c *app.Config) { c.MasterKey, c.ServerSecret = masterKeys, sharedSecret }})
			}
			before := replica(oldKey) // the service key and 3 accounts' wallets under the old key
			for _, e := range []string{"a@example.com", "b@example.com", "c@example.com"} {
				before.Onboard(t, e)
			}
			plain := openAll(t, st, oldKey)

			rotating := replica(newKey + "," + oldKey) // new rows under the new key, old rows still open
			rotating.Onboard(t, "d@example.com")
			newID := keyID(t, newKey)
			if w, k, err := accounts.New(st).SealedElsewhere(context.Background(), newID); err != nil || w != 6 || k != 1 {
				t.Fatalf("before the re-seal: %d wallets, %d service keys under the old key (%v); want 6 and 1", w, k, err)
			}

			// Stopped after 2 wallets (a crash, ^C): those 2 and the service key have moved.
			ctx, cancel := context.WithCancel(context.Background())
			n := 0
			rep, err := rotating.App.Admin().Reseal(ctx, 2, func() {
				if n++; n == 2 {
					cancel()
				}
			})
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("a stopped re-seal: %+v %v", rep, err)
			}
			if w, k, _ := accounts.New(st).SealedElsewhere(context.Background(), newID); w != 4 || k != 0 {
				t.Fatalf("after the stop: %d wallets, %d service keys under the old key; want 4 and 0", w, k)
			}
			// Run again: it carries on; once more: nothing left.
			rep, err = rotating.App.Admin().Reseal(context.Background(), 2, nil)
			if err != nil || rep.WalletsResealed != 4 || rep.ServiceKeysResealed != 0 || rep.LeftWallets != 0 || rep.LeftServiceKeys != 0 || rep.CurrentMasterKey != newID {
				t.Fatalf("the re-seal run again: %+v %v", rep, err)
			}
			if rep, err = rotating.App.Admin().Reseal(context.Background(), 2, nil); err != nil || rep.WalletsResealed != 0 || rep.LeftWallets != 0 {
				t.Fatalf("a third run: %+v %v", rep, err)
			}

			// The old key dropped: the service starts (its signing key opens) and every wallet
			// key opens with the new key alone, the same keys as before.
			after := replica(newKey)
			after.Onboard(t, "e@example.com")
			for id, p := range openAll(t, st, newKey) {
				if old, ok := plain[id]; ok && !bytes.Equal(old, p) {
					t.Fatalf("wallet %s opens to another key after the re-seal", id)
				}
			}
		})
	}
}

func masterKey(t *testing.T) string {
	b := make([]byte, 32)
	rand.Read(b)
	return base64.StdEncoding.EncodeToString(b)
}

func keyID(t *testing.T, k string) string {
	raw, err := base64.StdEncoding.DecodeString(k)
	if err != nil {
		t.Fatal(err)
	}
	return wallets.KeyID(raw)
}

// openAll opens every wallet key of st with the one master key k, by wallet id.
func openAll(t *testing.T, st *store.Store, k string) map[string][]byte {
	t.Helper()
	raw, _ := base64.StdEncoding.DecodeString(k)
	sealer, err := wallets.NewSealer(raw)
	if err != nil {
		t.Fatal(err)
	}
	var ws []*accounts.Wallet
	if err := st.DB().NewSelect().Model(&ws).Scan(context.Background()); err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, w := range ws {
		p, err := sealer.Open(w.SealedKey, w.MasterKeyID, []byte(w.Address))
		if err != nil {
			t.Fatalf("wallet %s (%s) with master key %s: %v", w.ID, w.MasterKeyID, keyID(t, k), err)
		}
		out[w.ID] = p
	}
	return out
}

// Issue 46 item 6: the answers kept for Idempotency-Key retries of api_key_create and
// webhook_endpoint_create hold the new secret; they are sealed under the master key (not
// under a key derived from the server secret), so the re-seal moves them, and once the old
// master key is dropped a retry still answers the same secret, minting nothing.
func TestResealMovesTheAnswersKeptForRetries(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			st := storetest.Open(t, dialect)
			ctx := context.Background()
			oldKey, newKey := masterKey(t), masterKey(t)
			replica := func(masterKeys string) *apptest.Env {
				return apptest.Start(t, apptest.Options{Store: st, Config: func(c *app.Config) {
					c.MasterKey, c.ServerSecret, c.AllowLocalEndpoints = masterKeys, sharedSecret, true
				}})
			}
			before := replica(oldKey)
			agent := before.Onboard(t, "retry@example.com")["apiKey"].(string)
			post := func(env *apptest.Env, path, key string, body map[string]any) map[string]any {
				t.Helper()
				status, _, out := apptest.DoWith(t, "POST", env.URL+path, agent, body, map[string]string{"Idempotency-Key": key})
				if status != 201 {
					t.Fatalf("POST %s: %d %v", path, status, out)
				}
				return out
			}
			mint := map[string]any{"name": "ci", "scopes": []string{"read"}}
			hook := map[string]any{"url": before.URL + "/hooks"}
			minted := post(before, "/v1/keys", "mint-1", mint)
			created := post(before, "/v1/webhooks/endpoints", "hook-1", hook)
			secrets := map[string]string{"mint-1": minted["secret"].(string), "hook-1": created["secret"].(string)}

			// Neither the secret nor anything the server secret's key opens is stored.
			serverSecret, _ := base64.StdEncoding.DecodeString(sharedSecret)
			m := hmac.New(sha256.New, serverSecret)
			m.Write([]byte("switchboard idempotency answers v1"))
			block, _ := aes.NewCipher(m.Sum(nil))
			derived, _ := cipher.NewGCM(block)
			for key, secret := range secrets {
				row := new(idem.Key)
				if err := st.DB().NewSelect().Model(row).Where("idem_key = ?", key).Scan(ctx); err != nil {
					t.Fatal(err)
				}
				if secret == "" || row.MasterKeyID != keyID(t, oldKey) || len(row.Answer) < derived.NonceSize() || bytes.Contains(row.Answer, []byte(secret)) ||
					bytes.Contains(row.Answer, []byte(base64.StdEncoding.EncodeToString([]byte(secret)))) {
					t.Fatalf("%s: stored under %q: %q; want it sealed under the master key %s, without the secret", key, row.MasterKeyID, row.Answer, keyID(t, oldKey))
				}
				n := derived.NonceSize()
				for _, aad := range []string{"", row.Scope + "\x00" + row.Tool + "\x00" + row.IdemKey, "idempotency answer\x00" + row.Scope + "\x00" + row.Tool + "\x00" + row.IdemKey} {
					if _, err := derived.Open(nil, row.Answer[:n], row.Answer[n:], []byte(aad)); err == nil {
						t.Fatalf("%s: the server secret's key opens the stored answer", key)
					}
				}
			}

			rotating := replica(newKey + "," + oldKey)
			rep, err := rotating.App.Admin().Reseal(ctx, 100, nil)
			if err != nil || rep.IdempotencyAnswersResealed != 2 || rep.LeftIdempotencyAnswers != 0 || rep.LeftWallets != 0 || rep.LeftServiceKeys != 0 {
				t.Fatalf("the re-seal: %+v %v; want the 2 answers moved, nothing left", rep, err)
			}
			if rep, err = rotating.App.Admin().Reseal(ctx, 100, nil); err != nil || rep.IdempotencyAnswersResealed != 0 || rep.LeftIdempotencyAnswers != 0 {
				t.Fatalf("a second run: %+v %v", rep, err)
			}

			after := replica(newKey)
			if again := post(after, "/v1/keys", "mint-1", mint); again["secret"] != secrets["mint-1"] || again["id"] != minted["id"] {
				t.Fatalf("api_key_create retried with the new master key alone: %v; want %v", again, minted)
			}
			if again := post(after, "/v1/webhooks/endpoints", "hook-1", hook); again["secret"] != secrets["hook-1"] || again["id"] != created["id"] {
				t.Fatalf("webhook_endpoint_create retried with the new master key alone: %v; want %v", again, created)
			}
			if _, list := after.REST(t, "GET", "/v1/keys", agent, nil); len(list["keys"].([]any)) != 2 {
				t.Fatalf("keys %v; want the agent's and the one minted once", list["keys"])
			}
			if !strings.HasPrefix(secrets["hook-1"], "whsec_") {
				t.Fatalf("the endpoint's secret %q", secrets["hook-1"])
			}
		})
	}
}
