package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/switchboard-hq/switchboard/contracts"
	"github.com/switchboard-hq/switchboard/contracts/anviltest"
	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/accounts"
	"github.com/switchboard-hq/switchboard/store/ledger"
	"github.com/switchboard-hq/switchboard/store/storetest"
)

// holdingSeller is an x402 v2 seller over TLS that settles a payment on anvil (its own key
// submits the TransferWithAuthorization, as a facilitator does) and then holds its answer until
// the request goes away: the moment the pay-through cell kills serve at.
type holdingSeller struct {
	chain    *anviltest.Chain
	client   *contracts.Client
	payTo    common.Address
	price    int64
	payments atomic.Int32  // requests that carried a payment
	settled  chan struct{} // closed once a payment settled
}

func (s *holdingSeller) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	sig := r.Header.Get("PAYMENT-SIGNATURE")
	if sig == "" {
		offer := map[string]any{"scheme": "exact", "network": fmt.Sprintf("eip155:%d", anviltest.ChainID), "amount": fmt.Sprint(s.price),
			"asset": s.chain.Token.Hex(), "payTo": s.payTo.Hex(), "maxTimeoutSeconds": 120, "extra": map[string]any{"name": "USD Coin", "version": "2"}}
		pr, _ := json.Marshal(map[string]any{"x402Version": 2, "resource": map[string]any{"url": "https://" + r.Host + r.URL.Path}, "accepts": []any{offer}})
		w.Header().Set("PAYMENT-REQUIRED", base64.StdEncoding.EncodeToString(pr))
		w.WriteHeader(http.StatusPaymentRequired)
		return
	}
	s.payments.Add(1)
	raw, _ := base64.StdEncoding.DecodeString(sig)
	var pp struct {
		Payload struct {
			Signature     string
			Authorization struct{ From, To, Value, ValidAfter, ValidBefore, Nonce string }
		}
	}
	if err := json.Unmarshal(raw, &pp); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	a := pp.Payload.Authorization
	value, _ := new(big.Int).SetString(a.Value, 10)
	after, _ := new(big.Int).SetString(a.ValidAfter, 10)
	before, _ := new(big.Int).SetString(a.ValidBefore, 10)
	var nonce [32]byte
	copy(nonce[:], common.FromHex(a.Nonce))
	td := contracts.TypedData(contracts.TransferWithAuthorization, anviltest.ChainID, s.chain.Token, common.HexToAddress(a.From), common.HexToAddress(a.To), value, after.Int64(), before.Int64(), nonce)
	_, v, rr, ss, err := contracts.Signer(td, common.FromHex(pp.Payload.Signature))
	if err == nil {
		_, err = s.client.Transact(context.Background(), s.chain.Token, contracts.TestUSDC, "transferWithAuthorization",
			common.HexToAddress(a.From), common.HexToAddress(a.To), value, after, before, nonce, v, rr, ss)
	}
	if err != nil {
		w.WriteHeader(http.StatusPaymentRequired)
		return
	}
	close(s.settled)
	<-r.Context().Done() // the answer is held until serve is gone
}

