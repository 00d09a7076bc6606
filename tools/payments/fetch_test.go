package payments_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/switchboard-hq/switchboard/cmd/switchboard/app"
	"github.com/switchboard-hq/switchboard/cmd/switchboard/app/apptest"
	"github.com/switchboard-hq/switchboard/contracts"
	"github.com/switchboard-hq/switchboard/contracts/anviltest"
	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/accounts"
	"github.com/switchboard-hq/switchboard/store/storetest"
	"github.com/switchboard-hq/switchboard/tools/partners/partnertest"
)

// seller is an x402 v2 seller in-process over TLS on loopback: without PAYMENT-SIGNATURE it
// answers 402 with an exact offer of price in the test USDC; with one it checks the
// TransferWithAuthorization (amount, payTo, the signer) and settles it on anvil from its own
// key, then serves the resource with PAYMENT-RESPONSE, as a facilitator-backed seller does.
type seller struct {
	srv    *httptest.Server
	payTo  common.Address
	chain  *anviltest.Chain
	client *contracts.Client
	mu     sync.Mutex
	price  int64
	paid   int // payments settled
	asked  int // requests that carried a payment
	// drop, when set, is how the seller loses its answer to a paid request: "settled" (it
	// settles on chain, then drops the connection) or "unsettled" (it drops it at once).
	drop string
	seen http.Header // the last request's headers
}

func newSeller(t *testing.T, chain *anviltest.Chain, price int64) *seller {
	t.Helper()
	s := &seller{chain: chain, price: price, payTo: crypto.PubkeyToAddress(chain.NewKey(t).PublicKey)}
	var err error
	if s.client, err = contracts.Dial(context.Background(), chain.URL, anviltest.ChainID, chain.NewFundedKey(t), 1); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.client.Close)
	s.srv = httptest.NewTLSServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *seller) offer() map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return map[string]any{"scheme": "exact", "network": fmt.Sprintf("eip155:%d", anviltest.ChainID), "amount": fmt.Sprint(s.price),
		"asset": s.chain.Token.Hex(), "payTo": s.payTo.Hex(), "maxTimeoutSeconds": 120, "extra": map[string]any{"name": "USD Coin", "version": "2"}}
}

func (s *seller) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.seen = r.Header.Clone()
	s.mu.Unlock()
	sig := r.Header.Get("PAYMENT-SIGNATURE")
	if sig == "" {
		pr, _ := json.Marshal(map[string]any{"x402Version": 2, "error": "payment required", "resource": map[string]any{"url": "https://" + r.Host + r.URL.Path},
			"accepts": []any{s.offer()}})
		w.Header().Set("PAYMENT-REQUIRED", base64.StdEncoding.EncodeToString(pr))
		w.WriteHeader(http.StatusPaymentRequired)
		w.Write([]byte("{}"))
		return
	}
	s.mu.Lock()
	s.asked++
	drop := s.drop
	s.mu.Unlock()
	if drop == "unsettled" {
		hangUp(w)
		return
	}
	tx, err := s.settle(r.Context(), sig)
	if drop == "settled" { // the transport's own retry of the request is dropped too
		hangUp(w)
		return
	}
	if err != nil {
		pr, _ := json.Marshal(map[string]any{"success": false, "errorReason": err.Error(), "transaction": "", "network": "eip155:31337"})
		w.Header().Set("PAYMENT-RESPONSE", base64.StdEncoding.EncodeToString(pr))
		w.WriteHeader(http.StatusPaymentRequired)
		return
	}
	pr, _ := json.Marshal(map[string]any{"success": true, "transaction": tx, "network": "eip155:31337"})
	w.Header().Set("PAYMENT-RESPONSE", base64.StdEncoding.EncodeToString(pr))
	w.Header().Set("Content-Type", "application/json")
	w.Write([]byte(`{"weather":"sunny","paid":true}`))
}

