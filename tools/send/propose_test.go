package send_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	sol "github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/programs/system"

	"github.com/ethereum/go-ethereum/common"

	"github.com/switchboard-hq/switchboard/chain/evm"
	"github.com/switchboard-hq/switchboard/chain/solana/svmtest"
	"github.com/switchboard-hq/switchboard/chain/solana/transfer"
	"github.com/switchboard-hq/switchboard/signing"
	"github.com/switchboard-hq/switchboard/signing/partnerexample"
	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/sends"
	"github.com/switchboard-hq/switchboard/store/storetest"
	"github.com/switchboard-hq/switchboard/tools/send"
)

func usdcTransfer(t *testing.T, to [20]byte, amount int64) []byte {
	t.Helper()
	data, err := evm.TransferData(to, big.NewInt(amount))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// A proposed ERC-20 transfer is signed once at the gas it was simulated at and moves exactly
// its amount; a repeat re-sends the recorded transaction; another body under its id, a
// proposal that no longer runs, or one other than the simulated transaction is never signed.
func TestProposedOnce(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		e := newEnv(t, st)
		ctx := context.Background()
		bob := recipient(t, e)
		e.ch.Mint(t, common.Address(e.from), 10_000_000)
		p := send.Proposal{RequestID: "p1", AccountID: "a1", Chain: "base", To: e.ch.Token.Hex(), Data: usdcTransfer(t, bob, 3_000_000)}
		sim, err := e.sender.SimulateProposal(ctx, e.from, p)
		if err != nil || sim.Effect.Kind != evm.EffectTransfer || sim.Effect.Amount.Int64() != 3_000_000 {
			t.Fatalf("simulate: %+v %v", sim, err)
		}
		p.Simulated = sim.Tx
		first, err := e.sender.SendProposed(ctx, p)
		if err != nil || first.Status != sends.Submitted || first.Kind != sends.KindProposed || first.Nonce == nil {
			t.Fatalf("send: %+v %v", first, err)
		}
		again, err := e.sender.SendProposed(ctx, p)
		if err != nil || again.TxHash != first.TxHash || !bytes.Equal(again.Raw, first.Raw) || e.opened.Load() != 1 {
			t.Fatalf("repeat: %+v %v (key opened %d times)", again, err, e.opened.Load())
		}
		if s := e.follow(t, "p1"); s.Status != sends.Confirmed {
			t.Fatalf("followed: %+v", s)
		}
		if e.ch.Balance(t, common.Address(bob)) != 3_000_000 || e.ch.Balance(t, common.Address(e.from)) != 7_000_000 {
			t.Fatal("the proposal did not move exactly its amount once")
		}

		other := p
		other.Data = usdcTransfer(t, bob, 1)
		if _, err := e.sender.SendProposed(ctx, other); !errors.Is(err, send.ErrOtherRequest) {
			t.Fatalf("another body under p1: %v", err)
		}
		if _, err := e.sender.Send(ctx, send.Request{RequestID: "p1", AccountID: "a1", Chain: "base", To: e.ch.Token.Hex(), Amount: big.NewInt(1)}); !errors.Is(err, send.ErrOtherRequest) {
			t.Fatalf("a wallet send under a proposal's id: %v", err)
		}

		tooMuch := send.Proposal{RequestID: "p2", AccountID: "a1", Chain: "base", To: e.ch.Token.Hex(), Data: usdcTransfer(t, bob, 7_000_001)}
		if _, err := e.sender.SendProposed(ctx, tooMuch); !errors.Is(err, evm.ErrSimulationFailed) {
			t.Fatalf("a proposal that reverts: %v", err)
		}
		changed := send.Proposal{RequestID: "p3", AccountID: "a1", Chain: "base", To: e.ch.Token.Hex(), Data: usdcTransfer(t, bob, 2), Simulated: sim.Tx}
		if _, err := e.sender.SendProposed(ctx, changed); !errors.Is(err, send.ErrProposalChanged) {
			t.Fatalf("a proposal other than the simulated one: %v", err)
		}
		for _, id := range []string{"p2", "p3"} {
			if _, err := sends.New(st).Get(ctx, id); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("%s was recorded: %v", id, err)
			}
		}
		if e.ch.Balance(t, common.Address(bob)) != 3_000_000 {
			t.Fatal("a refused proposal moved tokens")
		}
	})
}