// TestX402FetchCrashAfterPayment is the crash matrix's pay-through cell: serve is killed
// (SIGKILL) after the signed payment reached the seller, who settled it on chain, and before the
// seller's answer is relayed or recorded. Restarted, the retry with the same Idempotency-Key
// pays nothing more (409 while the outcome is learned), the sweeper concludes the payment
// succeeded from the chain (the authorization's nonce used, its transaction found), and the
// retry then answers that outcome; exactly one transfer on chain, ledger-check clean. On both
// databases.
func TestX402FetchCrashAfterPayment(t *testing.T) {
	bin := buildBinary(t)
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			chain := anviltest.Start(t)
			dir, addr := t.TempDir(), freeAddr(t)
			dsn := ""
			if dialect == "postgres" {
				dsn = storetest.DSN(t, dialect)
			}
			client, err := contracts.Dial(ctx, chain.URL, anviltest.ChainID, chain.NewFundedKey(t), 1)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(client.Close)
			seller := &holdingSeller{chain: chain, client: client, payTo: crypto.PubkeyToAddress(chain.NewKey(t).PublicKey), price: 250_000, settled: make(chan struct{})}
			partner, caFile := startPartner(t, seller, dir)
			env := []string{"SWITCHBOARD_DATA_DIR=" + dir, "SWITCHBOARD_DATABASE_URL=" + dsn, "SWITCHBOARD_SMTP_URL=", "SWITCHBOARD_API_KEY=",
				"SWITCHBOARD_ALLOW_LOCAL_ENDPOINTS=true", "SWITCHBOARD_PARTNER_CA_FILE=" + caFile, "SWITCHBOARD_SWEEP_MARGIN=1s", "SWITCHBOARD_SWEEP_INTERVAL=200ms",
				"SWITCHBOARD_FLATFEE_RPC_URL=" + chain.URL, fmt.Sprintf("SWITCHBOARD_FLATFEE_CHAIN_ID=%d", anviltest.ChainID),
				"SWITCHBOARD_FLATFEE_TOKEN=" + chain.Token.Hex(), "SWITCHBOARD_FLATFEE_PAYER=" + chain.Payer.Hex(),
				"SWITCHBOARD_FLATFEE_RELAYER_KEY=" + hexutil.Encode(crypto.FromECDSA(chain.Relayer)), "SWITCHBOARD_FLATFEE_PAYOUT_INTERVAL=0"}
			s := startServe(t, bin, addr, env)
			key := s.onboard("pay-through-crash@example.com")
			st, acct := s.do("GET", "/v1/account", key, nil)
			if st != 200 {
				t.Fatalf("account_get: %d %v", st, acct)
			}
			userID, wallet := acct["userId"].(string), common.HexToAddress(acct["wallets"].(map[string]any)["evm"].(string))
			chain.Mint(t, wallet, 10_000_000)
			db, err := store.Open(ctx, dsn, dir) // the database serve uses: a human turned signing on
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if err := accounts.New(db).SetSigning(ctx, userID, true); err != nil {
				t.Fatal(err)
			}

			body := map[string]any{"url": partner.URL + "/weather", "maxUsd": 1}
			hdr := map[string]string{"Idempotency-Key": "pay-through-1"}
			answered := make(chan int, 1)
			go func() {
				st, _, _ := s.doWithHeaders("POST", "/v1/x402/fetch", key, body, hdr)
				answered <- st
			}()
			select {
			case <-seller.settled:
			case st := <-answered:
				t.Fatalf("x402_fetch answered %d before the seller settled:\n%s", st, s.stderr)
			case <-time.After(60 * time.Second):
				t.Fatalf("the seller never settled:\n%s", s.stderr)
			}
			s.kill9()
			if st := <-answered; st != 0 {
				t.Fatalf("the paid fetch answered %d; want serve killed before it answered", st)
			}
			if got := chain.Balance(t, seller.payTo); got != 250_000 {
				t.Fatalf("the seller holds %d after the crash; want the payment (250000) settled", got)
			}

			s = startServe(t, bin, addr, env)
			var out map[string]any
			for i := 0; ; i++ { // 409 while the sweeper learns the outcome, then that outcome
				st, _, out = s.doWithHeaders("POST", "/v1/x402/fetch", key, body, hdr)
				e, _ := out["error"].(map[string]any)
				if st == 502 && e["code"] == "UPSTREAM" && strings.Contains(fmt.Sprint(e["message"]), "settled on chain") {
					break
				}
				if st != 409 || e["code"] != "CONFLICT" || i > 120 {
					t.Fatalf("retry %d after the restart: %d %v\n%s", i+1, st, out, s.stderr)
				}
				time.Sleep(time.Second)
			}
			details := out["error"].(map[string]any)["details"].(map[string]any)
			if details["paidUsd"] != "0.25" || len(fmt.Sprint(details["txHash"])) != 66 {
				t.Fatalf("the concluded payment's answer %v", out)
			}
			if n := seller.payments.Load(); n != 1 {
				t.Fatalf("the seller was sent %d payments; want 1", n)
			}
			if chain.Balance(t, seller.payTo) != 250_000 || chain.Balance(t, wallet) != 9_750_000 {
				t.Fatalf("on chain: the seller holds %d, the wallet %d; want one transfer of 250000", chain.Balance(t, seller.payTo), chain.Balance(t, wallet))
			}
			s.kill9()
			var rows []store.Invocation
			if err := db.DB().NewSelect().Model(&rows).Where("account_id = ? AND kind = ?", userID, store.KindX402).Scan(ctx); err != nil {
				t.Fatal(err)
			}
			if len(rows) != 1 || rows[0].State != store.InvSucceeded || rows[0].TxHash == nil || *rows[0].TxHash != details["txHash"] {
				t.Fatalf("the payment's record %+v", rows)
			}
			paid, err := db.DB().NewSelect().Model((*store.WebhookEvent)(nil)).Where("account_id = ? AND type = ?", userID, "x402.paid").Count(ctx)
			if err != nil || paid != 1 {
				t.Fatalf("%d x402.paid events (%v); want 1", paid, err)
			}
			if err := ledger.Check(ctx, db); err != nil {
				t.Fatalf("ledger-check: %v", err)
			}
		})
	}
}
