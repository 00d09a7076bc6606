package send_test

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"math/big"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-hq/switchboard/chain/solana/svmtest"
	"github.com/switchboard-hq/switchboard/chain/solana/transfer"
	"github.com/switchboard-hq/switchboard/cmd/switchboard/app"
	"github.com/switchboard-hq/switchboard/cmd/switchboard/app/apptest"
	"github.com/switchboard-hq/switchboard/contracts/anviltest"
	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/accounts"
	"github.com/switchboard-hq/switchboard/store/invocations"
	"github.com/switchboard-hq/switchboard/store/sends"
	"github.com/switchboard-hq/switchboard/store/storetest"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/tokens/tokenstest"
)

// The registry's USDC on base, where the test stablecoin's code is placed (DESIGN "Testing on
// anvil"): a send of "USDC" on base resolves to it, while the token at its deployed address,
// which names itself USDC too, is spam by the registry's rule.
var baseUSDC = common.HexToAddress("0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913")

// sendWorld is the whole service with base served by anvil (chain id 8453), Solana by the
// litesvm harness (when asked), and prices by the fixtures' CoinGecko (USDC 0.999812 USD).
type sendWorld struct {
	env   *apptest.Env
	chain *anviltest.Chain
	arb   *anviltest.Chain // arbitrum (42161), when asked
	svm   *svmtest.SVM
}

func newSendWorld(t *testing.T, dialect string, withSolana bool, more ...string) *sendWorld {
	t.Helper()
	w := &sendWorld{chain: anviltest.StartOn(t, 8453)}
	if slices.Contains(more, "arbitrum") {
		w.arb = anviltest.StartOn(t, 42161)
	}
	w.chain.PlaceMulticall(t)
	w.chain.PlaceToken(t, baseUSDC)
	if withSolana {
		w.svm = svmtest.Start(t)
	}
	up := tokenstest.Start(t, map[string]int64{})
	w.env = apptest.Start(t, apptest.Options{Dialect: dialect, Start: tokenstest.T0, Config: func(c *app.Config) {
		c.Tokens.RPCBase = w.chain.URL
		if w.arb != nil {
			c.Tokens.RPCArbitrum = w.arb.URL
		}
		c.Tokens.CoinGeckoURL, c.Tokens.DefiLlamaURL, c.Tokens.JupiterURL = up.CoinGecko.URL+"/api/v3", up.DefiLlama.URL, up.Jupiter.URL
		if w.svm != nil {
			c.Tokens.SolanaRPC = w.svm.URL
		}
	}})
	return w
}

// sender is an onboarded account with 10 USDC and 1 ETH on base (and 5 SOL on Solana when
// it runs), signing on unless off, and policy (nil: none) on its key.
type sender struct {
	key, userID string
	evm         common.Address
	svm         string
}

func (w *sendWorld) sender(t *testing.T, email string, signing bool, policy map[string]any) sender {
	t.Helper()
	acct := w.env.Onboard(t, email)
	ws := acct["wallets"].(map[string]any)
	s := sender{key: acct["apiKey"].(string), userID: acct["userId"].(string), evm: common.HexToAddress(ws["evm"].(string))}
	s.svm, _ = ws["svm"].(string)
	w.chain.SetBalance(t, s.evm, big.NewInt(1e18))
	w.chain.MintAt(t, baseUSDC, s.evm, 10_000_000)
	if w.arb != nil {
		w.arb.SetBalance(t, s.evm, big.NewInt(1e18))
	}
	if w.svm != nil {
		w.svm.Airdrop(t, s.svm, 5_000_000_000)
	}
	if signing {
		if err := accounts.New(w.env.App.Store).SetSigning(context.Background(), s.userID, true); err != nil {
			t.Fatal(err)
		}
	}
	if policy != nil {
		if status, out := w.env.REST(t, "PUT", "/v1/policy", s.key, map[string]any{"policy": policy}); status != 200 {
			t.Fatalf("policy_set: %d %v", status, out)
		}
	}
	return s
}

func (w *sendWorld) send(t *testing.T, s sender, body map[string]any) (int, map[string]any) {
	t.Helper()
	return w.env.REST(t, "POST", "/v1/wallet/send", s.key, body)
}

