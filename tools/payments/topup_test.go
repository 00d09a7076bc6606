package payments_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/switchboard-hq/switchboard/cmd/switchboard/app"
	"github.com/switchboard-hq/switchboard/cmd/switchboard/app/apptest"
	"github.com/switchboard-hq/switchboard/contracts"
	"github.com/switchboard-hq/switchboard/contracts/anviltest"
	"github.com/switchboard-hq/switchboard/store/accounts"
	"github.com/switchboard-hq/switchboard/store/ledger"
	"github.com/switchboard-hq/switchboard/store/storetest"
)

// topupWorld is the service on a real chain (anvil, the project's contracts and test USDC)
// with credit_topup bounded at 1..10 USD a top-up and a 20 USD balance, and a buyer account
// (10 USD of starting credit).
type topupWorld struct {
	env    *apptest.Env
	chain  *anviltest.Chain
	key    string
	userID string
}

func newTopupWorld(t *testing.T, dialect string) *topupWorld {
	t.Helper()
	chain := anviltest.Start(t)
	env := apptest.Start(t, apptest.Options{Dialect: dialect, Config: func(c *app.Config) {
		// No treasury setting: top-ups are paid to the payer contract's treasury.
		c.FlatFee = app.FlatFeeConfig{RPCURL: chain.URL, ChainID: anviltest.ChainID, Token: chain.Token.Hex(), Payer: chain.Payer.Hex(),
			RelayerKey: hexutil.Encode(crypto.FromECDSA(chain.Relayer)), Confirmations: 1, PlatformUSD: "0.01", PayoutInterval: "0"}
		c.TopupMinUSD, c.TopupMaxUSD, c.TopupCapUSD = "1", "10", "20"
	}})
	acct := env.Onboard(t, "buyer@example.com")
	return &topupWorld{env: env, chain: chain, key: acct["apiKey"].(string), userID: acct["userId"].(string)}
}

// required asks to buy amount and returns the x402 requirement of the 402 answer.
func (w *topupWorld) required(t *testing.T, amount float64) (accepts map[string]any, requestID string) {
	t.Helper()
	status, hdr, out := apptest.Do(t, "POST", w.env.URL+"/v1/credit/topup", w.key, map[string]any{"amountUsd": amount})
	if status != 402 || code(out) != "PAYMENT_REQUIRED" {
		t.Fatalf("a top-up without payment: %d %v", status, out)
	}
	raw, err := base64.StdEncoding.DecodeString(hdr.Get("PAYMENT-REQUIRED"))
	if err != nil {
		t.Fatalf("PAYMENT-REQUIRED: %v", err)
	}
	var pr struct {
		X402Version int              `json:"x402Version"`
		Accepts     []map[string]any `json:"accepts"`
		Resource    struct{ URL string }
	}
	if err := json.Unmarshal(raw, &pr); err != nil || pr.X402Version != 2 || len(pr.Accepts) != 1 {
		t.Fatalf("PAYMENT-REQUIRED %s: %v", raw, err)
	}
	if !strings.HasSuffix(pr.Resource.URL, "/v1/credit/topup") {
		t.Fatalf("resource.url %q, want the top-up route", pr.Resource.URL)
	}
	a := pr.Accepts[0]
	extra, _ := a["extra"].(map[string]any)
	return a, extra["requestId"].(string)
}

// signed is an x402 version 2 PaymentPayload paying accepts from key, as a stock exact-scheme
// client builds it: TransferWithAuthorization, a random nonce, validAfter 0, validBefore now
// + maxTimeoutSeconds.
func (w *topupWorld) signed(t *testing.T, accepts map[string]any, key *ecdsa.PrivateKey) (header string, auth contracts.Authorization) {
	t.Helper()
	var nonce [32]byte
	rand.Read(nonce[:])
	from := crypto.PubkeyToAddress(key.PublicKey)
	value, _ := new(big.Int).SetString(accepts["amount"].(string), 10)
	before := time.Now().Unix() + int64(accepts["maxTimeoutSeconds"].(float64))
	td := contracts.TypedData(contracts.TransferWithAuthorization, anviltest.ChainID, w.chain.Token, from, common.HexToAddress(accepts["payTo"].(string)), value, 0, before, nonce)
	sig, err := contracts.Sign(td, key)
	if err != nil {
		t.Fatal(err)
	}
	pp := map[string]any{"x402Version": 2, "accepted": accepts, "payload": map[string]any{"signature": hexutil.Encode(sig), "authorization": map[string]any{
		"from": from.Hex(), "to": accepts["payTo"], "value": value.String(), "validAfter": "0", "validBefore": fmt.Sprint(before), "nonce": hexutil.Encode(nonce[:])}}}
	raw, _ := json.Marshal(pp)
	_, v, r, s, err := contracts.Signer(td, sig)
	if err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(raw), contracts.Authorization{From: from, Value: value, ValidAfter: big.NewInt(0), ValidBefore: big.NewInt(before), Nonce: nonce, V: v, R: r, S: s}
}

