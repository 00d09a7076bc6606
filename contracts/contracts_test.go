package contracts_test

import (
	"context"
	"errors"
	"math/big"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/switchboard-hq/switchboard/contracts"
	"github.com/switchboard-hq/switchboard/contracts/anviltest"
)

// The payer contract on a real node: an EIP-3009 authorization is pulled into escrow, settled
// (split to partner and treasury) or refunded, each once and only by the relayer; the chain
// refuses a forged or reused authorization.
func TestFlatFeePayerOnAnvil(t *testing.T) {
	c := anviltest.Start(t)
	ctx := context.Background()
	caller := c.NewKey(t)
	from := crypto.PubkeyToAddress(caller.PublicKey)
	partner := crypto.PubkeyToAddress(c.NewKey(t).PublicKey)
	c.Mint(t, from, 5_000_000)
	now, err := c.Client.Now(ctx)
	if err != nil {
		t.Fatal(err)
	}
	authorize := func(requestID string, value int64, primary string, key any) contracts.Authorization {
		nonce := contracts.Nonce(anviltest.ChainID, c.Payer, requestID)
		td := contracts.TypedData(primary, anviltest.ChainID, c.Token, from, c.Payer, big.NewInt(value), now.Unix()-60, now.Unix()+600, nonce)
		signer := caller
		if key != nil {
			signer = c.NewKey(t)
		}
		sig, err := contracts.Sign(td, signer)
		if err != nil {
			t.Fatal(err)
		}
		got, v, r, s, err := contracts.Signer(td, sig)
		if err != nil || (key == nil && got != from) {
			t.Fatalf("recover: %v %v", got, err)
		}
		return contracts.Authorization{From: from, Value: big.NewInt(value), ValidAfter: big.NewInt(now.Unix() - 60), ValidBefore: big.NewInt(now.Unix() + 600),
			Nonce: nonce, V: v, R: r, S: s, ViaReceive: primary == contracts.ReceiveWithAuthorization}
	}

	// Paid and settled: 1.5 USDC, 1.2 to the partner, 0.3 to the treasury.
	a := authorize("req-1", 1_500_000, contracts.ReceiveWithAuthorization, nil)
	if _, err := c.Client.Transact(ctx, c.Payer, contracts.FlatFeePayer, "pay", contracts.Ref("r"), partner, big.NewInt(1_200_000), a); err != nil {
		t.Fatalf("pay: %v", err)
	}
	if e, _ := c.Client.EscrowOf(ctx, c.Payer, from, a.Nonce); e.State != contracts.EscrowHeld || e.Amount.Int64() != 1_500_000 || c.Balance(t, c.Payer) != 1_500_000 {
		t.Fatalf("escrow after pay: %+v", e)
	}
	if _, err := c.Client.Transact(ctx, c.Payer, contracts.FlatFeePayer, "settle", contracts.EscrowID(from, a.Nonce)); err != nil {
		t.Fatalf("settle: %v", err)
	}
	if c.Balance(t, partner) != 1_200_000 || c.Balance(t, c.Treasury) != 300_000 || c.Balance(t, from) != 3_500_000 {
		t.Fatalf("after settle: partner %d, treasury %d, caller %d", c.Balance(t, partner), c.Balance(t, c.Treasury), c.Balance(t, from))
	}
	// Once only: settle again, refund after settle, the same authorization again.
	for name, call := range map[string]func() error{
		"settle twice": func() error {
			_, err := c.Client.Transact(ctx, c.Payer, contracts.FlatFeePayer, "settle", contracts.EscrowID(from, a.Nonce))
			return err
		},
		"refund a settled": func() error {
			_, err := c.Client.Transact(ctx, c.Payer, contracts.FlatFeePayer, "refund", contracts.EscrowID(from, a.Nonce))
			return err
		},
		"pay twice": func() error {
			_, err := c.Client.Transact(ctx, c.Payer, contracts.FlatFeePayer, "pay", contracts.Ref("r"), partner, big.NewInt(1), a)
			return err
		},
	} {
		if err := call(); !errors.Is(err, contracts.ErrReverted) {
			t.Errorf("%s: %v, want a revert", name, err)
		}
	}

	// x402's TransferWithAuthorization is accepted too, and a refund returns it whole.
	b := authorize("req-2", 700_000, contracts.TransferWithAuthorization, nil)
	if _, err := c.Client.Transact(ctx, c.Payer, contracts.FlatFeePayer, "pay", contracts.Ref("r"), partner, big.NewInt(500_000), b); err != nil {
		t.Fatalf("pay (transfer): %v", err)
	}
	if _, err := c.Client.Transact(ctx, c.Payer, contracts.FlatFeePayer, "refund", contracts.EscrowID(from, b.Nonce)); err != nil {
		t.Fatalf("refund: %v", err)
	}
	if c.Balance(t, from) != 3_500_000 {
		t.Fatalf("after refund the caller has %d", c.Balance(t, from))
	}

	// A forged signature (another key) and a stranger calling settle are refused.
	forged := authorize("req-3", 100, contracts.ReceiveWithAuthorization, "other key")
	if _, err := c.Client.Transact(ctx, c.Payer, contracts.FlatFeePayer, "pay", contracts.Ref("r"), partner, big.NewInt(0), forged); !errors.Is(err, contracts.ErrReverted) {
		t.Fatalf("forged authorization: %v", err)
	}
	stranger, err := contracts.Dial(ctx, c.URL, anviltest.ChainID, c.NewFundedKey(t), 1)
	if err != nil {
		t.Fatal(err)
	}
	defer stranger.Close()
	d := authorize("req-4", 100, contracts.ReceiveWithAuthorization, nil)
	if _, err := stranger.Transact(ctx, c.Payer, contracts.FlatFeePayer, "pay", contracts.Ref("r"), partner, big.NewInt(0), d); !errors.Is(err, contracts.ErrReverted) {
		t.Fatalf("a stranger relayed: %v", err)
	}
	// An expired window.
	c.Warp(t, time.Hour)
	if _, err := c.Client.Transact(ctx, c.Payer, contracts.FlatFeePayer, "pay", contracts.Ref("r"), partner, big.NewInt(0), d); !errors.Is(err, contracts.ErrReverted) {
		t.Fatalf("expired authorization: %v", err)
	}
}