// quote asks for body's quote and answers its CONFIRMATION_REQUIRED details.
func (w *sendWorld) quote(t *testing.T, s sender, body map[string]any) map[string]any {
	t.Helper()
	status, out := w.send(t, s, body)
	e, _ := out["error"].(map[string]any)
	if status != 409 || e["code"] != "CONFIRMATION_REQUIRED" {
		t.Fatalf("quote: %d %v", status, out)
	}
	return e["details"].(map[string]any)
}

func with(body map[string]any, k string, v any) map[string]any {
	out := map[string]any{}
	for kk, vv := range body {
		out[kk] = vv
	}
	out[k] = v
	return out
}

func (w *sendWorld) sendRows(t *testing.T, accountID string) int {
	t.Helper()
	n, err := w.env.App.Store.DB().NewSelect().Model((*sends.Send)(nil)).Where("account_id = ?", accountID).Count(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return int(n)
}

func (w *sendWorld) record(t *testing.T, accountID, requestID string) *store.Invocation {
	t.Helper()
	inv, err := invocations.New(w.env.App.Store).Get(context.Background(), accountID, requestID)
	if err != nil {
		t.Fatal(err)
	}
	return inv
}

func (w *sendWorld) events(t *testing.T, accountID, typ string) int {
	t.Helper()
	n, err := w.env.App.Store.DB().NewSelect().Model((*store.WebhookEvent)(nil)).Where("account_id = ? AND type = ?", accountID, typ).Count(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return int(n)
}

// concluded waits for the follower (the app's background work) to conclude the send's record.
func (w *sendWorld) concluded(t *testing.T, accountID, requestID string) *store.Invocation {
	t.Helper()
	for range 600 {
		if inv := w.record(t, accountID, requestID); store.StateOf(inv.State).Final {
			return inv
		}
		w.env.Clock.Advance(time.Second) // the follower takes sends last touched before now
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("send %s was not concluded", requestID)
	return nil
}

// TestWalletSendMovesUSDCOnce: a confirmed USDC send on base (anvil) moves exactly the amount,
// is recorded (kind send, its USD value, its hash), concluded by the follower once with one
// wallet.sent event, and a repeated confirmation answers the same send and never sends
// again; on both databases.
func TestWalletSendMovesUSDCOnce(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			w := newSendWorld(t, dialect, false)
			s := w.sender(t, "usdc@example.com", true, map[string]any{"caps": []any{map[string]any{"window": "day", "usd": "5"}}})
			to := crypto.PubkeyToAddress(w.chain.NewKey(t).PublicKey)
			body := map[string]any{"chain": "base", "token": "USDC", "to": to.Hex(), "amount": "2.5"}
			q := w.quote(t, s, body)
			id, _ := q["requestId"].(string)
			gas, _ := q["gasUsd"].(float64)
			if q["valueUsd"] != 2.49953 || gas <= 0 || q["chain"] != "base" || q["amount"] != "2.5" || q["token"] != baseUSDC.Hex() || q["expiresAt"] == nil || id == "" {
				t.Fatalf("quote details %v", q)
			}
			if w.sendRows(t, s.userID) != 0 || w.chain.BalanceAt(t, baseUSDC, to) != 0 {
				t.Fatal("the quote sent something")
			}
			status, out := w.send(t, s, with(body, "confirmRequestId", id))
			tx, _ := out["txHash"].(string)
			if status != 200 || out["requestId"] != id || (out["status"] != "submitted" && out["status"] != "confirmed") || len(tx) != 66 || out["valueUsd"] != 2.49953 {
				t.Fatalf("confirmed send: %d %v", status, out)
			}
			// anvil mines the broadcast transaction after it has answered its hash: read the
			// balance once the follower has seen the receipt.
			inv := w.concluded(t, s.userID, id)
			if got := w.chain.BalanceAt(t, baseUSDC, to); got != 2_500_000 {
				t.Fatalf("the recipient holds %d, want 2500000", got)
			}
			if inv.State != store.InvSucceeded || inv.Kind != store.KindSend || inv.ValueMicro != 2_499_530 || inv.TxHash == nil || *inv.TxHash != tx || inv.Network == nil || *inv.Network != "eip155:8453" {
				t.Fatalf("the record %+v", inv)
			}
			if n := w.events(t, s.userID, "wallet.sent"); n != 1 {
				t.Fatalf("%d wallet.sent events, want 1", n)
			}
			// The same confirmation again: the same send, confirmed, nothing sent twice.
			for range 2 {
				status, again := w.send(t, s, with(body, "confirmRequestId", id))
				if status != 200 || again["txHash"] != tx || again["requestId"] != id || again["status"] != "confirmed" || again["explorerUrl"] != "https://basescan.org/tx/"+tx {
					t.Fatalf("the repeated confirmation: %d %v", status, again)
				}
			}
			if w.chain.BalanceAt(t, baseUSDC, to) != 2_500_000 || w.chain.BalanceAt(t, baseUSDC, s.evm) != 7_500_000 || w.sendRows(t, s.userID) != 1 || w.events(t, s.userID, "wallet.sent") != 1 {
				t.Fatalf("sent twice: the recipient holds %d, %d sends", w.chain.BalanceAt(t, baseUSDC, to), w.sendRows(t, s.userID))
			}
			// Confirmations at once: one transfer, every answer the same send.
			q2 := w.quote(t, s, with(body, "amount", "0.5"))
			var wg sync.WaitGroup
			hashes := make([]any, 4)
			for i := range hashes {
				wg.Go(func() {
					_, out := w.env.REST(t, "POST", "/v1/wallet/send", s.key, with(with(body, "amount", "0.5"), "confirmRequestId", q2["requestId"]))
					hashes[i] = out["txHash"]
				})
			}
			wg.Wait()
			if got := w.chain.BalanceAt(t, baseUSDC, to); got != 3_000_000 || w.sendRows(t, s.userID) != 2 || hashes[0] == nil || slices.ContainsFunc(hashes, func(h any) bool { return h != hashes[0] }) {
				t.Fatalf("concurrent confirmations: the recipient holds %d, %d sends, hashes %v", got, w.sendRows(t, s.userID), hashes)
			}
			w.concluded(t, s.userID, q2["requestId"].(string))
			// policy_get counts it on chain.
			_, pol := w.env.REST(t, "GET", "/v1/policy", s.key, nil)
			day := pol["windows"].([]any)[1].(map[string]any)
			if day["window"] != "day" || day["onchainUsd"] != "2.999436" {
				t.Fatalf("the day window %v", day)
			}
			// The usage log shows the send with its value, network and hash.
			_, usage := w.env.REST(t, "GET", "/v1/usage?kind=send", s.key, nil)
			found := false
			for _, r := range usage["rows"].([]any) {
				row := r.(map[string]any)
				if row["requestId"] == id {
					found = row["txHash"] == tx && row["network"] == "eip155:8453" && row["valueUsd"] == 2.49953 && row["outcome"] == "succeeded"
				}
			}
			if !found {
				t.Fatalf("the usage log %v", usage)
			}
			// A confirmation with another body is refused: a quote names one send.
			status, other := w.send(t, s, with(with(body, "amount", "3"), "confirmRequestId", id))
			if e, _ := other["error"].(map[string]any); status != 409 || e["code"] != "CONFLICT" {
				t.Fatalf("another body: %d %v", status, other)
			}
		})
	}
}

