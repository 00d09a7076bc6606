package transfer_test

import (
	"context"
	"errors"
	"math/big"
	"net/http"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/chain/solana/svmtest"
	"github.com/switchboard-hq/switchboard/chain/solana/transfer"
)

// SOL and SPL sends on a real SVM move exactly their amounts; the sender pays the base fee,
// and the recipient's token account's rent when the send creates it (as the plan counted); a
// re-broadcast of a landed transaction is refused as processed, never landed twice.
func TestTransfersOnSVM(t *testing.T) {
	svm := svmtest.Start(t)
	ctx := context.Background()
	c := transfer.NewClient(svm.URL, &http.Client{}, time.Now)
	seed, from := svmtest.NewWallet(t)
	_, to := svmtest.NewWallet(t)
	svm.Airdrop(t, from, 2_000_000_000)
	if transfer.Address(seed) != from {
		t.Fatal("Address disagrees with the wallet")
	}

	land := func(tr transfer.Transfer) *transfer.Plan {
		t.Helper()
		p, err := c.PlanTransfer(ctx, tr)
		if err != nil {
			t.Fatal(err)
		}
		bh, err := c.LatestBlockhash(ctx)
		if err != nil {
			t.Fatal(err)
		}
		signed, err := p.Sign(seed, bh)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Simulate(ctx, signed.Raw); err != nil {
			t.Fatal(err)
		}
		if err := c.SendRaw(ctx, signed.Raw); err != nil {
			t.Fatal(err)
		}
		st, err := c.SignatureStatus(ctx, signed.Signature)
		if err != nil || !st.Found || st.Err != "" {
			t.Fatalf("status %+v %v", st, err)
		}
		if err := c.SendRaw(ctx, signed.Raw); !errors.Is(err, transfer.ErrAlreadyProcessed) {
			t.Fatalf("re-broadcast: %v", err)
		}
		return p
	}
	lamports := func(a string) uint64 {
		n, err := c.Lamports(ctx, a)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}

	before := lamports(from)
	land(transfer.Transfer{From: from, To: to, Amount: big.NewInt(123_456_789)})
	if got := lamports(to); got != 123_456_789 {
		t.Fatalf("recipient holds %d lamports", got)
	}
	if spent := before - lamports(from); spent != 123_456_789+transfer.LamportsPerSignature {
		t.Fatalf("sender spent %d", spent)
	}

	mint := svm.CreateMint(t, 6)
	svm.FundTokens(t, from, mint, 10_000_000)
	before = lamports(from)
	p := land(transfer.Transfer{From: from, To: to, Mint: mint, Amount: big.NewInt(5_000_000)})
	rent, _ := c.RentExempt(ctx, 165)
	if !p.CreatesATA || p.RentLamports != rent || rent == 0 {
		t.Fatalf("plan %+v, rent %d", p, rent)
	}
	if spent := before - lamports(from); spent != rent+transfer.LamportsPerSignature {
		t.Fatalf("sender spent %d lamports, want rent %d + fee", spent, rent)
	}
	dst, _ := transfer.TokenAccount(to, mint)
	src, _ := transfer.TokenAccount(from, mint)
	for acct, want := range map[string]int64{dst: 5_000_000, src: 5_000_000} {
		if got, err := c.TokenBalance(ctx, acct); err != nil || got.Int64() != want {
			t.Fatalf("token account %s holds %v (%v), want %d", acct, got, err, want)
		}
	}
	// The recipient's account exists now: no rent the second time.
	if p := land(transfer.Transfer{From: from, To: to, Mint: mint, Amount: big.NewInt(1)}); p.CreatesATA || p.RentLamports != 0 {
		t.Fatalf("second plan %+v", p)
	}

	// More tokens than held: the simulation says so before anything is sent.
	p, err := c.PlanTransfer(ctx, transfer.Transfer{From: from, To: to, Mint: mint, Amount: big.NewInt(9_000_000)})
	if err != nil {
		t.Fatal(err)
	}
	bh, _ := c.LatestBlockhash(ctx)
	signed, _ := p.Sign(seed, bh)
	if err := c.Simulate(ctx, signed.Raw); err == nil {
		t.Fatal("an overdraft simulated clean")
	}
}

// A broadcast that never landed is provably dead only past its last valid block height with
// no status; then its bytes are refused for their blockhash.
func TestBlockhashExpiry(t *testing.T) {
	svm := svmtest.Start(t)
	ctx := context.Background()
	c := transfer.NewClient(svm.URL, &http.Client{}, time.Now)
	seed, from := svmtest.NewWallet(t)
	_, to := svmtest.NewWallet(t)
	svm.Airdrop(t, from, 1_000_000_000)
	// Below the rent-exempt minimum a new account cannot be made: refused before signing.
	if _, err := c.PlanTransfer(ctx, transfer.Transfer{From: from, To: to, Amount: big.NewInt(1000)}); !errors.Is(err, transfer.ErrBelowRent) {
		t.Fatalf("a dust send to a new account: %v", err)
	}
	p, err := c.PlanTransfer(ctx, transfer.Transfer{From: from, To: to, Amount: big.NewInt(1_000_000)})
	if err != nil {
		t.Fatal(err)
	}
	bh, _ := c.LatestBlockhash(ctx)
	signed, err := p.Sign(seed, bh)
	if err != nil {
		t.Fatal(err)
	}
	svm.Hold(t, true)
	if err := c.SendRaw(ctx, signed.Raw); err != nil {
		t.Fatal(err)
	}
	svm.Release(t, false) // the packet is lost
	svm.Advance(t, 10)
	if dead, err := c.Expired(ctx, signed.LastValidBlockHeight); err != nil || dead {
		t.Fatalf("expired too early: %v %v", dead, err)
	}
	svm.Advance(t, 150)
	if dead, err := c.Expired(ctx, signed.LastValidBlockHeight); err != nil || !dead {
		t.Fatalf("not expired: %v %v", dead, err)
	}
	if st, err := c.SignatureStatus(ctx, signed.Signature); err != nil || st.Found {
		t.Fatalf("status %+v %v", st, err)
	}
	if err := c.SendRaw(ctx, signed.Raw); !errors.Is(err, transfer.ErrBlockhashNotFound) {
		t.Fatalf("expired bytes: %v", err)
	}
	if n, _ := c.Lamports(ctx, to); n != 0 {
		t.Fatalf("recipient holds %d", n)
	}
}