func (w *topupWorld) pay(t *testing.T, amount float64, header string, body map[string]any) (int, map[string]any, map[string]any) {
	t.Helper()
	if body == nil {
		body = map[string]any{}
	}
	body["amountUsd"] = amount
	status, hdr, out := apptest.DoWith(t, "POST", w.env.URL+"/v1/credit/topup", w.key, body, map[string]string{"PAYMENT-SIGNATURE": header})
	var sr map[string]any
	if raw, err := base64.StdEncoding.DecodeString(hdr.Get("PAYMENT-RESPONSE")); err == nil && len(raw) > 0 {
		json.Unmarshal(raw, &sr)
	}
	return status, out, sr
}

func (w *topupWorld) credit(t *testing.T) string {
	t.Helper()
	status, out := w.env.REST(t, "GET", "/v1/account", w.key, nil)
	if status != 200 {
		t.Fatalf("account: %d %v", status, out)
	}
	return fmt.Sprint(out["creditUsd"])
}

func code(out map[string]any) string {
	e, _ := out["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

func message(out map[string]any) string {
	e, _ := out["error"].(map[string]any)
	m, _ := e["message"].(string)
	return m
}

// TestTopupBuysCreditOncePerAuthorization: credit bought over REST with an x402 payment on a
// real chain, on both databases. The 402 asks for exactly amountUsd of the stablecoin to the
// treasury; the paid retry credits it once the transfer is confirmed and answers
// PAYMENT-RESPONSE; the same proof again (a retry) answers the same top-up and credits
// nothing; the proof sent for another quote is refused and credits nothing; a transfer the
// payer put on chain itself, presented after its quote expired, is credited; each bound is
// refused saying what to buy; ledger-check passes and the books show chain:treasury -> credit.
func TestTopupBuysCreditOncePerAuthorization(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			w := newTopupWorld(t, dialect)
			payer := w.chain.NewKey(t)
			from := crypto.PubkeyToAddress(payer.PublicKey)
			w.chain.Mint(t, from, 50_000_000)
			if got := w.credit(t); got != "10" {
				t.Fatalf("starting credit %s, want 10", got)
			}

			accepts, rid := w.required(t, 5)
			if accepts["scheme"] != "exact" || accepts["network"] != fmt.Sprintf("eip155:%d", anviltest.ChainID) || accepts["amount"] != "5000000" ||
				!strings.EqualFold(accepts["payTo"].(string), w.chain.Treasury.Hex()) || !strings.EqualFold(accepts["asset"].(string), w.chain.Token.Hex()) {
				t.Fatalf("requirement %v: want exact, 5000000 of the token to the treasury %s", accepts, w.chain.Treasury.Hex())
			}
			header, _ := w.signed(t, accepts, payer)
			status, out, sr := w.pay(t, 5, header, nil)
			if status != 200 || fmt.Sprint(out["creditedUsd"]) != "5" || fmt.Sprint(out["creditUsd"]) != "15" || out["requestId"] != rid {
				t.Fatalf("paid top-up: %d %v", status, out)
			}
			tx := out["txHash"].(string)
			if sr["success"] != true || sr["transaction"] != tx || !strings.EqualFold(fmt.Sprint(sr["payer"]), from.Hex()) {
				t.Fatalf("PAYMENT-RESPONSE %v, want success with %s", sr, tx)
			}
			if w.chain.Balance(t, w.chain.Treasury) != 5_000_000 || w.chain.Balance(t, from) != 45_000_000 {
				t.Fatalf("on chain: treasury %d, payer %d", w.chain.Balance(t, w.chain.Treasury), w.chain.Balance(t, from))
			}

			// The same proof again: the same answer, nothing credited twice.
			status, out, _ = w.pay(t, 5, header, nil)
			if status != 200 || out["txHash"] != tx || fmt.Sprint(out["creditUsd"]) != "15" {
				t.Fatalf("the proof again: %d %v", status, out)
			}
			// The same proof for another quote: refused, nothing credited.
			_, other := w.required(t, 5)
			status, out, _ = w.pay(t, 5, header, map[string]any{"confirmRequestId": other})
			if status != 409 || !strings.Contains(message(out), "bought credit already") {
				t.Fatalf("the proof replayed for another quote: %d %v", status, out)
			}
			if got := w.credit(t); got != "15" || w.chain.Balance(t, from) != 45_000_000 {
				t.Fatalf("after the replays: credit %s, payer %d on chain; want 15 and 45000000", got, w.chain.Balance(t, from))
			}

			// Bounds: each refused with what to do.
			for _, c := range []struct {
				amount float64
				says   string
			}{{0.5, "buy at least 1 USD"}, {11, "buy at most 10 USD at a time"}, {6, "buy at most 5 USD, or spend some credit first"}} {
				status, _, out := apptest.Do(t, "POST", w.env.URL+"/v1/credit/topup", w.key, map[string]any{"amountUsd": c.amount})
				if status != 400 || code(out) != "BAD_INPUT" || !strings.Contains(message(out), c.says) {
					t.Fatalf("a top-up of %v: %d %v; want BAD_INPUT saying %q", c.amount, status, out, c.says)
				}
			}

			// The payer submits its own authorization to the token, and presents it only after
			// the quote expired: the money arrived, so it is credited.
			accepts, _ = w.required(t, 2)
			header, auth := w.signed(t, accepts, payer)
			if _, err := w.chain.Client.Transact(context.Background(), w.chain.Token, contracts.TestUSDC, "transferWithAuthorization",
				auth.From, w.chain.Treasury, auth.Value, auth.ValidAfter, auth.ValidBefore, auth.Nonce, auth.V, auth.R, auth.S); err != nil {
				t.Fatal(err)
			}
			w.chain.Warp(t, 11*time.Minute)
			status, out, _ = w.pay(t, 2, header, nil)
			if status != 200 || fmt.Sprint(out["creditedUsd"]) != "2" || fmt.Sprint(out["creditUsd"]) != "17" {
				t.Fatalf("a transfer presented after its quote expired: %d %v", status, out)
			}

			if err := w.env.App.Settled(context.Background()); err != nil {
				t.Fatal(err)
			}
			if err := ledger.Check(context.Background(), w.env.App.Store); err != nil {
				t.Fatalf("ledger-check: %v", err)
			}
			books := balancesOf(t, w.env.App)
			if books["chain:treasury"] != -7_000_000 || books[ledger.UserAvailable(w.userID)] != 17_000_000 {
				t.Fatalf("books %v: want chain:treasury -7000000 and the buyer's credit 17000000", books)
			}
			if got := w.credit(t); got != "17" {
				t.Fatalf("account_get creditUsd %s, want 17", got)
			}
			topupRecords(t, w, "2", "5")
		})
	}
}

