package dispatch_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/switchboard-hq/switchboard/cmd/switchboard/app"
	"github.com/switchboard-hq/switchboard/cmd/switchboard/app/apptest"
	"github.com/switchboard-hq/switchboard/contracts"
	"github.com/switchboard-hq/switchboard/contracts/anviltest"
	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/accounts"
	"github.com/switchboard-hq/switchboard/store/flatpay"
	"github.com/switchboard-hq/switchboard/store/payouts"
	"github.com/switchboard-hq/switchboard/tools/payments"
)

// flatWorld is a world whose flat-fee network is a real anvil with the contracts deployed.
func flatWorld(t *testing.T) (*world, *anviltest.Chain) {
	t.Helper()
	chain := anviltest.Start(t)
	return flatWorldVia(t, chain, chain.URL), chain
}

// flatWorldVia is flatWorld with Switchboard reaching the node at rpcURL.
func flatWorldVia(t *testing.T, chain *anviltest.Chain, rpcURL string) *world {
	t.Helper()
	return newWorld(t, "sqlite", func(c *apptest.Config) {
		c.FlatFee = app.FlatFeeConfig{RPCURL: rpcURL, ChainID: anviltest.ChainID, Token: chain.Token.Hex(), Payer: chain.Payer.Hex(),
			RelayerKey: hexutil.Encode(crypto.FromECDSA(chain.Relayer)), Treasury: chain.Treasury.Hex(), Confirmations: 1, PlatformUSD: "0.01", PayoutInterval: "0"}
	})
}

// partnerWallet is where the flat-fee partner is paid.
var partnerWallet = common.HexToAddress("0x00000000000000000000000000000000000A11CE")

// quote asks for a flat-fee call and returns the PAYMENT_REQUIRED quote.
func (w *world) quote(t *testing.T, message string) (map[string]any, *http.Response) {
	t.Helper()
	status, hdr, out := apptest.Do(t, "POST", w.env.URL+"/v1/invoke", w.caller, map[string]any{"message": message})
	if status != 402 || errCode(out) != "PAYMENT_REQUIRED" {
		t.Fatalf("flat-fee call without payment: %d %v", status, out)
	}
	return details(out)["quote"].(map[string]any), &http.Response{Header: hdr}
}

// sign signs a quote as `from`'s key would, with the given overrides of the signed fields.
func sign(t *testing.T, chain *anviltest.Chain, q map[string]any, key *ecdsa.PrivateKey, tweak func(f *signed)) map[string]any {
	t.Helper()
	f := signed{primary: contracts.ReceiveWithAuthorization, chainID: anviltest.ChainID, from: crypto.PubkeyToAddress(key.PublicKey), to: common.HexToAddress(q["payTo"].(string)),
		value: q["amount"].(string), after: int64(q["validAfter"].(float64)), before: int64(q["validBefore"].(float64)), nonce: q["nonce"].(string), key: key}
	if tweak != nil {
		tweak(&f)
	}
	value, _ := new(big.Int).SetString(f.value, 10)
	var nonce [32]byte
	copy(nonce[:], common.FromHex(f.nonce))
	td := contracts.TypedData(f.primary, f.chainID, chain.Token, f.from, f.to, value, f.after, f.before, nonce)
	sig, err := contracts.Sign(td, f.key)
	if err != nil {
		t.Fatal(err)
	}
	return map[string]any{"signature": hexutil.Encode(sig), "primaryType": f.primary, "authorization": map[string]any{
		"from": f.from.Hex(), "to": f.to.Hex(), "value": f.value, "validAfter": fmt.Sprint(f.after), "validBefore": fmt.Sprint(f.before), "nonce": f.nonce}}
}

type signed struct {
	primary       string
	chainID       int64
	from, to      common.Address
	value         string
	after, before int64
	nonce         string
	key           *ecdsa.PrivateKey
}