// settle checks the payment and submits it to the token.
func (s *seller) settle(ctx context.Context, header string) (string, error) {
	raw, err := base64.StdEncoding.DecodeString(header)
	if err != nil {
		return "", err
	}
	var pp struct {
		X402Version int            `json:"x402Version"`
		Accepted    map[string]any `json:"accepted"`
		Payload     struct {
			Signature     string `json:"signature"`
			Authorization struct {
				From, To, Value, ValidAfter, ValidBefore, Nonce string
			} `json:"authorization"`
		} `json:"payload"`
	}
	if err := json.Unmarshal(raw, &pp); err != nil || pp.X402Version != 2 {
		return "", fmt.Errorf("payload %s: %v", raw, err)
	}
	a := pp.Payload.Authorization
	want := s.offer()
	if pp.Accepted["payTo"] != want["payTo"] || pp.Accepted["amount"] != want["amount"] || !strings.EqualFold(a.To, s.payTo.Hex()) || a.Value != want["amount"] {
		return "", fmt.Errorf("invalid_exact_evm_payload: pays %s to %s, the offer is %v", a.Value, a.To, want)
	}
	value, _ := new(big.Int).SetString(a.Value, 10)
	after, _ := new(big.Int).SetString(a.ValidAfter, 10)
	before, _ := new(big.Int).SetString(a.ValidBefore, 10)
	var nonce [32]byte
	copy(nonce[:], common.FromHex(a.Nonce))
	from := common.HexToAddress(a.From)
	td := contracts.TypedData(contracts.TransferWithAuthorization, anviltest.ChainID, s.chain.Token, from, s.payTo, value, after.Int64(), before.Int64(), nonce)
	signer, v, r, ss, err := contracts.Signer(td, common.FromHex(pp.Payload.Signature))
	if err != nil || signer != from {
		return "", fmt.Errorf("invalid_exact_evm_payload_signature: signed by %s, from %s (%v)", signer.Hex(), from.Hex(), err)
	}
	rc, err := s.client.Transact(ctx, s.chain.Token, contracts.TestUSDC, "transferWithAuthorization", from, s.payTo, value, after, before, nonce, v, r, ss)
	if err != nil {
		return "", err
	}
	s.mu.Lock()
	s.paid++
	s.mu.Unlock()
	return rc.TxHash.Hex(), nil
}

// hangUp drops the connection without an answer.
func hangUp(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(err)
	}
	conn.Close()
}

func (s *seller) dropping(mode string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.drop = mode
}

func (s *seller) counts() (asked, paid int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.asked, s.paid
}

// fetchWorld is the service on anvil (the flat-fee network is the chain the seller takes), the
// partner client trusting the seller's certificate and allowing loopback (the development
// setting), and the seller.
type fetchWorld struct {
	env    *apptest.Env
	chain  *anviltest.Chain
	seller *seller
}

func newFetchWorld(t *testing.T, dialect string) *fetchWorld {
	t.Helper()
	chain := anviltest.Start(t)
	s := newSeller(t, chain, 250_000) // 0.25 USD
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, partnertest.CAPEM(s.srv), 0o600); err != nil {
		t.Fatal(err)
	}
	env := apptest.Start(t, apptest.Options{Dialect: dialect, Config: func(c *app.Config) {
		c.FlatFee = app.FlatFeeConfig{RPCURL: chain.URL, ChainID: anviltest.ChainID, Token: chain.Token.Hex(), Payer: chain.Payer.Hex(),
			RelayerKey: hexutil.Encode(crypto.FromECDSA(chain.Relayer)), Confirmations: 1, PlatformUSD: "0.01", PayoutInterval: "0"}
		c.AllowLocalEndpoints = true
		c.PartnerCAFile = caFile
	}})
	return &fetchWorld{env: env, chain: chain, seller: s}
}

// agent is an onboarded account with 10 USDC in its embedded wallet and signing on (unless
// signingOff), and policy (nil: none) set on its key.
type agent struct {
	key, userID string
	wallet      common.Address
}

