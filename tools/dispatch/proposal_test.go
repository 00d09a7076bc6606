package dispatch

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math/big"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
	sol "github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/programs/system"

	"github.com/switchboard-hq/switchboard/chain/evm"
	"github.com/switchboard-hq/switchboard/chain/solana/svmtest"
	"github.com/switchboard-hq/switchboard/chain/solana/transfer"
	"github.com/switchboard-hq/switchboard/contracts/anviltest"
	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/sends"
	"github.com/switchboard-hq/switchboard/store/storetest"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/send"
	"github.com/switchboard-hq/switchboard/tools/service"
	"github.com/switchboard-hq/switchboard/tools/tokens"
	"github.com/switchboard-hq/switchboard/tools/tokens/tokenstest"
)

// result.transactions is read strictly: the documented shapes, defaults for an absent data and
// value, and every other shape (unknown fields such as from or gas included) refused.
func TestProposalsShape(t *testing.T) {
	to := "0x00000000000000000000000000000000000000bb"
	if txs, err := proposals([]byte(`{"answer":"no transactions"}`)); txs != nil || err != nil {
		t.Fatalf("no transactions: %v %v", txs, err)
	}
	if txs, err := proposals([]byte(`"text"`)); txs != nil || err != nil {
		t.Fatalf("a text result: %v %v", txs, err)
	}
	txs, err := proposals([]byte(`{"transactions":[{"chain":"base","to":"` + to + `"},{"chain":"solana","transaction":"AQID"}]}`))
	if err != nil || len(txs) != 2 || txs[0].Data != "0x" || txs[0].Value != "0" || txs[1].Transaction != "AQID" {
		t.Fatalf("%+v %v", txs, err)
	}
	for name, bad := range map[string]string{
		"not an array":     `{"transactions":{}}`,
		"empty":            `{"transactions":[]}`,
		"too many":         `{"transactions":[` + strings.Repeat(`{"chain":"base","to":"`+to+`"},`, MaxProposed) + `{"chain":"base","to":"` + to + `"}]}`,
		"a from":           `{"transactions":[{"chain":"base","to":"` + to + `","from":"` + to + `"}]}`,
		"gas":              `{"transactions":[{"chain":"base","to":"` + to + `","gas":"0x5208"}]}`,
		"no chain":         `{"transactions":[{"to":"` + to + `"}]}`,
		"bad to":           `{"transactions":[{"chain":"base","to":"0xbb"}]}`,
		"odd data":         `{"transactions":[{"chain":"base","to":"` + to + `","data":"0xabc"}]}`,
		"data without 0x":  `{"transactions":[{"chain":"base","to":"` + to + `","data":"abcd"}]}`,
		"hex value":        `{"transactions":[{"chain":"base","to":"` + to + `","value":"0x10"}]}`,
		"negative value":   `{"transactions":[{"chain":"base","to":"` + to + `","value":"-1"}]}`,
		"value a number":   `{"transactions":[{"chain":"base","to":"` + to + `","value":1}]}`,
		"solana with to":   `{"transactions":[{"chain":"solana","to":"` + to + `","transaction":"AQID"}]}`,
		"solana not b64":   `{"transactions":[{"chain":"solana","transaction":"***"}]}`,
		"evm with tx":      `{"transactions":[{"chain":"base","to":"` + to + `","transaction":"AQID"}]}`,
		"solana oversized": `{"transactions":[{"chain":"solana","transaction":"` + strings.Repeat("A", 1700) + `"}]}`,
	} {
		if _, err := proposals([]byte(bad)); !errors.Is(err, ErrBadProposal) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// A proposed transfer and an unlimited approval, simulated on anvil from the wallet through the
// real sender, are shown decoded (the approval named unlimited), judged by their contract and
// recipient, and signed as shown; a proposal beyond what was shown, or one that reverts, is
// never signed.
func TestViewProposalsOnAnvil(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ch := anviltest.Start(t)
		ctx := context.Background()
		key := crypto.FromECDSA(ch.NewFundedKey(t))
		from := evm.AddressOf(key)
		storetest.Account(t, st, "a1")
		ch.Mint(t, common.Address(from), 10_000_000)
		cfg := send.Config{EVM: map[string]send.Chain{"base": {Client: evm.NewClient(anviltest.ChainID, ch.URL, &http.Client{}, time.Now)}}}
		sender := send.New(cfg, service.Deps{Store: st}, sends.New(st), send.Keys{EVM: func(context.Context, string) ([]byte, string, error) {
			return bytes.Clone(key), hexAddr(from), nil
		}})
		bob, spender := [20]byte{0xbb}, [20]byte{0x5e}
		transferData, _ := evm.TransferData(bob, big.NewInt(4_000_000))
		unlimited := new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 256), big.NewInt(1))
		approveData, _ := evm.ApproveData(spender, unlimited)
		token := strings.ToLower(ch.Token.Hex())
		txs := []ProposedTx{
			{Chain: "base", To: token, Data: "0x" + common.Bytes2Hex(transferData), Value: "0"},
			{Chain: "base", To: token, Data: "0x" + common.Bytes2Hex(approveData), Value: "0"},
		}
		shown, err := viewProposals(ctx, sender, "a1", "req", from, "", txs)
		if err != nil {
			t.Fatal(err)
		}
		tr, ap := shown[0].Effects[0], shown[1].Effects[0]
		if tr.Kind != evm.EffectTransfer || tr.Recipient != hexAddr(bob) || tr.Token != token || tr.Amount != "4000000" || shown[0].GasUnits < 21000 || shown[0].FeeNative == "0" {
			t.Fatalf("transfer shown as %+v (%+v)", tr, shown[0])
		}
		if ap.Kind != evm.EffectApprove || !ap.Unlimited || ap.Recipient != hexAddr(spender) {
			t.Fatalf("approval shown as %+v", ap)
		}
		if m := movementOf(shown[1], store.KindProposed, "SEND", 0); m.Contract != token || m.Recipient != hexAddr(spender) {
			t.Fatalf("movement facts %+v", m)
		}

		// At confirmation: the same proposals re-simulated are not beyond what was shown.
		again, err := viewProposals(ctx, sender, "a1", "req", from, "", txs)
		if err != nil || exceeds(shown, again) {
			t.Fatalf("the same proposals exceed themselves: %v", err)
		}
		more, _ := evm.TransferData(bob, big.NewInt(4_000_001))
		bigger, err := viewProposals(ctx, sender, "a1", "req", from, "", []ProposedTx{{Chain: "base", To: token, Data: "0x" + common.Bytes2Hex(more), Value: "0"}, txs[1]})
		if err != nil || !exceeds(shown, bigger) || !exceeds(shown, again[:1]) {
			t.Fatalf("a larger transfer was not beyond what was shown: %v", err)
		}

		// Signed as shown: exactly the amount moves; the allowance is granted.
		for _, v := range shown {
			sent, err := sender.SendProposed(ctx, v.Proposal)
			if err != nil {
				t.Fatal(err)
			}
			ch.Mined(t, sent.TxHash)
		}
		if got := ch.Balance(t, common.Address(bob)); got != 4_000_000 {
			t.Fatalf("bob holds %d", got)
		}

		// Reverts now (the wallet holds 6 USDC): refused before anything is shown.
		tooMuch, _ := evm.TransferData(bob, big.NewInt(6_000_001))
		if _, err := viewProposals(ctx, sender, "a1", "req2", from, "", []ProposedTx{{Chain: "base", To: token, Data: "0x" + common.Bytes2Hex(tooMuch), Value: "0"}}); !errors.Is(err, evm.ErrSimulationFailed) {
			t.Fatalf("a reverting proposal: %v", err)
		}
	})
}