// TestWalletSendRefusesBeforeSigning: signing off, a spam token, a denied recipient, a
// per-call maximum, a day cap and a malformed amount each refuse with nothing signed (no
// chain_sends row, the wallet's USDC unchanged); a day cap is judged again when the send is
// confirmed, where the caps are exact; on both databases.
func TestWalletSendRefusesBeforeSigning(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			w := newSendWorld(t, dialect, false)
			to := crypto.PubkeyToAddress(w.chain.NewKey(t).PublicKey)
			body := map[string]any{"chain": "base", "token": "USDC", "to": to.Hex(), "amount": "2"}
			refused := func(t *testing.T, s sender, body map[string]any, wantStatus int, code, rule, says string) {
				t.Helper()
				before, rows, got := w.chain.BalanceAt(t, baseUSDC, s.evm), w.sendRows(t, s.userID), w.chain.BalanceAt(t, baseUSDC, to)
				status, out := w.send(t, s, body)
				e, _ := out["error"].(map[string]any)
				details, _ := e["details"].(map[string]any)
				if status != wantStatus || e["code"] != code || rule != "" && details["rule"] != rule || !strings.Contains(fmt.Sprint(e["message"]), says) {
					t.Fatalf("want %d %s (%s, %q): %d %v", wantStatus, code, rule, says, status, out)
				}
				if w.chain.BalanceAt(t, baseUSDC, s.evm) != before || w.sendRows(t, s.userID) != rows || w.chain.BalanceAt(t, baseUSDC, to) != got {
					t.Fatalf("something was sent: the wallet went from %d to %d, %d sends", before, w.chain.BalanceAt(t, baseUSDC, s.evm), w.sendRows(t, s.userID))
				}
			}
			t.Run("signing off", func(t *testing.T) {
				s := w.sender(t, "off@example.com", false, nil)
				q := w.quote(t, s, body)
				refused(t, s, with(body, "confirmRequestId", q["requestId"]), 403, "FORBIDDEN", "", "signingEnabled")
			})
			t.Run("spam token", func(t *testing.T) {
				s := w.sender(t, "spam@example.com", true, nil)
				refused(t, s, with(body, "token", w.chain.Token.Hex()), 400, "BAD_INPUT", "", "spam")
			})
			t.Run("deny.recipients", func(t *testing.T) {
				s := w.sender(t, "deny@example.com", true, map[string]any{"deny": map[string]any{"recipients": []any{strings.ToLower(to.Hex())}}})
				refused(t, s, body, 403, "POLICY_DENIED", "deny.recipients", "denied")
				if n := w.events(t, s.userID, "policy.denied"); n != 1 {
					t.Fatalf("%d policy.denied events, want 1", n)
				}
			})
			t.Run("perCallMaxUsd", func(t *testing.T) {
				s := w.sender(t, "percall@example.com", true, map[string]any{"perCallMaxUsd": "1.5"})
				refused(t, s, body, 403, "POLICY_DENIED", "perCallMaxUsd", "1.5")
			})
			t.Run("caps.day", func(t *testing.T) {
				s := w.sender(t, "cap@example.com", true, map[string]any{"caps": []any{map[string]any{"window": "day", "usd": "3"}}})
				first := w.quote(t, s, body)
				second := w.quote(t, s, body) // quoted while nothing is spent: both fit alone
				if status, out := w.send(t, s, with(body, "confirmRequestId", first["requestId"])); status != 200 {
					t.Fatalf("the first send under the cap: %d %v", status, out)
				}
				// Confirmed after the first went out: judged again, 2 + 2 > 3.
				refused(t, s, with(body, "confirmRequestId", second["requestId"]), 403, "POLICY_DENIED", "caps.day", "cap")
				refused(t, s, body, 403, "POLICY_DENIED", "caps.day", "cap")
				if got := w.chain.BalanceAt(t, baseUSDC, s.evm); got != 8_000_000 {
					t.Fatalf("the wallet holds %d, want 8000000 (one send)", got)
				}
			})
			t.Run("amount", func(t *testing.T) {
				s := w.sender(t, "amount@example.com", true, nil)
				refused(t, s, with(body, "amount", "1.0000001"), 400, "BAD_INPUT", "", "decimals")
				refused(t, s, with(body, "to", "0x1234"), 400, "BAD_INPUT", "", "EVM")
			})
		})
	}
}