// Killed after recording, before the broadcast, and after the node took it before its answer:
// the retry or the follower sends the recorded transaction, and the approval lands once.
func TestProposedCrash(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		e := newEnv(t, st)
		ctx := context.Background()
		spender := recipient(t, e)
		unlimited := new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 256), big.NewInt(1))
		data, _ := evm.ApproveData(spender, unlimited)
		for i, mode := range []int32{drop, lose} {
			id := []string{"c1", "c2"}[i]
			p := send.Proposal{RequestID: id, AccountID: "a1", Chain: "base", To: e.ch.Token.Hex(), Data: data}
			e.mode.Store(mode)
			rec, err := e.sender.SendProposed(ctx, p)
			if !errors.Is(err, send.ErrNotBroadcast) || rec == nil || rec.Status != sends.Prepared {
				t.Fatalf("mode %d: %+v %v", mode, rec, err)
			}
			e.mode.Store(pass)
			again, err := e.sender.SendProposed(ctx, p)
			if err != nil || again.TxHash != rec.TxHash {
				t.Fatalf("mode %d retry: %+v %v", mode, again, err)
			}
			if s := e.follow(t, id); s.Status != sends.Confirmed {
				t.Fatalf("mode %d followed: %+v", mode, s)
			}
		}
		if n, err := e.direct.LatestNonce(ctx, e.from); err != nil || n != 2 || e.opened.Load() != 2 {
			t.Fatalf("%d transactions mined, key opened %d times (want 2, 2): %v", n, e.opened.Load(), err)
		}
	})
}

// proposeSol builds a transaction as a partner would, the wallet its fee payer.
func proposeSol(t *testing.T, e *solEnv, ins ...sol.Instruction) string {
	t.Helper()
	bh, err := e.c.LatestBlockhash(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	tx, err := sol.NewTransaction(ins, sol.MustHashFromBase58(bh.Hash), sol.TransactionPayer(sol.MustPublicKeyFromBase58(e.from)))
	if err != nil {
		t.Fatal(err)
	}
	tx.Signatures = make([]sol.Signature, 1)
	raw, err := tx.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(raw)
}

// A proposed Solana transfer lands once, signed as its partner's message; a dropped broadcast
// is re-sent as the same bytes; a proposal whose blockhash expires unlanded ends dropped and is
// never signed again; a failing one is never signed.
func TestSolanaProposedOnce(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		e := newSolEnv(t, st)
		ctx := context.Background()
		_, bob := svmtest.NewWallet(t)
		w, b := sol.MustPublicKeyFromBase58(e.from), sol.MustPublicKeyFromBase58(bob)
		price := sol.NewInstruction(sol.ComputeBudget, sol.AccountMetaSlice{}, binary.LittleEndian.AppendUint64([]byte{3}, 2_000_000)) // 2 lamports a unit
		limit := sol.NewInstruction(sol.ComputeBudget, sol.AccountMetaSlice{}, binary.LittleEndian.AppendUint32([]byte{2}, 1_000))
		p := send.Proposal{RequestID: "q1", AccountID: "a1", Chain: send.SolanaChain,
			Transaction: proposeSol(t, e, price, limit, system.NewTransferInstruction(300_000_000, w, b).Build())}
		prop, sim, err := e.sender.SimulateSolanaProposal(ctx, e.from, p)
		if err != nil || sim.UnitsConsumed == 0 || prop.LamportsOut().Int64() != 300_007_000 {
			t.Fatalf("simulate: %+v %v", prop, err)
		}
		start := e.lamports(t, e.from)
		first, err := e.sender.SendProposed(ctx, p)
		if err != nil || first.Status != sends.Submitted || first.Amount != "300000000" {
			t.Fatalf("send: %+v %v", first, err)
		}
		raw, _ := base64.StdEncoding.DecodeString(p.Transaction)
		if !bytes.Equal(first.Raw[65:], raw[65:]) {
			t.Fatal("the signed message is not the partner's")
		}
		if again, err := e.sender.SendProposed(ctx, p); err != nil || again.TxHash != first.TxHash || e.opened.Load() != 1 {
			t.Fatalf("repeat: %+v %v", again, err)
		}
		if s := e.follow(t, "q1"); s.Status != sends.Confirmed || s.Fee != "7000" {
			t.Fatalf("followed: %+v (fee: the base 5000 and 2 lamports x 1000 units)", s)
		}
		if spent := start - e.lamports(t, e.from); spent != 300_007_000 {
			t.Fatalf("the wallet spent %d lamports, want the amount and the recorded fee", spent)
		}
		if got := e.lamports(t, bob); got != 300_000_000 {
			t.Fatalf("bob holds %d lamports", got)
		}

		// Dropped on the way, re-sent as the same bytes.
		q2 := send.Proposal{RequestID: "q2", AccountID: "a1", Chain: send.SolanaChain,
			Transaction: proposeSol(t, e, system.NewTransferInstruction(50_000_000, w, b).Build())}
		e.drop.Store(true)
		rec, err := e.sender.SendProposed(ctx, q2)
		if !errors.Is(err, send.ErrNotBroadcast) || rec.Status != sends.Prepared {
			t.Fatalf("dropped: %+v %v", rec, err)
		}
		e.drop.Store(false)
		if again, err := e.sender.SendProposed(ctx, q2); err != nil || again.TxHash != rec.TxHash || again.Status != sends.Submitted {
			t.Fatalf("retry: %+v %v", again, err)
		}
		if got := e.lamports(t, bob); got != 350_000_000 {
			t.Fatalf("bob holds %d lamports", got)
		}

		// Never reaches the cluster, then its blockhash expires: dropped, not re-signed.
		q3 := send.Proposal{RequestID: "q3", AccountID: "a1", Chain: send.SolanaChain,
			Transaction: proposeSol(t, e, system.NewTransferInstruction(10_000_000, w, b).Build())}
		e.drop.Store(true)
		if _, err := e.sender.SendProposed(ctx, q3); !errors.Is(err, send.ErrNotBroadcast) {
			t.Fatalf("dropped: %v", err)
		}
		e.drop.Store(false)
		opened := e.opened.Load()
		e.svm.Advance(t, transfer.BlockhashLife+10)
		if s := e.follow(t, "q3"); s.Status != sends.Dropped || s.Reason == "" {
			t.Fatalf("expired: %+v", s)
		}
		if e.opened.Load() != opened {
			t.Fatal("an expired proposal was signed again")
		}

		// Proposed on a blockhash already expired: the first broadcast ends it dropped.
		stale := proposeSol(t, e, system.NewTransferInstruction(10_000_000, w, b).Build())
		e.svm.Advance(t, transfer.BlockhashLife+10)
		q4, err := e.sender.SendProposed(ctx, send.Proposal{RequestID: "q4", AccountID: "a1", Chain: send.SolanaChain, Transaction: stale})
		if err != nil || q4.Status != sends.Dropped {
			t.Fatalf("stale: %+v %v", q4, err)
		}

		// More than the wallet holds: never signed, never recorded.
		huge := send.Proposal{RequestID: "q5", AccountID: "a1", Chain: send.SolanaChain,
			Transaction: proposeSol(t, e, system.NewTransferInstruction(50_000_000_000, w, b).Build())}
		if _, err := e.sender.SendProposed(ctx, huge); !errors.Is(err, transfer.ErrSimulationFailed) {
			t.Fatalf("a failing proposal: %v", err)
		}
		if _, err := sends.New(st).Get(ctx, "q5"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("q5 recorded: %v", err)
		}
		if got := e.lamports(t, bob); got != 350_000_000 {
			t.Fatalf("bob holds %d lamports after the refusals", got)
		}
	})
}