func (w *fetchWorld) agent(t *testing.T, email string, signing bool, policy map[string]any) agent {
	t.Helper()
	acct := w.env.Onboard(t, email)
	a := agent{key: acct["apiKey"].(string), userID: acct["userId"].(string), wallet: common.HexToAddress(acct["wallets"].(map[string]any)["evm"].(string))}
	w.chain.Mint(t, a.wallet, 10_000_000)
	if signing {
		if err := accounts.New(w.env.App.Store).SetSigning(context.Background(), a.userID, true); err != nil {
			t.Fatal(err)
		}
	}
	if policy != nil {
		if status, out := w.env.REST(t, "PUT", "/v1/policy", a.key, map[string]any{"policy": policy}); status != 200 {
			t.Fatalf("policy_set: %d %v", status, out)
		}
	}
	return a
}

func (w *fetchWorld) fetch(t *testing.T, a agent, body map[string]any, headers map[string]string) (int, map[string]any) {
	t.Helper()
	if body["url"] == nil {
		body["url"] = w.seller.srv.URL + "/weather"
	}
	status, _, out := apptest.DoWith(t, "POST", w.env.URL+"/v1/x402/fetch", a.key, body, headers)
	return status, out
}

// movements are the account's x402 records.
func (w *fetchWorld) movements(t *testing.T, userID string) []store.Invocation {
	t.Helper()
	var rows []store.Invocation
	if err := w.env.App.Store.DB().NewSelect().Model(&rows).Where("account_id = ? AND kind = ?", userID, store.KindX402).Scan(context.Background()); err != nil {
		t.Fatal(err)
	}
	return rows
}

func (w *fetchWorld) events(t *testing.T, userID, typ string) int {
	t.Helper()
	n, err := w.env.App.Store.DB().NewSelect().Model((*store.WebhookEvent)(nil)).Where("account_id = ? AND type = ?", userID, typ).Count(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return int(n)
}

// TestX402FetchPaysASeller: x402_fetch pays the seller's exact offer from the embedded wallet
// (the USDC moves on chain, once), relays its answer and settlement, records the payment (kind
// x402, its value and transaction hash, x402.paid), counts it in the policy windows as on-chain
// spending, and a retry with the same Idempotency-Key pays nothing again; on both databases.
func TestX402FetchPaysASeller(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			w := newFetchWorld(t, dialect)
			a := w.agent(t, "payer@example.com", true, map[string]any{"caps": []any{map[string]any{"window": "day", "usd": "5"}}})
			hdr := map[string]string{"Idempotency-Key": "weather-1"}
			status, out := w.fetch(t, a, map[string]any{"maxUsd": 0.5}, hdr)
			if status != 200 || out["status"] != float64(200) || !strings.Contains(fmt.Sprint(out["body"]), "sunny") || out["paidUsd"] != 0.25 {
				t.Fatalf("a paid fetch: %d %v", status, out)
			}
			pay, _ := out["payment"].(map[string]any)
			tx, _ := pay["txHash"].(string)
			if pay["payer"] != a.wallet.Hex() || pay["payTo"] != w.seller.payTo.Hex() || pay["network"] != "eip155:31337" || len(tx) != 66 {
				t.Fatalf("payment %v", pay)
			}
			if got := w.chain.Balance(t, w.seller.payTo); got != 250_000 {
				t.Fatalf("the seller holds %d, want 250000", got)
			}
			rows := w.movements(t, a.userID)
			if len(rows) != 1 || rows[0].State != store.InvSucceeded || rows[0].ValueMicro != 250_000 || rows[0].TxHash == nil || *rows[0].TxHash != tx || rows[0].Handle != "127.0.0.1" {
				t.Fatalf("records %+v", rows)
			}
			if n := w.events(t, a.userID, "x402.paid"); n != 1 {
				t.Fatalf("%d x402.paid events, want 1", n)
			}
			// The retry answers the first call's answer: nothing is paid again.
			status, again := w.fetch(t, a, map[string]any{"maxUsd": 0.5}, hdr)
			if status != 200 || fmt.Sprint(again["payment"]) != fmt.Sprint(out["payment"]) {
				t.Fatalf("the retry: %d %v", status, again)
			}
			if _, paid := w.seller.counts(); paid != 1 || w.chain.Balance(t, w.seller.payTo) != 250_000 || len(w.movements(t, a.userID)) != 1 {
				t.Fatalf("the retry paid again: %d payments, seller holds %d", paid, w.chain.Balance(t, w.seller.payTo))
			}
			// policy_get shows it on chain, beside the credit calls.
			status, pol := w.env.REST(t, "GET", "/v1/policy", a.key, nil)
			if status != 200 {
				t.Fatalf("policy_get: %d %v", status, pol)
			}
			day := pol["windows"].([]any)[1].(map[string]any)
			if day["window"] != "day" || day["onchainUsd"] != "0.25" || day["creditUsd"] != "0" || day["spentUsd"] != "0.25" || day["leftUsd"] != "4.75" {
				t.Fatalf("the day window %v", day)
			}
		})
	}
}