// TestFlatFeeEndToEnd: a flat-fee intent against a real partner, paid on a real chain. The
// quote, the caller's signature with a real key, escrow, the partner called with {query}, the
// split landing on chain; the failure case refunded on chain; x402's headers on REST.
func TestFlatFeeEndToEnd(t *testing.T) {
	w, chain := flatWorld(t)
	w.publish(t, "@flatweather", "/free", map[string]any{"feeRate": 1.2, "feeRateUnit": "flat_usdc", "payoutAddresses": map[string]string{"evm": partnerWallet.Hex()}})
	w.publish(t, "@flatfail", "/fail", map[string]any{"feeRate": 1.2, "feeRateUnit": "flat_usdc", "payoutAddresses": map[string]string{"evm": partnerWallet.Hex()}})
	payer := chain.NewKey(t)
	from := crypto.PubkeyToAddress(payer.PublicKey)
	chain.Mint(t, from, 5_000_000)
	credit := w.credit(t)

	q, resp := w.quote(t, "@flatweather forecast for Lisbon")
	if q["amount"] != "1210000" || q["network"] != "eip155:31337" || q["payTo"] != chain.Payer.Hex() ||
		q["split"].(map[string]any)["partner"] != "1200000" || q["split"].(map[string]any)["platform"] != "10000" {
		t.Fatalf("quote: %v", q)
	}
	// x402 version 2's PAYMENT-REQUIRED header carries the same requirements.
	raw, err := base64.StdEncoding.DecodeString(resp.Header.Get("PAYMENT-REQUIRED"))
	var pr struct {
		X402Version int `json:"x402Version"`
		Accepts     []struct {
			Scheme, Network, Amount, Asset, PayTo string
		} `json:"accepts"`
	}
	if err != nil || json.Unmarshal(raw, &pr) != nil || pr.X402Version != 2 || len(pr.Accepts) != 1 || pr.Accepts[0].Amount != "1210000" ||
		pr.Accepts[0].Scheme != "exact" || pr.Accepts[0].PayTo != chain.Payer.Hex() {
		t.Fatalf("PAYMENT-REQUIRED header: %s %v", raw, err)
	}
	if w.hits("/free") != 0 {
		t.Fatal("a quote dispatched")
	}

	// Paid: escrowed, dispatched with {query}, settled: the split lands on chain.
	status, hdr, out := apptest.Do(t, "POST", w.env.URL+"/v1/invoke", w.caller, map[string]any{"message": "@flatweather forecast for Lisbon",
		"confirmRequestId": q["requestId"], "payment": sign(t, chain, q, payer, nil)})
	if status != 200 || out["success"] != true {
		t.Fatalf("paid call: %d %v", status, out)
	}
	pay := out["payment"].(map[string]any)
	if pay["state"] != "settled" || pay["payTx"] == "" || pay["settleTx"] == "" || pay["payer"] != from.Hex() {
		t.Fatalf("payment: %v", pay)
	}
	if got := string(w.seen["/free"][0].Args); got != `{"query":"forecast for Lisbon"}` {
		t.Fatalf("the partner got %s", got)
	}
	if chain.Balance(t, partnerWallet) != 1_200_000 || chain.Balance(t, chain.Treasury) != 10_000 || chain.Balance(t, from) != 5_000_000-1_210_000 || chain.Balance(t, chain.Payer) != 0 {
		t.Fatalf("on chain: partner %d, treasury %d, payer %d, escrow %d", chain.Balance(t, partnerWallet), chain.Balance(t, chain.Treasury), chain.Balance(t, from), chain.Balance(t, chain.Payer))
	}
	if h := hdr.Get("PAYMENT-RESPONSE"); h == "" {
		t.Fatal("no PAYMENT-RESPONSE header")
	}
	if w.credit(t) != credit {
		t.Fatalf("a flat-fee call took %d of credit", credit-w.credit(t))
	}
	w.ledgerOK(t)
	// The settled quote replayed: the stored outcome, no second payment.
	status, _, again := apptest.Do(t, "POST", w.env.URL+"/v1/invoke", w.caller, map[string]any{"message": "@flatweather forecast for Lisbon",
		"confirmRequestId": q["requestId"], "payment": sign(t, chain, q, payer, nil)})
	if status != 200 || again["payment"].(map[string]any)["state"] != "settled" || w.hits("/free") != 1 || chain.Balance(t, from) != 5_000_000-1_210_000 {
		t.Fatalf("replayed settled quote: %d %v", status, again)
	}

	// The partner answers success false: relayed, and the escrow refunded on chain. The
	// payment comes through x402's PAYMENT-SIGNATURE header this time (TransferWithAuthorization).
	// As a stock x402 client signs it: its own random nonce, validAfter 0.
	_, resp = w.quote(t, "@flatfail anything")
	raw, _ = base64.StdEncoding.DecodeString(resp.Header.Get("PAYMENT-REQUIRED"))
	var required struct {
		Resource struct{ URL string } `json:"resource"`
		Accepts  []map[string]any     `json:"accepts"`
	}
	if err := json.Unmarshal(raw, &required); err != nil || !strings.HasPrefix(required.Resource.URL, "http") {
		t.Fatalf("PAYMENT-REQUIRED: %s %v", raw, err)
	}
	accepted := required.Accepts[0]
	q = map[string]any{"payTo": accepted["payTo"], "amount": accepted["amount"], "validAfter": 0.0, "validBefore": 0.0, "nonce": ""}
	payload := sign(t, chain, q, payer, func(f *signed) {
		f.primary, f.after, f.before, f.nonce = contracts.TransferWithAuthorization, 0, time.Now().Unix()+int64(accepted["maxTimeoutSeconds"].(float64)), hexutil.Encode(crypto.Keccak256([]byte("random")))
	})
	header, _ := json.Marshal(map[string]any{"x402Version": 2, "resource": required.Resource, "accepted": accepted,
		"payload": map[string]any{"signature": payload["signature"], "authorization": payload["authorization"]}})
	status, hdr, out = apptest.DoWith(t, "POST", w.env.URL+"/v1/invoke", w.caller, map[string]any{"message": "@flatfail anything"},
		map[string]string{"PAYMENT-SIGNATURE": base64.StdEncoding.EncodeToString(header)})
	if status != 200 || out["success"] != false || out["payment"].(map[string]any)["state"] != "refunded" || out["payment"].(map[string]any)["refundTx"] == "" {
		t.Fatalf("failed partner: %d %v", status, out)
	}
	sr, _ := base64.StdEncoding.DecodeString(hdr.Get("PAYMENT-RESPONSE"))
	var settlement map[string]any
	if json.Unmarshal(sr, &settlement) != nil || settlement["success"] != false || settlement["transaction"] != out["payment"].(map[string]any)["refundTx"] {
		t.Fatalf("PAYMENT-RESPONSE on a refund: %s", sr)
	}
	if chain.Balance(t, from) != 5_000_000-1_210_000 || chain.Balance(t, chain.Payer) != 0 {
		t.Fatalf("after the refund the payer has %d", chain.Balance(t, from))
	}
	w.ledgerOK(t)
}

