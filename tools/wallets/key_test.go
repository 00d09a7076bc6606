package wallets_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"testing"
	"time"

	"github.com/mr-tron/base58"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/accounts"
	"github.com/switchboard-hq/switchboard/store/storetest"
	"github.com/switchboard-hq/switchboard/tools/wallets"
)

// SolanaKey opens the account's Solana seed (the one that derives its address) only while
// signing is on, and EVMKey still opens the EVM key beside it.
func TestSolanaKeyOpensTheSeedOnlyWhenSigningIsOn(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		master := bytes.Repeat([]byte{7}, 32)
		sealer, err := wallets.NewSealer(master)
		if err != nil {
			t.Fatal(err)
		}
		evmKP, _ := wallets.NewEVM()
		solKP, _ := wallets.NewSolana()
		wantSeed, wantEVM := bytes.Clone(solKP.Private), bytes.Clone(evmKP.Private)
		now := time.Now().UTC()
		var ws []*accounts.Wallet
		for i, kp := range []wallets.KeyPair{evmKP, solKP} {
			fam := []string{accounts.FamilyEVM, accounts.FamilySVM}[i]
			sealed, id := sealer.Seal(kp.Private, []byte(kp.Address))
			ws = append(ws, &accounts.Wallet{ID: fam, AccountID: "a1", Family: fam, Address: kp.Address, SealedKey: sealed, MasterKeyID: id, CreatedAt: now})
		}
		key := &accounts.APIKey{ID: "k1", AccountID: "a1", Name: "k", Prefix: "sb_test_abc", Hash: "h1", Scopes: []string{"read"}, CreatedAt: now}
		if err := accounts.New(st).Create(ctx, &accounts.Account{ID: "a1", Email: "a1@example.com", CreatedAt: now}, ws, key); err != nil {
			t.Fatal(err)
		}
		if _, _, err := wallets.SolanaKey(ctx, st, sealer, "a1"); !errors.Is(err, wallets.ErrSigningOff) {
			t.Fatalf("signing off: %v, want ErrSigningOff", err)
		}
		if err := accounts.New(st).SetSigning(ctx, "a1", true); err != nil {
			t.Fatal(err)
		}
		seed, addr, err := wallets.SolanaKey(ctx, st, sealer, "a1")
		if err != nil {
			t.Fatal(err)
		}
		pub, _ := base58.Decode(addr)
		if addr != solKP.Address || !bytes.Equal(seed, wantSeed) || !bytes.Equal(ed25519.NewKeyFromSeed(seed).Public().(ed25519.PublicKey), pub) {
			t.Fatalf("SolanaKey = %x %s, want the seed of %s", seed, addr, solKP.Address)
		}
		k, a, err := wallets.EVMKey(ctx, st, sealer, "a1")
		if err != nil || a != evmKP.Address || !bytes.Equal(k, wantEVM) {
			t.Fatalf("EVMKey = %s %v", a, err)
		}
	})
}