// A Solana proposal is shown instruction by instruction: the SOL it sends and to whom, its
// fee, the program of anything else (a memo); one calling a program that does not exist is
// refused by its simulation.
func TestViewSolanaProposal(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		svm := svmtest.Start(t)
		ctx := context.Background()
		seed, wallet := svmtest.NewWallet(t)
		_, bob := svmtest.NewWallet(t)
		svm.Airdrop(t, wallet, 1_000_000_000)
		storetest.Account(t, st, "a1")
		c := transfer.NewClient(svm.URL, &http.Client{}, time.Now)
		sender := send.New(send.Config{Solana: c}, service.Deps{Store: st}, sends.New(st), send.Keys{Solana: func(context.Context, string) ([]byte, string, error) {
			return bytes.Clone(seed), wallet, nil
		}})
		bh, err := c.LatestBlockhash(ctx)
		if err != nil {
			t.Fatal(err)
		}
		w, b := sol.MustPublicKeyFromBase58(wallet), sol.MustPublicKeyFromBase58(bob)
		build := func(ins ...sol.Instruction) []ProposedTx {
			tx, err := sol.NewTransaction(ins, sol.MustHashFromBase58(bh.Hash), sol.TransactionPayer(w))
			if err != nil {
				t.Fatal(err)
			}
			tx.Signatures = make([]sol.Signature, 1)
			raw, _ := tx.MarshalBinary()
			return []ProposedTx{{Chain: send.SolanaChain, Transaction: base64.StdEncoding.EncodeToString(raw)}}
		}
		_, nowhere := svmtest.NewWallet(t)
		missing := sol.NewInstruction(sol.MustPublicKeyFromBase58(nowhere), sol.AccountMetaSlice{}, []byte("hi"))
		if views, err := viewProposals(ctx, sender, "a1", "req", [20]byte{}, wallet, build(missing)); !errors.Is(err, transfer.ErrSimulationFailed) {
			t.Fatalf("a proposal calling no program: %+v %v", views, err)
		}
		memoProgram := "MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr"
		memo := sol.NewInstruction(sol.MustPublicKeyFromBase58(memoProgram), sol.AccountMetaSlice{}, []byte("hi"))
		views, err := viewProposals(ctx, sender, "a1", "req", [20]byte{}, wallet, build(system.NewTransferInstruction(200_000_000, w, b).Build(), memo))
		if err != nil || len(views) != 1 || len(views[0].Effects) != 2 || views[0].FeeNative != "5000" {
			t.Fatalf("%+v %v", views, err)
		}
		if e := views[0].Effects[0]; e.Kind != transfer.EffectNative || e.Recipient != bob || e.Native != "200000000" || e.Owner != wallet {
			t.Fatalf("shown as %+v", e)
		}
		if e := views[0].Effects[1]; e.Kind != transfer.EffectCall || e.Contract != memoProgram {
			t.Fatalf("the memo shown as %+v", e)
		}
		if m := movementOf(views[0], store.KindProposed, "SEND", 0); m.Recipient != bob || m.Contract != sol.SystemProgramID.String() {
			t.Fatalf("movement facts %+v", m)
		}
		if _, err := sender.SendProposed(ctx, views[0].Proposal); err != nil {
			t.Fatal(err)
		}
		if n, _ := c.Lamports(ctx, bob); n != 200_000_000 {
			t.Fatalf("bob holds %d lamports", n)
		}
	})
}