// TestWalletSendSOLOverMCP: over MCP (the go-sdk client, every answer checked against its
// output schema by apptest), a SOL send on the litesvm harness is quoted, declined, quoted
// again and confirmed, and moves exactly the amount once; on both databases.
func TestWalletSendSOLOverMCP(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			w := newSendWorld(t, dialect, true)
			s := w.sender(t, "sol@example.com", true, nil)
			_, to := svmtest.NewWallet(t)
			w.svm.Airdrop(t, to, 1_000_000_000)
			c := transfer.NewClient(w.svm.URL, &http.Client{}, time.Now)
			lamports := func() uint64 {
				n, err := c.Lamports(context.Background(), to)
				if err != nil {
					t.Fatal(err)
				}
				return n
			}
			cs := w.env.MCP(t, s.key)
			body := map[string]any{"chain": "solana", "token": "SOL", "to": to, "amount": "0.25"}
			ask := func() map[string]any {
				t.Helper()
				_, e := apptest.CallTool(t, cs, "wallet_send", body)
				if e == nil || e.Code != tools.CodeConfirmationRequired {
					t.Fatalf("quote: %v", e)
				}
				return e.Details
			}
			q := ask()
			if q["token"] != "SOL" || q["chain"] != "solana" || q["valueUsd"] == nil {
				t.Fatalf("quote details %v", q)
			}
			if _, e := apptest.CallTool(t, cs, "wallet_send", with(with(body, "confirmRequestId", q["requestId"]), "decline", true)); e == nil || e.Code != tools.CodeConflict {
				t.Fatalf("decline: %v", e)
			}
			if _, e := apptest.CallTool(t, cs, "wallet_send", with(body, "confirmRequestId", q["requestId"])); e == nil || e.Code != tools.CodeConflict {
				t.Fatalf("a declined quote confirmed: %v", e)
			}
			q = ask()
			out, e := apptest.CallTool(t, cs, "wallet_send", with(body, "confirmRequestId", q["requestId"]))
			if e != nil || out["requestId"] != q["requestId"] || out["txHash"] == "" {
				t.Fatalf("confirmed SOL send: %v %v", out, e)
			}
			if got := lamports(); got != 1_250_000_000 {
				t.Fatalf("the recipient holds %d lamports, want 1250000000", got)
			}
			inv := w.concluded(t, s.userID, q["requestId"].(string))
			again, e := apptest.CallTool(t, cs, "wallet_send", with(body, "confirmRequestId", q["requestId"]))
			if e != nil || again["txHash"] != out["txHash"] || again["status"] != "confirmed" || inv.State != store.InvSucceeded {
				t.Fatalf("the repeated confirmation: %v %v (%s)", again, e, inv.State)
			}
			if got := lamports(); got != 1_250_000_000 || w.sendRows(t, s.userID) != 1 || w.events(t, s.userID, "wallet.sent") != 1 {
				t.Fatalf("sent twice: %d lamports, %d sends", got, w.sendRows(t, s.userID))
			}
		})
	}
}