func balancesOf(t *testing.T, a *apptest.App) map[string]int64 {
	t.Helper()
	bs, err := ledger.BookBalances(context.Background(), a.Store, "")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, b := range bs {
		out[b.Book] = b.Micro
	}
	return out
}

// TestTopupFromTheEmbeddedWallet: payWithWallet buys credit from the account's embedded EVM
// wallet only once the account's signing is on (before: FORBIDDEN naming the setting, nothing
// signed or taken), on both databases; the credit is announced once by credit.topped_up,
// written with the credit.
func TestTopupFromTheEmbeddedWallet(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			w := newTopupWorld(t, dialect)
			_, acct := w.env.REST(t, "GET", "/v1/account", w.key, nil)
			if scopes := fmt.Sprint(acct["scopes"]); !strings.Contains(scopes, "wallet") {
				t.Fatalf("the agent's key has scopes %s; this test needs wallet", scopes)
			}
			wallet := common.HexToAddress(acct["wallets"].(map[string]any)["evm"].(string))
			w.chain.Mint(t, wallet, 10_000_000)

			status, _, out := apptest.Do(t, "POST", w.env.URL+"/v1/credit/topup", w.key, map[string]any{"amountUsd": 4, "payWithWallet": true})
			if status != 403 || code(out) != "FORBIDDEN" || !strings.Contains(message(out), "signingEnabled") {
				t.Fatalf("payWithWallet with signing off: %d %v; want FORBIDDEN naming the setting", status, out)
			}
			if w.chain.Balance(t, wallet) != 10_000_000 || w.credit(t) != "10" {
				t.Fatalf("signing off took %d from the wallet, credit %s", 10_000_000-w.chain.Balance(t, wallet), w.credit(t))
			}

			if err := accounts.New(w.env.App.Store).SetSigning(context.Background(), w.userID, true); err != nil {
				t.Fatal(err)
			}
			status, _, out = apptest.Do(t, "POST", w.env.URL+"/v1/credit/topup", w.key, map[string]any{"amountUsd": 4, "payWithWallet": true})
			if status != 200 || fmt.Sprint(out["creditedUsd"]) != "4" || fmt.Sprint(out["creditUsd"]) != "14" {
				t.Fatalf("payWithWallet with signing on: %d %v", status, out)
			}
			if w.chain.Balance(t, wallet) != 6_000_000 || w.chain.Balance(t, w.chain.Treasury) != 4_000_000 {
				t.Fatalf("on chain: wallet %d, treasury %d", w.chain.Balance(t, wallet), w.chain.Balance(t, w.chain.Treasury))
			}

			if err := w.env.App.Settled(context.Background()); err != nil {
				t.Fatal(err)
			}
			var bodies []string
			if err := w.env.App.Store.DB().NewRaw("SELECT body FROM webhook_events WHERE account_id = ? AND type = ?", w.userID, "credit.topped_up").
				Scan(context.Background(), &bodies); err != nil {
				t.Fatal(err)
			}
			if len(bodies) != 1 || !strings.Contains(bodies[0], `"creditedUsd":"4"`) || !strings.Contains(bodies[0], `"creditUsd":"14"`) ||
				!strings.Contains(bodies[0], out["txHash"].(string)) {
				t.Fatalf("credit.topped_up events %v: want one, of 4 USD, credit 14, with the transaction", bodies)
			}
			if err := ledger.Check(context.Background(), w.env.App.Store); err != nil {
				t.Fatalf("ledger-check: %v", err)
			}
		})
	}
}