// What proposals take from the wallet is priced at live prices: its transfers and native
// value, its fees; another owner's tokens moved are not the wallet's; an unlimited approval is
// named unpriced (a policy with caps refuses it); a spam token refuses the proposals.
func TestPriceProposals(t *testing.T) {
	up := tokenstest.Start(t, map[string]int64{"base": 8453, "ethereum": 1, "arbitrum": 42161, "polygon": 137, "optimism": 10, "avalanche": 43114, "bsc": 56})
	cfg := tokens.DefaultConfig()
	cfg.RPCEthereum, cfg.RPCArbitrum, cfg.RPCBase, cfg.RPCPolygon = up.EVM["ethereum"].URL, up.EVM["arbitrum"].URL, up.EVM["base"].URL, up.EVM["polygon"].URL
	cfg.RPCOptimism, cfg.RPCAvalanche, cfg.RPCBSC, cfg.SolanaRPC = up.EVM["optimism"].URL, up.EVM["avalanche"].URL, up.EVM["bsc"].URL, up.Solana.URL
	cfg.CoinGeckoURL, cfg.DefiLlamaURL, cfg.JupiterURL = up.CoinGecko.URL+"/api/v3", up.DefiLlama.URL, up.Jupiter.URL
	tok, err := tokens.NewService(cfg, service.Deps{Store: storetest.Open(t, "sqlite"), Now: func() time.Time { return tokenstest.T0 }})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	wallet, other := [20]byte{0xaa}, [20]byte{0x0e}
	usdc := "0x833589fcd6edb6e08f4c7c32d4f71b54bda02913"
	views := []ProposalView{
		{Chain: "base", FeeNative: "1000000000000000", Effects: []EffectView{{Kind: evm.EffectTransfer, Token: usdc, Amount: "1500000", Recipient: hexAddr(other)}}},
		{Chain: "base", FeeNative: "0", Effects: []EffectView{{Kind: evm.EffectApprove, Token: usdc, Amount: "1", Unlimited: true, Recipient: hexAddr(other)}}},
		{Chain: "base", FeeNative: "0", Effects: []EffectView{{Kind: evm.EffectTransferFrom, Token: usdc, Amount: "9000000", Owner: hexAddr(other), Recipient: hexAddr(wallet)}}},
		{Chain: "base", FeeNative: "0", Effects: []EffectView{{Kind: evm.EffectNative, Native: "1000000000000000", Recipient: hexAddr(other)}}},
	}
	p, err := priceProposals(ctx, tok, wallet, "", views)
	if err != nil {
		t.Fatal(err)
	}
	// 1.5 USDC at 0.999812 and 0.001 ETH at 3456.78; the fee 0.001 ETH.
	if p.ValueMicro != 1_499_718+3_456_780 || p.GasMicro != 3_456_780 || len(p.Unpriced) != 1 || !strings.Contains(p.Unpriced[0], "unlimited approval") {
		t.Fatalf("priced %+v", p)
	}
	spam := []ProposalView{{Chain: "base", FeeNative: "0", Effects: []EffectView{{Kind: evm.EffectTransfer, Token: "0x13B4eF8a929763838eEbaE4724417a9dE46CA7C4", Amount: "1"}}}}
	var te *tools.Error
	if _, err := priceProposals(ctx, tok, wallet, "", spam); !errors.As(err, &te) || te.Code != tools.CodeBadInput {
		t.Fatalf("a spam token: %v", err)
	}
}

