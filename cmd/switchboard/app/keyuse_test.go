package app_test

import (
	"context"
	"testing"

	"github.com/switchboard-hq/switchboard/cmd/switchboard/app/apptest"
	"github.com/switchboard-hq/switchboard/store/accounts"
)

// A key's use is recorded in a batch, not by a write on the call's path: right after a call
// its lastUsedAt is not written yet, and once the batch is flushed (on shutdown here; every
// 5 s while serving) it is.
func TestKeyUseIsWrittenInBatches(t *testing.T) {
	env := apptest.Start(t, apptest.Options{})
	out := env.Onboard(t, "agent@example.com")
	key, accountID := out["apiKey"].(string), out["userId"].(string)
	if status, body := env.REST(t, "GET", "/v1/account", key, nil); status != 200 {
		t.Fatalf("call: %d %v", status, body)
	}
	lastUsed := func() bool {
		keys, err := accounts.New(env.App.Store).Keys(context.Background(), accountID)
		if err != nil || len(keys) != 1 {
			t.Fatalf("keys: %v %v", keys, err)
		}
		return keys[0].LastUsedAt != nil
	}
	if lastUsed() {
		t.Fatal("lastUsedAt was written on the call's path")
	}
	env.App.Stop()
	if !lastUsed() {
		t.Fatal("lastUsedAt was not written when the batch was flushed")
	}
}