// TestX402FetchRefusesBeforeSigning: a price above maxUsd, a denied host, a per-call maximum,
// a day cap that x402 spending has reached and signing off each refuse with nothing signed
// (the seller sees no payment and the wallet keeps its USDC); on both databases.
func TestX402FetchRefusesBeforeSigning(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			w := newFetchWorld(t, dialect)
			refused := func(t *testing.T, a agent, body map[string]any, wantStatus int, code, rule string) {
				t.Helper()
				before := w.chain.Balance(t, a.wallet)
				asked, _ := w.seller.counts()
				status, out := w.fetch(t, a, body, nil)
				e, _ := out["error"].(map[string]any)
				details, _ := e["details"].(map[string]any)
				if status != wantStatus || e["code"] != code || rule != "" && details["rule"] != rule {
					t.Fatalf("want %d %s (%s): %d %v", wantStatus, code, rule, status, out)
				}
				if now, _ := w.seller.counts(); now != asked || w.chain.Balance(t, a.wallet) != before {
					t.Fatalf("something was signed: the seller saw %d payments, the wallet went from %d to %d", now-asked, before, w.chain.Balance(t, a.wallet))
				}
			}
			t.Run("maxUsd", func(t *testing.T) {
				a := w.agent(t, "max@example.com", true, nil)
				refused(t, a, map[string]any{"maxUsd": 0.1}, 403, "POLICY_DENIED", "maxUsd")
			})
			t.Run("deny.hosts", func(t *testing.T) {
				a := w.agent(t, "deny@example.com", true, map[string]any{"deny": map[string]any{"hosts": []any{"127.0.0.1"}}})
				refused(t, a, map[string]any{}, 403, "POLICY_DENIED", "deny.hosts")
				if n := w.events(t, a.userID, "policy.denied"); n != 1 {
					t.Fatalf("%d policy.denied events, want 1", n)
				}
			})
			t.Run("perCallMaxUsd", func(t *testing.T) {
				a := w.agent(t, "percall@example.com", true, map[string]any{"perCallMaxUsd": "0.2"})
				refused(t, a, map[string]any{}, 403, "POLICY_DENIED", "perCallMaxUsd")
			})
			t.Run("caps.day", func(t *testing.T) {
				a := w.agent(t, "cap@example.com", true, map[string]any{"caps": []any{map[string]any{"window": "day", "usd": "0.4"}}})
				if status, out := w.fetch(t, a, map[string]any{}, nil); status != 200 || out["paidUsd"] != 0.25 {
					t.Fatalf("the first payment under the cap: %d %v", status, out)
				}
				refused(t, a, map[string]any{}, 403, "POLICY_DENIED", "caps.day") // 0.25 + 0.25 > 0.4
			})
			t.Run("signing off", func(t *testing.T) {
				a := w.agent(t, "off@example.com", false, nil)
				before := w.chain.Balance(t, a.wallet)
				status, out := w.fetch(t, a, map[string]any{}, nil)
				e, _ := out["error"].(map[string]any)
				if status != 403 || e["code"] != "FORBIDDEN" || !strings.Contains(fmt.Sprint(e["message"]), "signingEnabled") || w.chain.Balance(t, a.wallet) != before {
					t.Fatalf("signing off: %d %v", status, out)
				}
				if rows := w.movements(t, a.userID); len(rows) != 0 {
					t.Fatalf("signing off recorded %+v", rows)
				}
			})
		})
	}
}