// The second confirmation carries each decoded effect and the priced total in its details and
// says them line by line to the human: an unlimited approval in capitals, the unpriced named.
func TestProposalConfirmation(t *testing.T) {
	other := hexAddr([20]byte{0x0e})
	usdc := "0x833589fcd6edb6e08f4c7c32d4f71b54bda02913"
	views := []ProposalView{
		{Chain: "base", FeeNative: "1", Effects: []EffectView{{Kind: evm.EffectTransfer, Token: usdc, Amount: "1500000", Recipient: other, Contract: usdc}}},
		{Chain: "base", FeeNative: "1", Effects: []EffectView{{Kind: evm.EffectApprove, Token: usdc, Amount: "1", Unlimited: true, Recipient: other, Contract: usdc}}},
		{Chain: "base", FeeNative: "1", Effects: []EffectView{{Kind: evm.EffectCall, Contract: other, Selector: "0xdeadbeef", Native: "5"}}},
	}
	expires := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
	e := proposalConfirmation("@demo_send", "SEND", "req.p", views, Priced{ValueMicro: 1_499_718, GasMicro: 2_000, Unpriced: []string{"an unlimited approval"}}, expires)
	if e.Code != tools.CodeConfirmationRequired || e.Continue == nil || e.Continue.RequestID != "req.p" || !e.Continue.ExpiresAt.Equal(expires) {
		t.Fatalf("%+v", e)
	}
	raw, err := json.Marshal(e.Details)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		RequestID    string         `json:"requestId"`
		ValueUsd     json.Number    `json:"valueUsd"`
		GasUsd       json.Number    `json:"gasUsd"`
		Transactions []ProposalView `json:"transactions"`
	}
	if err := json.Unmarshal(raw, &d); err != nil || d.RequestID != "req.p" || d.ValueUsd != "1.499718" || d.GasUsd != "0.002" ||
		len(d.Transactions) != 3 || !d.Transactions[1].Effects[0].Unlimited || d.Transactions[0].Effects[0].Amount != "1500000" {
		t.Fatalf("details %s (%v)", raw, err)
	}
	summary := strings.Join(e.Continue.Summary, "\n")
	for _, want := range []string{
		"send 1500000 units of token " + usdc + " to " + other,
		"let " + other + " spend UNLIMITED amounts of token " + usdc,
		"call " + other + " (function 0xdeadbeef), sending 5 of the coin with it",
		"Worth 1.499718 USD, fees about 0.002 USD.",
		"Not priced: an unlimited approval",
	} {
		if !strings.Contains(summary, want) {
			t.Errorf("the summary does not say %q:\n%s", want, summary)
		}
	}
}