// TestWalletSendApprovalsAndFailures: a policy's SEND approval rule sends the send to the
// owner (APPROVAL_REQUIRED, nothing signed until approved, then sent once); a token without a
// price is refused under a policy with caps, saying why; a quoted send whose funds are gone
// when it is confirmed reverts on chain, and the follower records it failed with one
// wallet.failed event, which a repeated confirmation answers; get_balances shows the sends;
// on both databases.
func TestWalletSendApprovalsAndFailures(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			w := newSendWorld(t, dialect, false)
			to := crypto.PubkeyToAddress(w.chain.NewKey(t).PublicKey)
			body := map[string]any{"chain": "base", "token": "USDC", "to": to.Hex(), "amount": "1"}
			t.Run("approval.categories", func(t *testing.T) {
				s := w.sender(t, "approve@example.com", true, map[string]any{"approval": map[string]any{"categories": []any{"SEND"}}})
				status, out := w.send(t, s, body)
				e, _ := out["error"].(map[string]any)
				details, _ := e["details"].(map[string]any)
				id, _ := details["requestId"].(string)
				if status != 409 || e["code"] != "APPROVAL_REQUIRED" || details["rule"] != "approval.categories" || id == "" {
					t.Fatalf("want APPROVAL_REQUIRED: %d %v", status, out)
				}
				status, out = w.send(t, s, with(body, "confirmRequestId", id))
				if e, _ := out["error"].(map[string]any); status != 409 || e["code"] != "APPROVAL_PENDING" || w.sendRows(t, s.userID) != 0 {
					t.Fatalf("pending: %d %v", status, out)
				}
				owner := &tools.Principal{AccountID: s.userID, Method: tools.AuthSession, SessionID: "the owner's", RateLimitPerMinute: 600, SpendLimitMicro: 1 << 40}
				args := []byte(fmt.Sprintf(`{"requestId":%q,"approve":true}`, id))
				if _, err := w.env.App.Parts().Kernel.Call(context.Background(), tools.Request{Tool: "approval_decide", Args: args, Principal: owner}); err != nil {
					t.Fatalf("the owner approves: %v", err)
				}
				for range 2 {
					status, out = w.send(t, s, with(body, "confirmRequestId", id))
					if status != 200 || out["requestId"] != id {
						t.Fatalf("approved: %d %v", status, out)
					}
				}
				w.concluded(t, s.userID, id) // its receipt seen, then the balance
				if w.chain.BalanceAt(t, baseUSDC, to) != 1_000_000 || w.sendRows(t, s.userID) != 1 {
					t.Fatalf("the approved send: the recipient holds %d, %d sends", w.chain.BalanceAt(t, baseUSDC, to), w.sendRows(t, s.userID))
				}
			})
			t.Run("unpriced", func(t *testing.T) {
				// AERO on base has no price in the fixtures: with caps, its value cannot be judged.
				s := w.sender(t, "unpriced@example.com", true, map[string]any{"caps": []any{map[string]any{"window": "day", "usd": "100"}}})
				status, out := w.send(t, s, with(with(body, "token", "AERO"), "amount", "0.1"))
				e, _ := out["error"].(map[string]any)
				details, _ := e["details"].(map[string]any)
				if status != 403 || e["code"] != "POLICY_DENIED" || details["rule"] != "unpriced" || !strings.Contains(fmt.Sprint(e["message"]), "no price") {
					t.Fatalf("an unpriced token under caps: %d %v", status, out)
				}
			})
			t.Run("abandoned before signing", func(t *testing.T) {
				// A process judged the send (dispatching) and stopped before signing it.
				s := w.sender(t, "crash@example.com", true, nil)
				q := w.quote(t, s, body)
				id := q["requestId"].(string)
				if _, err := w.env.App.Store.DB().NewUpdate().Table("invocations").Set("state = ?", store.InvDispatching).
					Set("dispatched_at = ?", w.env.Clock.Now().Add(-10*time.Minute)).Where("request_id = ?", id).Exec(context.Background()); err != nil {
					t.Fatal(err)
				}
				inv := w.concluded(t, s.userID, id)
				status, out := w.send(t, s, with(body, "confirmRequestId", id))
				if e, _ := out["error"].(map[string]any); inv.State != store.InvFailed || status != 502 || !strings.Contains(fmt.Sprint(e["message"]), "never signed") {
					t.Fatalf("the abandoned send: %s; confirmed again: %d %v", inv.State, status, out)
				}
				// Recorded never signed (failed, no transaction), so that no later call signs it.
				rec, err := sends.New(w.env.App.Store).Get(context.Background(), id)
				if err != nil || rec.Status != sends.Failed || rec.TxHash != "" || rec.Nonce != nil || len(rec.Raw) != 0 || !strings.Contains(rec.Reason, "never signed") {
					t.Fatalf("the abandoned send's record: %+v (%v)", rec, err)
				}
				if w.sendRows(t, s.userID) != 1 || w.chain.BalanceAt(t, baseUSDC, s.evm) != 10_000_000 || w.events(t, s.userID, "wallet.failed") != 1 {
					t.Fatalf("the abandoned send moved something: %d sends, the wallet holds %d", w.sendRows(t, s.userID), w.chain.BalanceAt(t, baseUSDC, s.evm))
				}
				// A confirmation that read the send dispatching a moment before the follower
				// concluded it (its state put back, fresh, to stand for that read) signs nothing.
				if _, err := w.env.App.Store.DB().NewUpdate().Table("invocations").Set("state = ?", store.InvDispatching).
					Set("dispatched_at = ?", w.env.Clock.Now()).Where("request_id = ?", id).Exec(context.Background()); err != nil {
					t.Fatal(err)
				}
				status, out = w.send(t, s, with(body, "confirmRequestId", id))
				if e, _ := out["error"].(map[string]any); status != 502 || !strings.Contains(fmt.Sprint(e["message"]), "never signed") {
					t.Fatalf("a confirmation racing the follower: %d %v", status, out)
				}
				var nonce string
				w.chain.RPC(t, &nonce, "eth_getTransactionCount", s.evm, "latest")
				if nonce != "0x0" || w.sendRows(t, s.userID) != 1 || w.chain.BalanceAt(t, baseUSDC, s.evm) != 10_000_000 {
					t.Fatalf("a confirmation racing the follower signed: nonce %s, %d sends, the wallet holds %d", nonce, w.sendRows(t, s.userID), w.chain.BalanceAt(t, baseUSDC, s.evm))
				}
			})
			t.Run("reverted", func(t *testing.T) {
				s := w.sender(t, "revert@example.com", true, nil)
				q := w.quote(t, s, with(body, "amount", "6"))
				first := w.quote(t, s, with(body, "amount", "5"))["requestId"].(string)
				if status, out := w.send(t, s, with(with(body, "amount", "5"), "confirmRequestId", first)); status != 200 {
					t.Fatalf("the first send: %d %v", status, out)
				}
				// 6 quoted while 10 were held; 5 left now: its transfer reverts on chain.
				status, out := w.send(t, s, with(with(body, "amount", "6"), "confirmRequestId", q["requestId"]))
				if status != 200 || out["status"] != "submitted" {
					t.Fatalf("the doomed send is broadcast: %d %v", status, out)
				}
				inv := w.concluded(t, s.userID, q["requestId"].(string))
				w.concluded(t, s.userID, first)
				if inv.State != store.InvFailed || w.events(t, s.userID, "wallet.failed") != 1 || w.events(t, s.userID, "wallet.sent") != 1 {
					t.Fatalf("the reverted send: %s, %d wallet.failed", inv.State, w.events(t, s.userID, "wallet.failed"))
				}
				status, out = w.send(t, s, with(with(body, "amount", "6"), "confirmRequestId", q["requestId"]))
				if e, _ := out["error"].(map[string]any); status != 502 || e["code"] != "UPSTREAM" || !strings.Contains(fmt.Sprint(e["message"]), "reverted") {
					t.Fatalf("the repeated confirmation of a reverted send: %d %v", status, out)
				}
				if w.chain.BalanceAt(t, baseUSDC, s.evm) != 5_000_000 {
					t.Fatalf("the wallet holds %d, want 5000000", w.chain.BalanceAt(t, baseUSDC, s.evm))
				}
				// get_balances reads the wallet on base (Multicall3 placed on anvil).
				status, bal := w.env.REST(t, "GET", "/v1/balances?chains=base", s.key, nil)
				usdc := ""
				for _, b := range bal["balances"].([]any) {
					if row := b.(map[string]any); row["ticker"] == "USDC" && row["chain"] == "base" {
						usdc, _ = row["amount"].(string)
					}
				}
				if status != 200 || usdc != "5" {
					t.Fatalf("get_balances: USDC on base %q: %d %v", usdc, status, bal)
				}
			})
		})
	}
}

