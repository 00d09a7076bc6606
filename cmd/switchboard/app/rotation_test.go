package app_test

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/cmd/switchboard/app/apptest"
	"github.com/switchboard-hq/switchboard/signing"
	"github.com/switchboard-hq/switchboard/tools/keyring"
)

// A key rotation with overlap, as a partner sees it: the next key is in the key set an hour and
// more before anything is signed with it, so a partner verifier that cached the set keeps
// verifying after signing switches, without fetching again; the PEM endpoint serves the new
// key; a receipt signed before the switch still verifies by the key set; switching early is
// refused.
func TestKeyRotationWithOverlap(t *testing.T) {
	env := apptest.Start(t, apptest.Options{})
	ctx := context.Background()
	ring := env.App.Keys
	signer := ring.Signer()
	old := signer.PublicKey()
	oldReceipt, err := signer.SignReceipt(signing.Receipt{RequestID: "before-rotation"})
	if err != nil {
		t.Fatal(err)
	}

	// Step 1: publish the next key.
	step, err := ring.Rotate(ctx)
	if err != nil || step.Action != "published next key" || step.Current != signing.KeyID(old) {
		t.Fatalf("publish: %+v %v", step, err)
	}
	set := keySet(t, env)
	if len(set.Keys) != 2 || set.Keys[0].Status != "current" || set.Keys[1].Status != "next" || set.Keys[1].KeyID != step.Next {
		t.Fatalf("key set after publishing: %+v", set)
	}
	if _, err := ring.Rotate(ctx); err == nil {
		t.Fatal("signing switched before partners' caches could hold the next key")
	}

	// A partner fetches the set once (here, right after publication) and caches it an hour.
	var fetches atomic.Int32
	partnerClock := time.Now()
	src := signing.NewURLKeySource(env.URL)
	src.Client = &http.Client{Transport: countingTransport{&fetches}}
	v := signing.NewVerifier(src, signing.WithClock(func() time.Time { return partnerClock }))
	verify := func() error {
		env2 := &signing.Envelope{RequestID: signing.NewRequestID(), IntentDefinitionID: "i", UserID: "u", Args: json.RawMessage(`{}`)}
		if err := signer.At(func() time.Time { return partnerClock }).Sign(env2); err != nil {
			t.Fatal(err)
		}
		body, _ := signing.MarshalEnvelope(env2)
		_, err := v.Verify(ctx, body, http.Header{})
		return err
	}
	if err := verify(); err != nil {
		t.Fatalf("before the switch: %v", err)
	}

	// Step 2, an overlap later: signing switches to the next key.
	env.Clock.Advance(keyring.Overlap + time.Minute)
	step, err = ring.Rotate(ctx)
	if err != nil || step.Action != "switched signing" || step.Previous != signing.KeyID(old) {
		t.Fatalf("switch: %+v %v", step, err)
	}
	if signing.KeyID(signer.PublicKey()) == signing.KeyID(old) {
		t.Fatal("the signer still uses the old key")
	}
	partnerClock = partnerClock.Add(50 * time.Minute) // still within the partner's cache
	if err := verify(); err != nil {
		t.Fatalf("a partner that cached the key set before the switch: %v", err)
	}
	if n := fetches.Load(); n != 1 {
		t.Fatalf("the partner fetched the keys %d times; one cached fetch must carry it through", n)
	}
	// The spec's PEM endpoint now serves the new key; the set lists the previous one.
	resp, err := http.Get(env.URL + signing.PublicKeyPath)
	if err != nil {
		t.Fatal(err)
	}
	pemBody := make([]byte, 4096)
	n, _ := resp.Body.Read(pemBody)
	resp.Body.Close()
	if pub, err := signing.ParsePublicKeyPEM(pemBody[:n]); err != nil || !pub.Equal(signer.PublicKey()) {
		t.Fatalf("the PEM endpoint after the switch: %v", err)
	}
	var prev []ed25519.PublicKey
	for _, e := range keySet(t, env).Keys {
		k, _ := signing.ParsePublicKeyPEM([]byte(e.PublicKeyPEM))
		prev = append(prev, k)
	}
	if err := signing.VerifyReceipt(oldReceipt, prev...); err != nil {
		t.Fatalf("a receipt signed before the rotation: %v", err)
	}
	// Retiring drops the previous key from the set.
	if n, err := ring.Retire(ctx); err != nil || n != 1 || len(keySet(t, env).Keys) != 1 {
		t.Fatalf("retire: %d %v", n, err)
	}
}

func keySet(t *testing.T, env *apptest.Env) signing.KeySet {
	t.Helper()
	resp, err := http.Get(env.URL + signing.KeySetPath)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var set signing.KeySet
	if err := json.NewDecoder(resp.Body).Decode(&set); err != nil {
		t.Fatal(err)
	}
	return set
}

type countingTransport struct{ n *atomic.Int32 }

func (c countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return http.DefaultTransport.RoundTrip(r)
}
