package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/switchboard-hq/switchboard/contracts/anviltest"
	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/accounts"
	"github.com/switchboard-hq/switchboard/store/invocations"
	"github.com/switchboard-hq/switchboard/store/ledger"
	"github.com/switchboard-hq/switchboard/store/sends"
	"github.com/switchboard-hq/switchboard/store/storetest"
	"github.com/switchboard-hq/switchboard/tools/send"
)

// The registry's USDC on base: the test stablecoin's code is placed there (DESIGN "Testing on
// anvil"), so a send of "USDC" on base resolves to it.
var registryUSDC = common.HexToAddress("0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913")

// freshPrices is CoinGecko's /simple/price for ETH and USDC stamped now (a real serve runs on
// the wall clock, which the fixtures' stamps are stale to); every other price lookup finds
// nothing.
func freshPrices(t *testing.T) string {
	usd := map[string]float64{"ethereum": 3456.78, "usd-coin": 0.999812}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/simple/price") {
			http.NotFound(w, r)
			return
		}
		out := map[string]any{}
		for _, id := range strings.Split(r.URL.Query().Get("ids"), ",") {
			if p, ok := usd[id]; ok {
				out[id] = map[string]any{"usd": p, "last_updated_at": time.Now().Unix()}
			}
		}
		json.NewEncoder(w).Encode(out)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestSendCrash is the crash matrix's send cells: serve is killed (SIGKILL) in a confirmed USDC
// wallet_send on base (anvil at chain id 8453) after the send is judged and recorded
// dispatching and before it is signed (send-judged), after the signed transaction is recorded
// and before it is broadcast (send-signed), and after the node took it and before that is
// recorded (send-broadcast); the caller gets no answer. Restarted without the failpoint, the
// caller's retry of the same confirmation answers the one transaction (its hash, submitted or
// confirmed; send-judged: signed by that retry), the follower concludes the send's record succeeded, the recipient holds the
// amount once, the wallet's nonce moved once per send (nothing signed twice), chain_sends has
// one row for the request, and ledger-check is clean. On both databases.
func TestSendCrash(t *testing.T) {
	bin := buildBinary(t)
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			chain := anviltest.StartOn(t, 8453)
			chain.PlaceMulticall(t)
			chain.PlaceToken(t, registryUSDC)
			prices := freshPrices(t)
			dir, addr := t.TempDir(), freeAddr(t)
			dsn := ""
			if dialect == "postgres" {
				dsn = storetest.DSN(t, dialect)
			}
			env := []string{"SWITCHBOARD_DATA_DIR=" + dir, "SWITCHBOARD_DATABASE_URL=" + dsn, "SWITCHBOARD_SMTP_URL=", "SWITCHBOARD_API_KEY=",
				"SWITCHBOARD_RPC_BASE=" + chain.URL, "SWITCHBOARD_COINGECKO_URL=" + prices + "/api/v3", "SWITCHBOARD_DEFILLAMA_URL=" + prices,
				"SWITCHBOARD_JUPITER_URL=" + prices}
			s := startServe(t, bin, addr, env)
			key := s.onboard("send-crash@example.com")
			st, acct := s.do("GET", "/v1/account", key, nil)
			if st != 200 {
				t.Fatalf("account_get: %d %v", st, acct)
			}
			userID, wallet := acct["userId"].(string), common.HexToAddress(acct["wallets"].(map[string]any)["evm"].(string))
			chain.SetBalance(t, wallet, big.NewInt(1e18))
			chain.MintAt(t, registryUSDC, wallet, 10_000_000)
			db, err := store.Open(ctx, dsn, dir) // the database serve uses: a human turned signing on
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if err := accounts.New(db).SetSigning(ctx, userID, true); err != nil {
				t.Fatal(err)
			}
			s.kill9()

			for i, step := range []string{send.FailJudged, send.FailSigned, send.FailBroadcast} {
				to := crypto.PubkeyToAddress(chain.NewKey(t).PublicKey)
				s = startServe(t, bin, addr, append(append([]string{}, env...), "SWITCHBOARD_FAILPOINT="+step))
				id := sendCrashCell(t, s, db, chain, key, to, step)

				s = startServe(t, bin, addr, env)
				body := map[string]any{"chain": "base", "token": "USDC", "to": to.Hex(), "amount": "2.5", "confirmRequestId": id}
				st, out := s.do("POST", "/v1/wallet/send", key, body)
				rec, err := sends.New(db).Get(ctx, id)
				if err != nil {
					t.Fatalf("%s: the send's record: %v", step, err)
				}
				if st != 200 || out["requestId"] != id || out["txHash"] != rec.TxHash || (out["status"] != "submitted" && out["status"] != "confirmed") {
					t.Fatalf("%s: the retried confirmation after the restart: %d %v; want the recorded transaction %s", step, st, out, rec.TxHash)
				}
				t.Logf("%s: killed before answering; the retry after the restart answered %s %s", step, out["status"], rec.TxHash)
				inv := concludedSend(t, db, userID, id, s)
				if inv.State != store.InvSucceeded || inv.TxHash == nil || *inv.TxHash != rec.TxHash {
					t.Fatalf("%s: the send's movement ended %s (tx %v); want succeeded with %s", step, inv.State, inv.TxHash, rec.TxHash)
				}
				// Concluded: a further retry answers the same transaction, confirmed.
				if st, out := s.do("POST", "/v1/wallet/send", key, body); st != 200 || out["status"] != "confirmed" || out["txHash"] != rec.TxHash {
					t.Fatalf("%s: a retry after the conclusion: %d %v", step, st, out)
				}
				if got := chain.BalanceAt(t, registryUSDC, to); got != 2_500_000 {
					t.Fatalf("%s: the recipient holds %d; want 2500000 (one transfer)", step, got)
				}
				if got := chain.BalanceAt(t, registryUSDC, wallet); got != 10_000_000-int64(i+1)*2_500_000 {
					t.Fatalf("%s: the wallet holds %d after %d sends", step, got, i+1)
				}
				var nonce string
				chain.RPC(t, &nonce, "eth_getTransactionCount", wallet, "latest")
				if nonce != fmt.Sprintf("0x%x", i+1) {
					t.Fatalf("%s: the wallet's nonce is %s after %d sends; want one transaction each", step, nonce, i+1)
				}
				n, err := db.DB().NewSelect().Model((*sends.Send)(nil)).Where("account_id = ?", userID).Count(ctx)
				if err != nil || n != int64(i+1) {
					t.Fatalf("%s: %d chain_sends rows (%v) after %d sends", step, n, err, i+1)
				}
				s.kill9()
			}
			if err := ledger.Check(ctx, db); err != nil {
				t.Fatalf("ledger-check: %v", err)
			}
		})
	}
}

