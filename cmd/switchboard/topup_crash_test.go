package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/switchboard-hq/switchboard/contracts"
	"github.com/switchboard-hq/switchboard/contracts/anviltest"
	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/ledger"
	"github.com/switchboard-hq/switchboard/store/storetest"
)

// TestTopupCrashAfterTransfer is the crash matrix's top-up cell: serve is killed (SIGKILL) after
// a top-up's transfer is confirmed on chain and before it is credited. Nothing is lost and
// nothing is paid or credited twice: restarted, the stock client's retry with the same payment
// finds the transfer and credits it once; a second retry credits nothing. On both databases.
func TestTopupCrashAfterTransfer(t *testing.T) {
	bin := buildBinary(t)
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			chain := anviltest.Start(t)
			dir, addr := t.TempDir(), freeAddr(t)
			dsn := ""
			if dialect == "postgres" {
				dsn = storetest.DSN(t, dialect)
			}
			env := []string{"SWITCHBOARD_DATA_DIR=" + dir, "SWITCHBOARD_DATABASE_URL=" + dsn, "SWITCHBOARD_SMTP_URL=", "SWITCHBOARD_API_KEY=",
				"SWITCHBOARD_FLATFEE_RPC_URL=" + chain.URL, fmt.Sprintf("SWITCHBOARD_FLATFEE_CHAIN_ID=%d", anviltest.ChainID),
				"SWITCHBOARD_FLATFEE_TOKEN=" + chain.Token.Hex(), "SWITCHBOARD_FLATFEE_PAYER=" + chain.Payer.Hex(),
				"SWITCHBOARD_FLATFEE_RELAYER_KEY=" + hexutil.Encode(crypto.FromECDSA(chain.Relayer)), "SWITCHBOARD_FLATFEE_PAYOUT_INTERVAL=0"}
			s := startServe(t, bin, addr, append(append([]string{}, env...), "SWITCHBOARD_FAILPOINT=topup"))
			key := s.onboard("topup-crash@example.com")
			payer := chain.NewKey(t)
			from := crypto.PubkeyToAddress(payer.PublicKey)
			chain.Mint(t, from, 10_000_000)

			st, hdr, out := s.doWithHeaders("POST", "/v1/credit/topup", key, map[string]any{"amountUsd": 4}, nil)
			if st != 402 {
				t.Fatalf("unpaid top-up: %d %v", st, out)
			}
			header := stockPayment(t, chain, hdr.Get("PAYMENT-REQUIRED"), payer)
			st, _, out = s.doWithHeaders("POST", "/v1/credit/topup", key, map[string]any{"amountUsd": 4}, map[string]string{"PAYMENT-SIGNATURE": header})
			if st != 0 {
				t.Fatalf("the paid top-up answered %d %v; want the process killed before answering", st, out)
			}
			s.cmd.Wait()
			if chain.Balance(t, chain.Treasury) != 4_000_000 {
				t.Fatalf("the treasury holds %d after the crash; want the transfer (4000000) confirmed", chain.Balance(t, chain.Treasury))
			}

			s = startServe(t, bin, addr, env)
			for i, want := range []string{"14", "14"} { // the retry credits; the next one answers the same
				st, _, out = s.doWithHeaders("POST", "/v1/credit/topup", key, map[string]any{"amountUsd": 4}, map[string]string{"PAYMENT-SIGNATURE": header})
				if st != 200 || fmt.Sprint(out["creditUsd"]) != want || fmt.Sprint(out["creditedUsd"]) != "4" {
					t.Fatalf("retry %d after the restart: %d %v; want credit %s", i+1, st, out, want)
				}
			}
			if chain.Balance(t, from) != 6_000_000 {
				t.Fatalf("the payer holds %d; want 6000000 (paid once)", chain.Balance(t, from))
			}
			s.kill9()
			db, err := store.Open(context.Background(), dsn, dir) // the database serve used
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if err := ledger.Check(context.Background(), db); err != nil {
				t.Fatalf("ledger-check: %v", err)
			}
		})
	}
}

// stockPayment is the PAYMENT-SIGNATURE a stock x402 exact-scheme client sends for the
// PAYMENT-REQUIRED header required: TransferWithAuthorization, a random nonce, the requirement
// echoed.
func stockPayment(t *testing.T, chain *anviltest.Chain, required string, key *ecdsa.PrivateKey) string {
	t.Helper()
	raw, err := base64.StdEncoding.DecodeString(required)
	if err != nil {
		t.Fatalf("PAYMENT-REQUIRED: %v", err)
	}
	var pr struct{ Accepts []map[string]any }
	if err := json.Unmarshal(raw, &pr); err != nil || len(pr.Accepts) != 1 {
		t.Fatalf("PAYMENT-REQUIRED %s: %v", raw, err)
	}
	a := pr.Accepts[0]
	var nonce [32]byte
	rand.Read(nonce[:])
	from := crypto.PubkeyToAddress(key.PublicKey)
	value, _ := new(big.Int).SetString(a["amount"].(string), 10)
	before := time.Now().Unix() + int64(a["maxTimeoutSeconds"].(float64))
	td := contracts.TypedData(contracts.TransferWithAuthorization, anviltest.ChainID, chain.Token, from, common.HexToAddress(a["payTo"].(string)), value, 0, before, nonce)
	sig, err := contracts.Sign(td, key)
	if err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(map[string]any{"x402Version": 2, "accepted": a, "payload": map[string]any{"signature": hexutil.Encode(sig), "authorization": map[string]any{
		"from": from.Hex(), "to": a["payTo"], "value": value.String(), "validAfter": "0", "validBefore": fmt.Sprint(before), "nonce": hexutil.Encode(nonce[:])}}})
	return base64.StdEncoding.EncodeToString(out)
}