// TestWalletSendByElicitation: on MCP 2026-07-28 a host that declares elicitation is shown
// the send (amount, token, recipient, fee) as a form, and its user's approval sends it once,
// in the same call; on SQLite.
func TestWalletSendByElicitation(t *testing.T) {
	w := newSendWorld(t, "sqlite", false)
	s := w.sender(t, "elicit@example.com", true, nil)
	to := crypto.PubkeyToAddress(w.chain.NewKey(t).PublicKey)
	var asked []*mcp.ElicitParams
	opts := &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked = append(asked, req.Params)
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "approve"}}, nil
	}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1"}, opts).Connect(context.Background(), &mcp.StreamableClientTransport{
		Endpoint: w.env.URL + "/mcp", HTTPClient: &http.Client{Transport: keyHeader(s.key)}, DisableStandaloneSSE: true,
	}, &mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	out, e := apptest.CallTool(t, cs, "wallet_send", map[string]any{"chain": "base", "token": "USDC", "to": to.Hex(), "amount": "1.5"})
	if e != nil || out["status"] == nil || len(asked) != 1 {
		t.Fatalf("approved by elicitation: %v %v, asked %d", out, e, len(asked))
	}
	for _, want := range []string{"Send 1.5 USDC on base", to.Hex(), "Network fee"} {
		if !strings.Contains(asked[0].Message, want) {
			t.Errorf("the form does not show %q:\n%s", want, asked[0].Message)
		}
	}
	if got := w.chain.BalanceAt(t, baseUSDC, to); got != 1_500_000 || w.sendRows(t, s.userID) != 1 {
		t.Fatalf("the recipient holds %d, %d sends", got, w.sendRows(t, s.userID))
	}
}