// Every bad payment is answered clearly, with nothing paid and nothing dispatched.
func TestFlatFeeBadPayments(t *testing.T) {
	w, chain := flatWorld(t)
	w.publish(t, "@flatbad", "/free", map[string]any{"feeRate": 0.5, "feeRateUnit": "flat_stablecoin", "payoutAddresses": map[string]string{"evm": partnerWallet.Hex()}})
	payer := chain.NewKey(t)
	chain.Mint(t, crypto.PubkeyToAddress(payer.PublicKey), 1_000_000)
	broke := chain.NewKey(t)
	q, _ := w.quote(t, "@flatbad hi")
	now, _ := chain.Client.Now(context.Background())
	for _, tc := range []struct {
		name   string
		key    *ecdsa.PrivateKey
		tweak  func(*signed)
		status int
		want   string
		reason string // x402's invalidReason
	}{
		{"wrong signer", payer, func(f *signed) { f.key = broke }, 400, "not by from", "invalid_exact_evm_payload_signature"},
		{"wrong amount", payer, func(f *signed) { f.value = "1" }, 400, "not the quoted", "invalid_exact_evm_payload_authorization_value_mismatch"},
		{"wrong chain id", payer, func(f *signed) { f.chainID = 1 }, 400, "not by from", "invalid_exact_evm_payload_signature"},
		{"wrong recipient", payer, func(f *signed) { f.to = partnerWallet }, 400, "not the payer contract", "invalid_exact_evm_payload_recipient_mismatch"},
		{"not yet valid", payer, func(f *signed) { f.after = now.Unix() + 3600 }, 400, "not valid yet", "invalid_exact_evm_payload_authorization_valid_after"},
		{"expiring", payer, func(f *signed) { f.before = now.Unix() + 5 }, 409, "too soon", "invalid_exact_evm_payload_authorization_valid_before"},
		{"a window longer than maxTimeoutSeconds", payer, func(f *signed) { f.before = now.Unix() + 3*3600 }, 400, "further than maxTimeoutSeconds", "invalid_exact_evm_payload_authorization_valid_before"},
		{"insufficient balance", broke, nil, 402, "holds 0", "insufficient_funds"},
	} {
		status, out := w.invoke(t, w.caller, map[string]any{"message": "@flatbad hi", "confirmRequestId": q["requestId"], "payment": sign(t, chain, q, tc.key, tc.tweak)})
		if status != tc.status || !strings.Contains(fmt.Sprint(out), tc.want) || details(out)["invalidReason"] != tc.reason {
			t.Errorf("%s: %d %v, want %d saying %q (%s)", tc.name, status, out, tc.status, tc.want, tc.reason)
		}
	}
	// The x402 requirement echoed back (accepted) must be the one offered: network, token, amount.
	for _, tc := range []struct {
		name     string
		accepted map[string]any
		reason   string
	}{
		{"another network", map[string]any{"scheme": "exact", "network": "eip155:84532"}, "invalid_network"},
		{"another token", map[string]any{"scheme": "exact", "asset": partnerWallet.Hex()}, "invalid_payment_requirements"},
		{"another amount", map[string]any{"scheme": "exact", "amount": "1"}, "invalid_exact_evm_payload_authorization_value_mismatch"},
		{"another scheme", map[string]any{"scheme": "upto"}, "invalid_scheme"},
		{"another quote's requirement", map[string]any{"scheme": "exact", "extra": map[string]any{"requestId": "0190f1c2-0000-7000-8000-000000000000"}}, "invalid_payment_requirements"},
	} {
		p := sign(t, chain, q, payer, func(f *signed) { f.primary = contracts.TransferWithAuthorization })
		p["accepted"] = tc.accepted
		status, out := w.invoke(t, w.caller, map[string]any{"message": "@flatbad hi", "confirmRequestId": q["requestId"], "payment": p})
		if status != 400 || details(out)["invalidReason"] != tc.reason {
			t.Errorf("%s: %d %v, want 400 %s", tc.name, status, out, tc.reason)
		}
	}
	// The paid retry must be the quoted request.
	if status, out := w.invoke(t, w.caller, map[string]any{"message": "@flatbad something else", "confirmRequestId": q["requestId"], "payment": sign(t, chain, q, payer, nil)}); status != 409 || !strings.Contains(fmt.Sprint(out), "differs from the one quoted") {
		t.Errorf("another message: %d %v", status, out)
	}
	if status, out := w.invoke(t, w.caller, map[string]any{"message": "@flatbad hi", "confirmRequestId": q["requestId"]}); status != 402 {
		t.Errorf("confirming without a payment: %d %v", status, out)
	}
	// The quote's validity window passes on chain: a new quote is needed.
	chain.Warp(t, 11*time.Minute)
	if status, out := w.invoke(t, w.caller, map[string]any{"message": "@flatbad hi", "confirmRequestId": q["requestId"], "payment": sign(t, chain, q, payer, func(f *signed) {
		f.after, f.before = 0, now.Unix()+11*60+300
	})}); status != 409 || !strings.Contains(fmt.Sprint(out), "new quote") {
		t.Errorf("expired quote: %d %v", status, out)
	}
	if w.hits("/free") != 0 || chain.Balance(t, chain.Payer) != 0 || chain.Balance(t, crypto.PubkeyToAddress(payer.PublicKey)) != 1_000_000 {
		t.Fatal("a bad payment dispatched or moved money")
	}
	// Nonce reuse: an authorization that paid one quote cannot pay another.
	q1, _ := w.quote(t, "@flatbad one")
	p1 := sign(t, chain, q1, payer, func(f *signed) {
		f.primary, f.nonce = contracts.TransferWithAuthorization, hexutil.Encode(bytes.Repeat([]byte{9}, 32))
	})
	if status, out := w.invoke(t, w.caller, map[string]any{"message": "@flatbad one", "confirmRequestId": q1["requestId"], "payment": p1}); status != 200 {
		t.Fatalf("first use of the nonce: %d %v", status, out)
	}
	q2, _ := w.quote(t, "@flatbad two")
	if status, out := w.invoke(t, w.caller, map[string]any{"message": "@flatbad two", "confirmRequestId": q2["requestId"], "payment": p1}); status != 409 || details(out)["invalidReason"] != "invalid_exact_evm_nonce_already_used" {
		t.Errorf("the nonce reused for another quote: %d %v", status, out)
	}
	if w.hits("/free") != 1 || chain.Balance(t, crypto.PubkeyToAddress(payer.PublicKey)) != 1_000_000-510_000 {
		t.Fatalf("after the reuse: %d calls, payer %d", w.hits("/free"), chain.Balance(t, crypto.PubkeyToAddress(payer.PublicKey)))
	}
	w.ledgerOK(t)
}