// The partner kit's write intent proposes a transfer that, simulated, decodes to exactly the
// args' amount to the args' recipient, and once signed lands moving exactly that.
func TestPartnerKitProposalLands(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		e := newEnv(t, st)
		ctx := context.Background()
		bob := recipient(t, e)
		e.ch.Mint(t, common.Address(e.from), 10_000_000)
		_, priv, _ := ed25519.GenerateKey(rand.Reader)
		signer := signing.NewSigner(priv)
		tok := partnerexample.Token{Chain: "base", Address: e.ch.Token.Hex(), Symbol: "USDC", Decimals: 6}
		partner := httptest.NewServer(partnerexample.NewSendHandler(signing.NewVerifierFromKey(signer.PublicKey()), tok, 0))
		defer partner.Close()
		fields := signing.CallFields{RequestID: signing.NewRequestID(), IntentDefinitionID: "int_send", UserID: "a1",
			Args: json.RawMessage(`{"to":"` + hexOf(bob) + `","amount":"2.5"}`)}
		client := &http.Client{Transport: signing.NewRESTRoundTripper(signer, fields, nil)}
		resp, err := client.Post(partner.URL, "application/json", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var answer struct {
			Result struct {
				Transactions []partnerexample.Transaction `json:"transactions"`
			} `json:"result"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil || len(answer.Result.Transactions) != 1 {
			t.Fatalf("partner answer: %v %+v", err, answer)
		}
		tx := answer.Result.Transactions[0]
		data, err := hex.DecodeString(strings.TrimPrefix(tx.Data, "0x"))
		value, ok := new(big.Int).SetString(tx.Value, 10)
		if err != nil || !ok || tx.Chain != "base" {
			t.Fatalf("proposed %+v", tx)
		}
		p := send.Proposal{RequestID: fields.RequestID, AccountID: "a1", Chain: tx.Chain, To: tx.To, Value: value, Data: data}
		sim, err := e.sender.SimulateProposal(ctx, e.from, p)
		if err != nil || sim.Effect.Kind != evm.EffectTransfer || sim.Effect.Recipient != bob || sim.Effect.Amount.Int64() != 2_500_000 ||
			sim.Effect.Contract != [20]byte(e.ch.Token) {
			t.Fatalf("simulate: %+v %v", sim, err)
		}
		p.Simulated = sim.Tx
		if _, err := e.sender.SendProposed(ctx, p); err != nil {
			t.Fatal(err)
		}
		if s := e.follow(t, p.RequestID); s.Status != sends.Confirmed {
			t.Fatalf("followed: %+v", s)
		}
		if e.ch.Balance(t, common.Address(bob)) != 2_500_000 || e.ch.Balance(t, common.Address(e.from)) != 7_500_000 {
			t.Fatal("the partner's proposal did not move exactly its amount")
		}
	})
}