// keyHeader sends the API key on every request, as a host configured with it does.
type keyHeader string

func (k keyHeader) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("x-api-key", string(k))
	return http.DefaultTransport.RoundTrip(r)
}

// TestWalletSendNativeOnASecondChain: with two anvil nodes as two balances chains (base at
// 8453, arbitrum at 42161), ETH sent on arbitrum moves exactly the amount there (the sender
// pays the gas beside it) and nothing on base, recorded on eip155:42161 with arbiscan's link;
// on both databases.
func TestWalletSendNativeOnASecondChain(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			w := newSendWorld(t, dialect, false, "arbitrum")
			s := w.sender(t, "eth@example.com", true, nil)
			to := crypto.PubkeyToAddress(w.arb.NewKey(t).PublicKey)
			eth := func(c *anviltest.Chain, a common.Address) *big.Int {
				var hex string
				c.RPC(t, &hex, "eth_getBalance", a, "latest")
				n, _ := new(big.Int).SetString(hex[2:], 16)
				return n
			}
			body := map[string]any{"chain": "arb", "token": "ETH", "to": strings.ToLower(to.Hex()), "amount": "0.0123"}
			q := w.quote(t, s, body)
			if q["chain"] != "arbitrum" || q["token"] != "ETH" || q["valueUsd"] == nil {
				t.Fatalf("quote %v", q)
			}
			status, out := w.send(t, s, with(body, "confirmRequestId", q["requestId"]))
			if status != 200 || out["chain"] != "arbitrum" {
				t.Fatalf("confirmed: %d %v", status, out)
			}
			rid, _ := q["requestId"].(string)
			w.concluded(t, s.userID, rid) // its receipt seen, then the balances
			want, _ := new(big.Int).SetString("12300000000000000", 10)
			if got := eth(w.arb, to); got.Cmp(want) != 0 {
				t.Fatalf("the recipient holds %s wei on arbitrum, want %s", got, want)
			}
			if spent := new(big.Int).Sub(big.NewInt(1e18), eth(w.arb, s.evm)); spent.Cmp(want) <= 0 {
				t.Fatalf("the sender spent %s wei: the amount and gas", spent)
			}
			if eth(w.chain, s.evm).Cmp(big.NewInt(1e18)) != 0 || eth(w.chain, to).Sign() != 0 {
				t.Fatal("something moved on base")
			}
			inv := w.concluded(t, s.userID, q["requestId"].(string))
			if inv.State != store.InvSucceeded || inv.Network == nil || *inv.Network != "eip155:42161" {
				t.Fatalf("the record %+v", inv)
			}
			_, again := w.send(t, s, with(body, "confirmRequestId", q["requestId"]))
			if again["explorerUrl"] != "https://arbiscan.io/tx/"+out["txHash"].(string) || eth(w.arb, to).Cmp(want) != 0 {
				t.Fatalf("the repeated confirmation: %v", again)
			}
		})
	}
}

