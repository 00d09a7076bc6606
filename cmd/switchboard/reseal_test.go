package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/accounts"
	"github.com/switchboard-hq/switchboard/tools/wallets"
)

// `switchboard admin reseal` through the CLI: with SWITCHBOARD_MASTER_KEY=new,old it moves the
// service key and the wallets under the old key to the new one and says nothing is left (its
// report counts the idempotency answers too: app's TestResealMovesTheAnswersKeptForRetries); run
// again it has nothing to do; then the old key can be dropped and the service still starts.
func TestAdminReseal(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("SWITCHBOARD_DATA_DIR", dir)
	t.Setenv("SWITCHBOARD_DATABASE_URL", "")
	key := func() (string, []byte) {
		b := make([]byte, 32)
		rand.Read(b)
		return base64.StdEncoding.EncodeToString(b), b
	}
	oldKey, oldRaw := key()
	newKey, _ := key()
	ctx := context.Background()
	admin := func(args ...string) (map[string]any, error) {
		var out, errOut bytes.Buffer
		err := runAdmin(ctx, mustConfig(t), args, strings.NewReader(""), &out, &errOut)
		var got map[string]any
		json.Unmarshal(out.Bytes(), &got)
		return got, err
	}

	t.Setenv("SWITCHBOARD_MASTER_KEY", oldKey)
	if _, err := admin("ledger-check"); err != nil { // the first start seals the service key under the old key
		t.Fatal(err)
	}
	st, err := store.Open(ctx, "", dir)
	if err != nil {
		t.Fatal(err)
	}
	sealer, _ := wallets.NewSealer(oldRaw)
	evm, _ := wallets.NewEVM()
	sealed, id := sealer.Seal(evm.Private, []byte(evm.Address))
	now := time.Now().UTC()
	if err := accounts.New(st).Create(ctx, &accounts.Account{ID: "acct_1", Email: "w@example.com", CreatedAt: now},
		[]*accounts.Wallet{{ID: "w1", AccountID: "acct_1", Family: accounts.FamilyEVM, Address: evm.Address, SealedKey: sealed, MasterKeyID: id, CreatedAt: now}}, nil); err != nil {
		t.Fatal(err)
	}
	st.Close()

	t.Setenv("SWITCHBOARD_MASTER_KEY", newKey+","+oldKey)
	got, err := admin("reseal")
	if err != nil || got["walletsResealed"] != 1.0 || got["serviceKeysResealed"] != 1.0 || got["leftWallets"] != 0.0 || got["leftServiceKeys"] != 0.0 ||
		got["idempotencyAnswersResealed"] != 0.0 || got["leftIdempotencyAnswers"] != 0.0 {
		t.Fatalf("admin reseal: %v %v", got, err)
	}
	if got, err = admin("reseal"); err != nil || got["walletsResealed"] != 0.0 || got["serviceKeysResealed"] != 0.0 || got["leftWallets"] != 0.0 {
		t.Fatalf("admin reseal again: %v %v", got, err)
	}
	t.Setenv("SWITCHBOARD_MASTER_KEY", newKey)
	if _, err := admin("ledger-check"); err != nil {
		t.Fatalf("the service with the old master key dropped: %v", err)
	}
}