// sendCrashCell quotes a 2.5 USDC send to to on s and confirms it, s killing itself at step
// before it answers; it checks what the chain and the record hold then, and answers the
// send's request id.
func sendCrashCell(t *testing.T, s *server, db *store.Store, chain *anviltest.Chain, key string, to common.Address, step string) string {
	t.Helper()
	body := map[string]any{"chain": "base", "token": "USDC", "to": to.Hex(), "amount": "2.5"}
	st, out := s.do("POST", "/v1/wallet/send", key, body)
	e, _ := out["error"].(map[string]any)
	if st != 409 || e["code"] != "CONFIRMATION_REQUIRED" {
		t.Fatalf("%s: quote: %d %v\n%s", step, st, out, s.stderr)
	}
	id := e["details"].(map[string]any)["requestId"].(string)
	body["confirmRequestId"] = id
	if st, out := s.do("POST", "/v1/wallet/send", key, body); st != 0 {
		t.Fatalf("%s: the confirmed send answered %d %v; want serve killed before it answered\n%s", step, st, out, s.stderr)
	}
	s.cmd.Wait()
	if !strings.Contains(s.stderr.String(), "failpoint reached") {
		t.Fatalf("%s: serve died without reaching the failpoint:\n%s", step, s.stderr)
	}
	rec, err := sends.New(db).Get(context.Background(), id)
	if step == send.FailJudged { // judged, nothing signed
		if !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("%s: a send recorded after the crash: %+v (%v)", step, rec, err)
		}
	} else if err != nil || rec.Status != sends.Prepared {
		t.Fatalf("%s: the send's record after the crash: %+v (%v); want it prepared", step, rec, err)
	}
	want := int64(0) // not broadcast
	if step == send.FailBroadcast {
		want = 2_500_000 // the node took it
		chain.Mined(t, rec.TxHash)
	}
	if got := chain.BalanceAt(t, registryUSDC, to); got != want {
		t.Fatalf("%s: the recipient holds %d after the crash; want %d", step, got, want)
	}
	return id
}

// concludedSend waits for the follower of s to conclude the send's movement.
func concludedSend(t *testing.T, db *store.Store, accountID, requestID string, s *server) *store.Invocation {
	t.Helper()
	for range 150 {
		inv, err := invocations.New(db).Get(context.Background(), accountID, requestID)
		if err != nil {
			t.Fatal(err)
		}
		if store.StateOf(inv.State).Final {
			return inv
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("send %s was not concluded within 30 s:\n%s", requestID, s.stderr)
	return nil
}