// TestTopupLeftSubmittedIsCreditedByTheSweeper: a process that claimed an authorization and
// sent its transfer, then died before crediting it (the row left submitted, the money at the
// treasury), loses nothing: the sweeper credits it once, and the client's retry with the same
// proof then answers that top-up without crediting again. On both databases.
func TestTopupLeftSubmittedIsCreditedByTheSweeper(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			w := newTopupWorld(t, dialect)
			payer := w.chain.NewKey(t)
			from := crypto.PubkeyToAddress(payer.PublicKey)
			w.chain.Mint(t, from, 10_000_000)
			accepts, rid := w.required(t, 3)
			header, auth := w.signed(t, accepts, payer)

			// The dead process's state: the claim written, the transfer sent, no credit.
			ctx := context.Background()
			rc, err := w.chain.Client.Transact(ctx, w.chain.Token, contracts.TestUSDC, "transferWithAuthorization",
				auth.From, w.chain.Treasury, auth.Value, auth.ValidAfter, auth.ValidBefore, auth.Nonce, auth.V, auth.R, auth.S)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := w.env.App.Store.DB().NewRaw(`UPDATE credit_topups SET state = 'submitted', payer_address = ?, nonce = ?, auth_before = ?, pay_tx = ? WHERE request_id = ?`,
				from.Hex(), hexutil.Encode(auth.Nonce[:]), auth.ValidBefore.Int64(), rc.TxHash.Hex(), rid).Exec(ctx); err != nil {
				t.Fatal(err)
			}
			if w.credit(t) != "10" {
				t.Fatalf("credit %s before the sweep, want 10", w.credit(t))
			}

			w.env.Clock.Advance(2 * time.Minute)
			for range 2 { // a second sweep finds nothing left to do
				if _, _, err := w.env.App.Sweep(ctx); err != nil {
					t.Fatal(err)
				}
			}
			if got := w.credit(t); got != "13" {
				t.Fatalf("credit %s after the sweeps, want 13 (credited once)", got)
			}
			status, out, _ := w.pay(t, 3, header, nil)
			if status != 200 || out["txHash"] != rc.TxHash.Hex() || fmt.Sprint(out["creditUsd"]) != "13" {
				t.Fatalf("the client's retry after the sweep: %d %v", status, out)
			}
			topupRecords(t, w, "3") // swept, then retried: on the record once
			if err := w.env.App.Settled(ctx); err != nil {
				t.Fatal(err)
			}
			if err := ledger.Check(ctx, w.env.App.Store); err != nil {
				t.Fatalf("ledger-check: %v", err)
			}
		})
	}
}