// frontRun submits a signed TransferWithAuthorization to the token directly, as anyone who
// sees it may.
func frontRun(t *testing.T, chain *anviltest.Chain, p map[string]any) {
	t.Helper()
	auth := p["authorization"].(map[string]any)
	sig := common.FromHex(p["signature"].(string))
	var nonce, r, s [32]byte
	copy(nonce[:], common.FromHex(auth["nonce"].(string)))
	copy(r[:], sig[:32])
	copy(s[:], sig[32:64])
	value, _ := new(big.Int).SetString(auth["value"].(string), 10)
	after, _ := new(big.Int).SetString(auth["validAfter"].(string), 10)
	before, _ := new(big.Int).SetString(auth["validBefore"].(string), 10)
	stranger, err := contracts.Dial(context.Background(), chain.URL, anviltest.ChainID, chain.NewFundedKey(t), 1)
	if err != nil {
		t.Fatal(err)
	}
	defer stranger.Close()
	if _, err := stranger.Transact(context.Background(), chain.Token, contracts.TestUSDC, "transferWithAuthorization",
		common.HexToAddress(auth["from"].(string)), common.HexToAddress(auth["to"].(string)), value, after, before, nonce, sig[64], r, s); err != nil {
		t.Fatal(err)
	}
}

// A stock x402 TransferWithAuthorization can be submitted to the token by anyone. Submitted
// before Switchboard does, its amount lands in the payer contract outside any escrow: the paid
// retry adopts it into the quote's escrow and the call goes ahead (settled on success,
// refunded on a partner failure); one whose retry never comes is refunded by the sweeper.
func TestFlatFeeFrontRunTransfer(t *testing.T) {
	w, chain := flatWorld(t)
	w.publish(t, "@flatfront", "/free", map[string]any{"feeRate": 0.5, "feeRateUnit": "flat_usdc", "payoutAddresses": map[string]string{"evm": partnerWallet.Hex()}})
	w.publish(t, "@flatfrontfail", "/fail", map[string]any{"feeRate": 0.5, "feeRateUnit": "flat_usdc", "payoutAddresses": map[string]string{"evm": partnerWallet.Hex()}})
	payer := chain.NewKey(t)
	from := crypto.PubkeyToAddress(payer.PublicKey)
	chain.Mint(t, from, 2_000_000)
	random := func(b byte) func(f *signed) {
		return func(f *signed) {
			f.primary, f.after, f.nonce = contracts.TransferWithAuthorization, 0, hexutil.Encode(bytes.Repeat([]byte{b}, 32))
		}
	}

	// Front-run, then the retry: dispatched and settled, the split on chain.
	q, _ := w.quote(t, "@flatfront hi")
	p := sign(t, chain, q, payer, random(1))
	frontRun(t, chain, p)
	if chain.Balance(t, chain.Payer) != 510_000 {
		t.Fatalf("the front-run transfer left %d in the payer contract", chain.Balance(t, chain.Payer))
	}
	status, out := w.invoke(t, w.caller, map[string]any{"message": "@flatfront hi", "confirmRequestId": q["requestId"], "payment": p})
	if status != 200 || out["success"] != true || out["payment"].(map[string]any)["state"] != "settled" || w.hits("/free") != 1 {
		t.Fatalf("the retry after a front-run: %d %v", status, out)
	}
	if chain.Balance(t, partnerWallet) != 500_000 || chain.Balance(t, chain.Payer) != 0 || chain.Balance(t, from) != 2_000_000-510_000 {
		t.Fatalf("on chain: partner %d, contract %d, payer %d", chain.Balance(t, partnerWallet), chain.Balance(t, chain.Payer), chain.Balance(t, from))
	}

	// Front-run, the partner fails: refunded on chain.
	q, _ = w.quote(t, "@flatfrontfail hi")
	p = sign(t, chain, q, payer, random(2))
	frontRun(t, chain, p)
	status, out = w.invoke(t, w.caller, map[string]any{"message": "@flatfrontfail hi", "confirmRequestId": q["requestId"], "payment": p})
	if status != 200 || out["success"] != false || out["payment"].(map[string]any)["state"] != "refunded" {
		t.Fatalf("a failed partner after a front-run: %d %v", status, out)
	}
	if chain.Balance(t, chain.Payer) != 0 || chain.Balance(t, from) != 2_000_000-510_000 {
		t.Fatalf("after the refund: contract %d, payer %d", chain.Balance(t, chain.Payer), chain.Balance(t, from))
	}

	// Front-run, and the retry never comes: the sweeper refunds it once its grace has passed.
	q, _ = w.quote(t, "@flatfront bye")
	frontRun(t, chain, sign(t, chain, q, payer, random(3)))
	if _, _, err := w.env.App.Sweep(context.Background()); err != nil {
		t.Fatal(err)
	}
	if chain.Balance(t, chain.Payer) != 510_000 {
		t.Fatal("refunded before its retry could come")
	}
	chain.Warp(t, 6*time.Minute)
	for range 2 { // the second sweep finds nothing
		if _, _, err := w.env.App.Sweep(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if chain.Balance(t, chain.Payer) != 0 || chain.Balance(t, from) != 2_000_000-510_000 {
		t.Fatalf("after the sweep: contract %d, payer %d", chain.Balance(t, chain.Payer), chain.Balance(t, from))
	}
	w.ledgerOK(t)
}

// The process dies between payment and dispatch: the sweeper refunds the escrow on chain and
// ends the call, exactly once; asking again answers that truth.
func TestFlatFeePaidButNeverDispatched(t *testing.T) {
	w, chain := flatWorld(t)
	w.publish(t, "@flatorphan", "/free", map[string]any{"feeRate": 0.3, "feeRateUnit": "flat_usdc", "payoutAddresses": map[string]string{"evm": partnerWallet.Hex()}})
	payer := chain.NewKey(t)
	from := crypto.PubkeyToAddress(payer.PublicKey)
	chain.Mint(t, from, 1_000_000)
	q, _ := w.quote(t, "@flatorphan hi")
	rid := q["requestId"].(string)
	// Collected (escrowed) as the dead process did, then nothing.
	raw, _ := json.Marshal(sign(t, chain, q, payer, nil))
	var pay payments.Payment
	if err := json.Unmarshal(raw, &pay); err != nil {
		t.Fatal(err)
	}
	if _, err := w.env.App.Payments.Collect(context.Background(), rid, &pay, nil); err != nil {
		t.Fatal(err)
	}
	if chain.Balance(t, chain.Payer) != 310_000 {
		t.Fatalf("escrow holds %d", chain.Balance(t, chain.Payer))
	}
	w.env.Clock.Advance(time.Minute)
	for range 2 { // twice: the second sweep finds nothing to do
		if _, _, err := w.env.App.Sweep(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if chain.Balance(t, from) != 1_000_000 || chain.Balance(t, chain.Payer) != 0 {
		t.Fatalf("after the sweep: payer %d, escrow %d", chain.Balance(t, from), chain.Balance(t, chain.Payer))
	}
	got, err := flatpay.New(w.settledStore(t)).Get(context.Background(), rid)
	if err != nil || got.State != flatpay.Refunded {
		t.Fatalf("payment: %+v %v", got, err)
	}
	status, out := w.invoke(t, w.caller, map[string]any{"message": "@flatorphan hi", "confirmRequestId": rid})
	if status != 503 || !strings.Contains(fmt.Sprint(out), "never dispatched") || w.hits("/free") != 0 {
		t.Fatalf("asking again: %d %v", status, out)
	}
	w.ledgerOK(t)
}

// A payout run pays partners' accrued per-call fees in the stablecoin, once.
func TestPayouts(t *testing.T) {
	w, chain := flatWorld(t)
	w.publish(t, "@percall", "/cost", map[string]any{"payoutAddresses": map[string]string{"evm": partnerWallet.Hex()}}) // 0.001 per call
	for range 3 {
		if status, out := w.invoke(t, w.caller, map[string]any{"message": "@percall go"}); status != 200 {
			t.Fatalf("invoke: %d %v", status, out)
		}
	}
	chain.Mint(t, chain.Client.From(), 1_000_000) // the relayer's payout float
	// A payout pays what the ledger owes: the calls' fees are posted when the caller's budget
	// lease is settled (its return, here; within its idle time otherwise).
	if err := w.env.App.Settled(context.Background()); err != nil {
		t.Fatal(err)
	}
	paid, err := w.env.App.Payments.Payouts(context.Background())
	if err != nil || len(paid) != 1 || paid[0].AmountAtomic != 3_000 || paid[0].State != payouts.Done || paid[0].Tx == "" {
		t.Fatalf("payouts: %+v %v", paid, err)
	}
	if chain.Balance(t, partnerWallet) != 3_000 {
		t.Fatalf("the partner holds %d on chain, want 3000", chain.Balance(t, partnerWallet))
	}
	if again, err := w.env.App.Payments.Payouts(context.Background()); err != nil || len(again) != 0 {
		t.Fatalf("a second run paid %+v %v", again, err)
	}
	// The partner's backend hears of it once: payout.settled, written with the payout's record.
	var settled []*store.WebhookEvent
	if err := w.env.App.Store.DB().NewSelect().Model(&settled).Where("type = 'payout.settled'").Scan(context.Background()); err != nil ||
		len(settled) != 1 || !strings.Contains(settled[0].Body, paid[0].Tx) || !strings.Contains(settled[0].Body, `"amountAtomic":"3000"`) {
		t.Fatalf("payout.settled events: %+v %v", settled, err)
	}
	w.ledgerOK(t)
}

// The embedded wallet pays when the account turned signing on, and never otherwise.
func TestFlatFeePaidWithTheEmbeddedWallet(t *testing.T) {
	w, chain := flatWorld(t)
	w.publish(t, "@flatwallet", "/free", map[string]any{"feeRate": 0.25, "feeRateUnit": "flat_usdc", "payoutAddresses": map[string]string{"evm": partnerWallet.Hex()}})
	ws, err := accounts.New(w.settledStore(t)).Wallets(context.Background(), w.callerID)
	if err != nil {
		t.Fatal(err)
	}
	var wallet common.Address
	for _, x := range ws {
		if x.Family == accounts.FamilyEVM {
			wallet = common.HexToAddress(x.Address)
		}
	}
	chain.Mint(t, wallet, 1_000_000)
	q, _ := w.quote(t, "@flatwallet hi")
	status, out := w.invoke(t, w.caller, map[string]any{"message": "@flatwallet hi", "confirmRequestId": q["requestId"], "payWithWallet": true})
	if status != 403 || !strings.Contains(fmt.Sprint(out), "portal's settings") || chain.Balance(t, wallet) != 1_000_000 {
		t.Fatalf("signing off: %d %v", status, out)
	}
	if err := accounts.New(w.settledStore(t)).SetSigning(context.Background(), w.callerID, true); err != nil {
		t.Fatal(err)
	}
	status, out = w.invoke(t, w.caller, map[string]any{"message": "@flatwallet hi", "confirmRequestId": q["requestId"], "payWithWallet": true})
	if status != 200 || out["payment"].(map[string]any)["state"] != "settled" || out["payment"].(map[string]any)["payer"] != wallet.Hex() {
		t.Fatalf("signing on: %d %v", status, out)
	}
	if chain.Balance(t, wallet) != 1_000_000-260_000 || chain.Balance(t, partnerWallet) != 250_000 {
		t.Fatalf("on chain: wallet %d, partner %d", chain.Balance(t, wallet), chain.Balance(t, partnerWallet))
	}
	w.ledgerOK(t)
}

// The node's answer to the payment's submission is lost (the transaction went through): the
// call fails with UNAVAILABLE, and the retry with the same payment finds it in escrow and goes
// on; the payer pays once.
func TestFlatFeeSubmissionAnswerLost(t *testing.T) {
	chain := anviltest.Start(t)
	var lose atomic.Bool
	target, _ := url.Parse(chain.URL)
	proxy := httputil.NewSingleHostReverseProxy(target)
	front := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if lose.Load() && bytes.Contains(body, []byte("eth_sendRawTransaction")) {
			lose.Store(false)
			rec := httptest.NewRecorder()
			proxy.ServeHTTP(rec, r)                                            // the node gets it...
			http.Error(rw, "upstream connection reset", http.StatusBadGateway) // ...the answer is lost
			return
		}
		proxy.ServeHTTP(rw, r)
	}))
	defer front.Close()
	w := flatWorldVia(t, chain, front.URL)
	w.publish(t, "@flatlost", "/free", map[string]any{"feeRate": 0.4, "feeRateUnit": "flat_usdc", "payoutAddresses": map[string]string{"evm": partnerWallet.Hex()}})
	payer := chain.NewKey(t)
	from := crypto.PubkeyToAddress(payer.PublicKey)
	chain.Mint(t, from, 1_000_000)
	q, _ := w.quote(t, "@flatlost hi")
	pay := sign(t, chain, q, payer, nil)
	lose.Store(true)
	status, out := w.invoke(t, w.caller, map[string]any{"message": "@flatlost hi", "confirmRequestId": q["requestId"], "payment": pay})
	if status != 503 || !strings.Contains(fmt.Sprint(out), "same payment") || w.hits("/free") != 0 {
		t.Fatalf("lost answer: %d %v", status, out)
	}
	for i := 0; chain.Balance(t, chain.Payer) != 410_000; i++ { // mined a moment after it was sent
		if i == 50 {
			t.Fatalf("the submission did not reach the chain (escrow %d)", chain.Balance(t, chain.Payer))
		}
		time.Sleep(20 * time.Millisecond)
	}
	status, out = w.invoke(t, w.caller, map[string]any{"message": "@flatlost hi", "confirmRequestId": q["requestId"], "payment": pay})
	if status != 200 || out["payment"].(map[string]any)["state"] != "settled" || w.hits("/free") != 1 {
		t.Fatalf("retry: %d %v", status, out)
	}
	if chain.Balance(t, from) != 1_000_000-410_000 || chain.Balance(t, partnerWallet) != 400_000 {
		t.Fatalf("paid twice? payer %d, partner %d", chain.Balance(t, from), chain.Balance(t, partnerWallet))
	}
	w.ledgerOK(t)
}

// x402's MCP transport: the unpaid call is an error result whose structuredContent (and first
// text) is the PaymentRequired; a retry with _meta["x402/payment"] pays as a stock client
// signs (TransferWithAuthorization, its own nonce, validAfter 0), and the result carries
// _meta["x402/payment-response"], on success and on a refund.
func TestFlatFeeOverMCP(t *testing.T) {
	w, chain := flatWorld(t)
	w.publish(t, "@mcpflat", "/free", map[string]any{"feeRate": 0.2, "feeRateUnit": "flat_usdc", "payoutAddresses": map[string]string{"evm": partnerWallet.Hex()}})
	w.publish(t, "@mcpflatfail", "/fail", map[string]any{"feeRate": 0.2, "feeRateUnit": "flat_usdc", "payoutAddresses": map[string]string{"evm": partnerWallet.Hex()}})
	payer := chain.NewKey(t)
	from := crypto.PubkeyToAddress(payer.PublicKey)
	chain.Mint(t, from, 1_000_000)
	cs := w.env.MCP(t, w.caller)
	ctx := context.Background()

	pay := func(message string, nonce byte) (*mcp.CallToolResult, map[string]any) {
		t.Helper()
		args := map[string]any{"message": message}
		first, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "invoke_partner_message", Arguments: args})
		if err != nil || !first.IsError {
			t.Fatalf("unpaid call: %+v %v", first, err)
		}
		raw, _ := json.Marshal(first.StructuredContent)
		var pr struct {
			X402Version int              `json:"x402Version"`
			Resource    map[string]any   `json:"resource"`
			Accepts     []map[string]any `json:"accepts"`
			Extensions  struct {
				Bazaar struct {
					Info struct {
						Input map[string]any `json:"input"`
					} `json:"info"`
				} `json:"bazaar"`
			} `json:"extensions"`
		}
		if json.Unmarshal(raw, &pr) != nil || pr.X402Version != 2 || len(pr.Accepts) != 1 || pr.Extensions.Bazaar.Info.Input["tool"] != "invoke_partner_message" ||
			!strings.HasSuffix(pr.Resource["url"].(string), "/mcp") {
			t.Fatalf("structuredContent: %s", raw)
		}
		if text := first.Content[0].(*mcp.TextContent).Text; text != string(raw) {
			t.Fatalf("content[0].text %s, want the PaymentRequired %s", text, raw)
		}
		accepted := pr.Accepts[0]
		q := map[string]any{"payTo": accepted["payTo"], "amount": accepted["amount"], "validAfter": 0.0, "validBefore": 0.0, "nonce": ""}
		p := sign(t, chain, q, payer, func(f *signed) {
			f.primary, f.after, f.before = contracts.TransferWithAuthorization, 0, time.Now().Unix()+int64(accepted["maxTimeoutSeconds"].(float64))
			f.nonce = hexutil.Encode(bytes.Repeat([]byte{nonce}, 32))
		})
		payload := map[string]any{"x402Version": 2, "resource": pr.Resource, "accepted": accepted,
			"payload": map[string]any{"signature": p["signature"], "authorization": p["authorization"]}}
		paid, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "invoke_partner_message", Arguments: args, Meta: mcp.Meta{"x402/payment": payload}})
		if err != nil {
			t.Fatal(err)
		}
		sr, _ := paid.Meta["x402/payment-response"].(map[string]any)
		return paid, sr
	}

	paid, sr := pay("@mcpflat hello", 1)
	if paid.IsError || sr["success"] != true || sr["transaction"] == "" || sr["payer"] != from.Hex() || w.hits("/free") != 1 {
		t.Fatalf("paid over MCP: %+v, payment-response %v", paid, sr)
	}
	paid, sr = pay("@mcpflatfail hello", 2)
	if paid.IsError || sr["success"] != false || sr["transaction"] == "" || w.hits("/fail") != 1 {
		t.Fatalf("refunded over MCP: %+v, payment-response %v", paid, sr)
	}
	if chain.Balance(t, from) != 1_000_000-210_000 || chain.Balance(t, chain.Payer) != 0 {
		t.Fatalf("on chain: payer %d, contract %d", chain.Balance(t, from), chain.Balance(t, chain.Payer))
	}
	w.ledgerOK(t)
}

