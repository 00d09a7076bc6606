package transfer_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"math"
	"math/big"
	"net/http"
	"testing"
	"time"

	sol "github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/programs/system"

	"github.com/switchboard-hq/switchboard/chain/solana/svmtest"
	"github.com/switchboard-hq/switchboard/chain/solana/transfer"
)

// propose builds a transaction as a partner would: payer pays and is the only signer, its
// signature left empty.
func propose(t *testing.T, c *transfer.Client, payer sol.PublicKey, ins ...sol.Instruction) string {
	t.Helper()
	bh, err := c.LatestBlockhash(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	tx, err := sol.NewTransaction(ins, sol.MustHashFromBase58(bh.Hash), sol.TransactionPayer(payer))
	if err != nil {
		t.Fatal(err)
	}
	tx.Signatures = make([]sol.Signature, tx.Message.Header.NumRequiredSignatures)
	raw, err := tx.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(raw)
}

func tokenIx(data []byte, accts ...sol.PublicKey) sol.Instruction {
	metas := sol.AccountMetaSlice{}
	for i, a := range accts {
		m := sol.Meta(a)
		if i == len(accts)-1 {
			m = m.SIGNER()
		} else {
			m = m.WRITE()
		}
		metas = append(metas, m)
	}
	return sol.NewInstruction(sol.TokenProgramID, metas, data)
}

func budget(data ...byte) sol.Instruction {
	return sol.NewInstruction(sol.ComputeBudget, sol.AccountMetaSlice{}, data)
}

// A partner's transaction is decoded to what each instruction does (a SOL transfer, an SPL
// TransferChecked, an unlimited Approve whose mint is read from its source), simulated unsigned,
// signed as its exact message bytes and lands moving exactly what was decoded; a failing one
// is refused by the simulation; one not paid and signed by the wallet alone is refused before;
// an expired blockhash cannot land and is never re-made.
func TestProposedOnSVM(t *testing.T) {
	svm := svmtest.Start(t)
	ctx := context.Background()
	c := transfer.NewClient(svm.URL, &http.Client{}, time.Now)
	seed, wallet := svmtest.NewWallet(t)
	_, bob := svmtest.NewWallet(t)
	_, delegate := svmtest.NewWallet(t)
	svm.Airdrop(t, wallet, 2_000_000_000)
	svm.Airdrop(t, bob, 1_000_000_000)
	mint := svm.CreateMint(t, 6)
	src := svm.FundTokens(t, wallet, mint, 10_000_000)
	dst := svm.FundTokens(t, bob, mint, 0)
	w, b, m := sol.MustPublicKeyFromBase58(wallet), sol.MustPublicKeyFromBase58(bob), sol.MustPublicKeyFromBase58(mint)
	s, d, del := sol.MustPublicKeyFromBase58(src), sol.MustPublicKeyFromBase58(dst), sol.MustPublicKeyFromBase58(delegate)

	price := binary.LittleEndian.AppendUint64([]byte{3}, 1000)    // 1000 micro-lamports per unit
	limit := binary.LittleEndian.AppendUint32([]byte{2}, 100_000) // 100,000 units
	checked := append(binary.LittleEndian.AppendUint64([]byte{12}, 2_500_000), 6)
	approve := binary.LittleEndian.AppendUint64([]byte{4}, math.MaxUint64)
	b64 := propose(t, c, w,
		budget(price...), budget(limit...),
		system.NewTransferInstruction(100_000_000, w, b).Build(),
		tokenIx(checked, s, m, d, w),
		tokenIx(approve, s, del, w),
	)
	p, err := transfer.ParseProposed(b64, wallet)
	if err != nil {
		t.Fatal(err)
	}
	if p.FeeLamports != 5000+100 || len(p.Effects) != 5 {
		t.Fatalf("fee %d, %d effects", p.FeeLamports, len(p.Effects))
	}
	e := p.Effects
	if e[0].Kind != transfer.EffectCall || e[0].Program != sol.ComputeBudget.String() {
		t.Fatalf("compute budget: %+v", e[0])
	}
	if e[2].Kind != transfer.EffectNative || e[2].From != wallet || e[2].To != bob || e[2].Amount.Int64() != 100_000_000 {
		t.Fatalf("system transfer: %+v", e[2])
	}
	if e[3].Kind != transfer.EffectTransfer || e[3].From != src || e[3].To != dst || e[3].Mint != mint ||
		e[3].Authority != wallet || e[3].Amount.Int64() != 2_500_000 || *e[3].Decimals != 6 {
		t.Fatalf("transferChecked: %+v", e[3])
	}
	if e[4].Kind != transfer.EffectApprove || !e[4].Unlimited || e[4].To != delegate || e[4].Mint != "" {
		t.Fatalf("approve: %+v", e[4])
	}
	if out := p.LamportsOut(); out.Cmp(big.NewInt(100_005_100)) != 0 {
		t.Fatalf("lamports out %s", out)
	}
	if err := c.ResolveMints(ctx, p); err != nil || p.Effects[4].Mint != mint {
		t.Fatalf("resolve mints: %v %+v", err, p.Effects[4])
	}
	sim, err := c.SimulateProposed(ctx, p)
	if err != nil || sim.UnitsConsumed == 0 {
		t.Fatalf("simulate: %v %+v", err, sim)
	}

	before, _ := c.Lamports(ctx, wallet)
	signed, err := c.SignProposed(ctx, p, seed)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(signed.Raw[65:], p.Message) {
		t.Fatal("the signed transaction's message is not the proposed one")
	}
	if err := c.SendRaw(ctx, signed.Raw); err != nil {
		t.Fatal(err)
	}
	if st, err := c.SignatureStatus(ctx, signed.Signature); err != nil || !st.Found || st.Err != "" {
		t.Fatalf("status %+v %v", st, err)
	}
	after, _ := c.Lamports(ctx, wallet)
	if spent := before - after; spent != 100_000_000+p.FeeLamports {
		t.Fatalf("the wallet spent %d lamports, want %d", spent, 100_000_000+p.FeeLamports)
	}
	if got, _ := c.TokenBalance(ctx, dst); got.Int64() != 2_500_000 {
		t.Fatalf("bob holds %s", got)
	}
	acct, err := c.AccountInfo(ctx, src)
	if err != nil || !bytes.Equal(acct.Data[76:108], del[:]) || binary.LittleEndian.Uint64(acct.Data[121:129]) != math.MaxUint64 {
		t.Fatalf("the delegate's allowance is not unlimited: %v", err)
	}

	// More tokens than the wallet holds: the simulation refuses it.
	tooMuch := append(binary.LittleEndian.AppendUint64([]byte{12}, 7_500_001), 6)
	p2, err := transfer.ParseProposed(propose(t, c, w, tokenIx(tooMuch, s, m, d, w)), wallet)
	if err != nil {
		t.Fatal(err)
	}
	if sim, err := c.SimulateProposed(ctx, p2); !errors.Is(err, transfer.ErrSimulationFailed) || sim.Err == "" {
		t.Fatalf("a transfer beyond the balance simulated: %v", err)
	}

	// Not the wallet's alone: another fee payer, another signer, a versioned message, bytes
	// after the message, a wrong key.
	if _, err := transfer.ParseProposed(propose(t, c, b, system.NewTransferInstruction(1, w, b).Build()), wallet); !errors.Is(err, transfer.ErrProposal) {
		t.Fatalf("another fee payer: %v", err)
	}
	if _, err := transfer.ParseProposed(propose(t, c, w, system.NewTransferInstruction(1, b, w).Build()), wallet); !errors.Is(err, transfer.ErrProposal) {
		t.Fatalf("a second signer: %v", err)
	}
	one := propose(t, c, w, system.NewTransferInstruction(1_000_000, w, b).Build())
	raw, _ := base64.StdEncoding.DecodeString(one)
	versioned := append(append(append([]byte{}, raw[:65]...), 0x80), raw[65:]...)
	for name, bad := range map[string][]byte{"versioned": versioned, "trailing bytes": append(append([]byte{}, raw...), 0)} {
		if _, err := transfer.ParseProposed(base64.StdEncoding.EncodeToString(bad), wallet); !errors.Is(err, transfer.ErrProposal) {
			t.Fatalf("%s: %v", name, err)
		}
	}
	p3, err := transfer.ParseProposed(one, wallet)
	if err != nil {
		t.Fatal(err)
	}
	other, _ := svmtest.NewWallet(t)
	if _, err := c.SignProposed(ctx, p3, other); err == nil {
		t.Fatal("signed with a key that is not the fee payer's")
	}

	// Its blockhash expires: the simulation (blockhash replaced) still runs, the broadcast
	// cannot land.
	svm.Advance(t, 200)
	if _, err := c.SimulateProposed(ctx, p3); err != nil {
		t.Fatal(err)
	}
	signed, err = c.SignProposed(ctx, p3, seed)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.SendRaw(ctx, signed.Raw); !errors.Is(err, transfer.ErrBlockhashNotFound) {
		t.Fatalf("an expired proposal's broadcast: %v", err)
	}
}