// A TransferWithAuthorization to the payer submitted to the token by someone else lands outside
// any escrow; adopt escrows it (once, and only with an unescrowed amount behind it), and it is
// refunded whole.
func TestFlatFeePayerAdoptsAFrontRunTransfer(t *testing.T) {
	c := anviltest.Start(t)
	ctx := context.Background()
	caller := c.NewKey(t)
	from := crypto.PubkeyToAddress(caller.PublicKey)
	c.Mint(t, from, 1_000_000)
	now, err := c.Client.Now(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var nonce [32]byte
	nonce[0] = 7
	td := contracts.TypedData(contracts.TransferWithAuthorization, anviltest.ChainID, c.Token, from, c.Payer, big.NewInt(400_000), 0, now.Unix()+600, nonce)
	sig, err := contracts.Sign(td, caller)
	if err != nil {
		t.Fatal(err)
	}
	_, v, r, s, _ := contracts.Signer(td, sig)
	adopt := func(value int64) error {
		_, err := c.Client.Transact(ctx, c.Payer, contracts.FlatFeePayer, "adopt", contracts.Ref("r"), common.Address{}, big.NewInt(0), from, nonce, big.NewInt(value))
		return err
	}
	if err := adopt(400_000); !errors.Is(err, contracts.ErrReverted) {
		t.Fatalf("adopt before the transfer: %v", err)
	}
	stranger, err := contracts.Dial(ctx, c.URL, anviltest.ChainID, c.NewFundedKey(t), 1)
	if err != nil {
		t.Fatal(err)
	}
	defer stranger.Close()
	if _, err := stranger.Transact(ctx, c.Token, contracts.TestUSDC, "transferWithAuthorization", from, c.Payer, big.NewInt(400_000), big.NewInt(0), big.NewInt(now.Unix()+600), nonce, v, r, s); err != nil {
		t.Fatalf("front-run transfer: %v", err)
	}
	found, err := c.Client.AuthorizedTransfer(ctx, c.Token, from, c.Payer, nonce)
	if err != nil || found == nil || found.Value.Int64() != 400_000 {
		t.Fatalf("the transfer on chain: %+v %v", found, err)
	}
	if err := adopt(500_000); !errors.Is(err, contracts.ErrReverted) {
		t.Fatalf("adopted more than arrived: %v", err)
	}
	if err := adopt(400_000); err != nil {
		t.Fatalf("adopt: %v", err)
	}
	if err := adopt(400_000); !errors.Is(err, contracts.ErrReverted) {
		t.Fatalf("adopted twice: %v", err)
	}
	if _, err := c.Client.Transact(ctx, c.Payer, contracts.FlatFeePayer, "refund", contracts.EscrowID(from, nonce)); err != nil {
		t.Fatalf("refund: %v", err)
	}
	if c.Balance(t, from) != 1_000_000 || c.Balance(t, c.Payer) != 0 {
		t.Fatalf("after the refund: caller %d, contract %d", c.Balance(t, from), c.Balance(t, c.Payer))
	}
}

// A transaction left unmined is replaced with higher fees under the same nonce; whichever is
// mined, the call happens once.
func TestStuckTransactionIsReplaced(t *testing.T) {
	c := anviltest.Start(t)
	ctx := context.Background()
	holder := crypto.PubkeyToAddress(c.NewKey(t).PublicKey)
	c.RPC(t, nil, "evm_setAutomine", false)
	c.Client.StuckAfter = 300 * time.Millisecond
	var mu sync.Mutex
	var sent []common.Hash
	record := func(h common.Hash) error {
		mu.Lock()
		defer mu.Unlock()
		sent = append(sent, h)
		return nil
	}
	done := make(chan error, 1)
	var mined common.Hash
	go func() {
		rc, err := c.Client.TransactRecorded(ctx, c.Token, contracts.TestUSDC, record, "mint", holder, big.NewInt(5))
		if err == nil {
			mined = rc.TxHash
		}
		done <- err
	}()
	for range 100 { // wait for a replacement, then mine
		mu.Lock()
		n := len(sent)
		mu.Unlock()
		if n >= 2 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.RPC(t, nil, "evm_mine")
	if err := <-done; err != nil {
		t.Fatalf("transact: %v", err)
	}
	c.RPC(t, nil, "evm_setAutomine", true)
	mu.Lock()
	defer mu.Unlock()
	if len(sent) < 2 || !slices.Contains(sent[1:], mined) {
		t.Fatalf("sent %v, mined %s: want a replacement mined", sent, mined)
	}
	if got := c.Balance(t, holder); got != 5 {
		t.Fatalf("minted %d, want 5 once", got)
	}
}