// TestTopupTakesOneAuthorizationPerQuote: a quote whose authorization is on its way refuses a
// second authorization (it would move money the quote's claim does not account for), and that
// second one stays unused on chain.
func TestTopupTakesOneAuthorizationPerQuote(t *testing.T) {
	w := newTopupWorld(t, "sqlite")
	payer := w.chain.NewKey(t)
	from := crypto.PubkeyToAddress(payer.PublicKey)
	w.chain.Mint(t, from, 10_000_000)
	accepts, rid := w.required(t, 3)
	_, first := w.signed(t, accepts, payer)
	ctx := context.Background()
	if _, err := w.env.App.Store.DB().NewRaw(`UPDATE credit_topups SET state = 'submitted', payer_address = ?, nonce = ?, auth_before = ? WHERE request_id = ?`,
		from.Hex(), hexutil.Encode(first.Nonce[:]), first.ValidBefore.Int64(), rid).Exec(ctx); err != nil {
		t.Fatal(err)
	}
	second, auth := w.signed(t, accepts, payer)
	status, out, _ := w.pay(t, 3, second, nil)
	if status != 409 || !strings.Contains(message(out), "being paid by another authorization") {
		t.Fatalf("a second authorization for a quote being paid: %d %v", status, out)
	}
	used, err := contracts.Dial(ctx, w.chain.URL, anviltest.ChainID, nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer used.Close()
	if u, err := used.AuthorizationUsed(ctx, w.chain.Token, from, auth.Nonce); err != nil || u || w.chain.Balance(t, from) != 10_000_000 {
		t.Fatalf("the refused authorization: used %v (%v), payer holds %d", u, err, w.chain.Balance(t, from))
	}
}

// TestTopupPaidWithVersion1Header: x402 version 1's X-PAYMENT echoes no requirement and names
// no quote: the top-up is quoted and paid in the same call when the authorization pays exactly
// amountUsd to the treasury; one paying another amount is refused with nothing taken.
func TestTopupPaidWithVersion1Header(t *testing.T) {
	w := newTopupWorld(t, "sqlite")
	payer := w.chain.NewKey(t)
	from := crypto.PubkeyToAddress(payer.PublicKey)
	w.chain.Mint(t, from, 10_000_000)
	accepts, _ := w.required(t, 2)
	v1 := func(header string) string { // the same payload without `accepted`, as version 1 sends it
		raw, _ := base64.StdEncoding.DecodeString(header)
		var pp map[string]any
		json.Unmarshal(raw, &pp)
		delete(pp, "accepted")
		pp["x402Version"], pp["scheme"], pp["network"] = 1, "exact", accepts["network"]
		out, _ := json.Marshal(pp)
		return base64.StdEncoding.EncodeToString(out)
	}
	header, _ := w.signed(t, accepts, payer)
	st, _, out := apptest.DoWith(t, "POST", w.env.URL+"/v1/credit/topup", w.key, map[string]any{"amountUsd": 3}, map[string]string{"X-PAYMENT": v1(header)})
	if st != 400 || !strings.Contains(message(out), "not the quoted 3000000") {
		t.Fatalf("a version 1 payment of 2 USD for a top-up of 3: %d %v", st, out)
	}
	st, _, out = apptest.DoWith(t, "POST", w.env.URL+"/v1/credit/topup", w.key, map[string]any{"amountUsd": 2}, map[string]string{"X-PAYMENT": v1(header)})
	if st != 200 || fmt.Sprint(out["creditedUsd"]) != "2" || fmt.Sprint(out["creditUsd"]) != "12" {
		t.Fatalf("a version 1 payment: %d %v", st, out)
	}
	if w.chain.Balance(t, from) != 8_000_000 {
		t.Fatalf("the payer holds %d, want 8000000", w.chain.Balance(t, from))
	}
}