// Someone copies the authorization from Switchboard's pending submission and gets it mined
// first (a higher fee): Switchboard's pay reverts, the transfer is found on chain and adopted
// into the quote's escrow, and the call goes ahead and settles.
func TestFlatFeeFrontRunWhileSubmitting(t *testing.T) {
	w, chain := flatWorld(t)
	w.publish(t, "@racing", "/free", map[string]any{"feeRate": 0.5, "feeRateUnit": "flat_usdc", "payoutAddresses": map[string]string{"evm": partnerWallet.Hex()}})
	payer := chain.NewKey(t)
	from := crypto.PubkeyToAddress(payer.PublicKey)
	chain.Mint(t, from, 1_000_000)
	q, _ := w.quote(t, "@racing go")
	p := sign(t, chain, q, payer, func(f *signed) {
		f.primary, f.after, f.nonce = contracts.TransferWithAuthorization, 0, hexutil.Encode(bytes.Repeat([]byte{5}, 32))
	})

	chain.RPC(t, nil, "evm_setAutomine", false)
	type answer struct {
		status int
		out    map[string]any
	}
	done := make(chan answer, 1)
	go func() {
		status, out := w.invoke(t, w.caller, map[string]any{"message": "@racing go", "confirmRequestId": q["requestId"], "payment": p})
		done <- answer{status, out}
	}()
	for i := 0; ; i++ { // Switchboard's pay is in the mempool
		var st struct{ Pending hexutil.Uint64 }
		chain.RPC(t, &st, "txpool_status")
		if st.Pending > 0 {
			break
		}
		if i > 200 {
			t.Fatal("Switchboard never submitted the payment")
		}
		time.Sleep(25 * time.Millisecond)
	}
	// The copy, from an unlocked anvil account, with a far higher tip.
	auth := p["authorization"].(map[string]any)
	sig := common.FromHex(p["signature"].(string))
	var nonce, r, s [32]byte
	copy(nonce[:], common.FromHex(auth["nonce"].(string)))
	copy(r[:], sig[:32])
	copy(s[:], sig[32:64])
	before, _ := new(big.Int).SetString(auth["validBefore"].(string), 10)
	data, err := contracts.TestUSDC.ABI.Pack("transferWithAuthorization", from, chain.Payer, big.NewInt(510_000), big.NewInt(0), before, nonce, sig[64], r, s)
	if err != nil {
		t.Fatal(err)
	}
	var accounts []common.Address
	chain.RPC(t, &accounts, "eth_accounts")
	var copied common.Hash
	chain.RPC(t, &copied, "eth_sendTransaction", map[string]any{"from": accounts[len(accounts)-1], "to": chain.Token, "data": hexutil.Bytes(data),
		"gas": hexutil.Uint64(200_000), "maxFeePerGas": hexutil.Big(*big.NewInt(500e9)), "maxPriorityFeePerGas": hexutil.Big(*big.NewInt(400e9))})
	chain.RPC(t, nil, "evm_mine")
	chain.RPC(t, nil, "evm_setAutomine", true)
	chain.RPC(t, nil, "evm_mine")
	got := <-done
	if got.status != 200 || got.out["success"] != true || got.out["payment"].(map[string]any)["state"] != "settled" || w.hits("/free") != 1 {
		t.Fatalf("front-run while submitting: %d %v", got.status, got.out)
	}
	if got.out["payment"].(map[string]any)["payTx"] != copied.Hex() {
		t.Fatalf("payTx %v, want the copied transfer %s", got.out["payment"].(map[string]any)["payTx"], copied.Hex())
	}
	if chain.Balance(t, partnerWallet) != 500_000 || chain.Balance(t, chain.Payer) != 0 || chain.Balance(t, from) != 1_000_000-510_000 {
		t.Fatalf("on chain: partner %d, contract %d, payer %d", chain.Balance(t, partnerWallet), chain.Balance(t, chain.Payer), chain.Balance(t, from))
	}
	w.ledgerOK(t)
}