// solanaUSDC is the registry's USDC mint, written into the SVM so that "USDC" on solana is it.
const solanaUSDC = "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v"

// TestWalletSendSPLCreatesTheAccount: USDC on Solana (the registry's mint, written into the
// litesvm harness) sent to a wallet without a token account creates it (its rent in the
// quote's fee) and moves exactly the amount; on both databases.
func TestWalletSendSPLCreatesTheAccount(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			w := newSendWorld(t, dialect, true)
			_, authority := svmtest.NewWallet(t)
			auth, _ := transfer.ParseKey(authority)
			data := make([]byte, 82)
			data[0] = 1 // mint authority: Some
			copy(data[4:36], auth[:])
			data[36+5] = 1 // supply 2^40
			data[44], data[45] = 6, 1
			w.svm.Call(t, nil, "svm_setAccount", solanaUSDC, 1_461_600, "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA", base64.StdEncoding.EncodeToString(data))
			s := w.sender(t, "spl@example.com", true, nil)
			w.svm.FundTokens(t, s.svm, solanaUSDC, 10_000_000)
			_, to := svmtest.NewWallet(t)
			c := transfer.NewClient(w.svm.URL, &http.Client{}, time.Now)
			held := func(owner string) uint64 {
				ata, err := transfer.TokenAccount(owner, solanaUSDC)
				if err != nil {
					t.Fatal(err)
				}
				a, err := c.AccountInfo(context.Background(), ata)
				if err != nil {
					t.Fatal(err)
				}
				if a == nil {
					return 0
				}
				return binary.LittleEndian.Uint64(a.Data[64:72])
			}
			body := map[string]any{"chain": "solana", "token": "USDC", "to": to, "amount": "1.5"}
			q := w.quote(t, s, body)
			if q["token"] != solanaUSDC || q["valueUsd"] != 1.499865 || q["gasUsd"].(float64) < 0.3 /* the new account's rent, 0.00203928 SOL */ {
				t.Fatalf("quote %v", q)
			}
			status, out := w.send(t, s, with(body, "confirmRequestId", q["requestId"]))
			if status != 200 || out["explorerUrl"] != "https://explorer.solana.com/tx/"+out["txHash"].(string) {
				t.Fatalf("confirmed: %d %v", status, out)
			}
			if held(to) != 1_500_000 || held(s.svm) != 8_500_000 {
				t.Fatalf("the recipient holds %d, the sender %d", held(to), held(s.svm))
			}
			if inv := w.concluded(t, s.userID, q["requestId"].(string)); inv.State != store.InvSucceeded {
				t.Fatalf("the record: %s", inv.State)
			}
		})
	}
}
