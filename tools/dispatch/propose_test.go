package dispatch_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
	sol "github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/programs/system"

	"github.com/switchboard-hq/switchboard/chain/solana/svmtest"
	"github.com/switchboard-hq/switchboard/cmd/switchboard/app/apptest"
	"github.com/switchboard-hq/switchboard/contracts/anviltest"
	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/accounts"
	"github.com/switchboard-hq/switchboard/store/invocations"
	"github.com/switchboard-hq/switchboard/store/sends"
	"github.com/switchboard-hq/switchboard/store/storetest"
	"github.com/switchboard-hq/switchboard/tools/partners/demo"
	"github.com/switchboard-hq/switchboard/tools/tokens/tokenstest"
)

// baseUSDC is the registry's USDC on base, where the test stablecoin's code is placed.
var baseUSDC = common.HexToAddress(demo.SendToken.Address)

// spender is who the /approve partner asks an unlimited allowance for.
const spender = "0x00000000000000000000000000000000000000aa"

// proposeWorld is the service with base served by anvil (chain id 8453, the test USDC at the
// registry's address) and prices from the fixtures, so @demo_send is offered; the world's
// partner serves /approve, which proposes an unlimited approval.
type proposeWorld struct {
	*world
	chain *anviltest.Chain
}

func newProposeWorld(t *testing.T, dialect string) *proposeWorld {
	t.Helper()
	return newProposeWorldAt(t, dialect, tokenstest.T0)
}

// newProposeWorldAt is newProposeWorld with its clock starting at start (zero: now, when the
// fixtures' prices are stale: what the wallet moves is unpriced).
func newProposeWorldAt(t *testing.T, dialect string, start time.Time) *proposeWorld {
	t.Helper()
	ch := anviltest.StartOn(t, 8453)
	ch.PlaceMulticall(t)
	ch.PlaceToken(t, baseUSDC)
	up := tokenstest.Start(t, map[string]int64{})
	w := newWorldOn(t, apptest.Options{Dialect: dialect, Start: start}, func(c *apptest.Config) {
		c.Tokens.RPCBase, c.DemoPartner = ch.URL, true
		c.Tokens.CoinGeckoURL, c.Tokens.DefiLlamaURL, c.Tokens.JupiterURL = up.CoinGecko.URL+"/api/v3", up.DefiLlama.URL, up.Jupiter.URL
	})
	return &proposeWorld{world: w, chain: ch}
}

// funded is the caller's embedded EVM wallet with 1 ETH and 10 USDC on base.
func (w *proposeWorld) funded(t *testing.T, accountID string) common.Address {
	t.Helper()
	ws, err := accounts.New(w.env.App.Store).Wallets(context.Background(), accountID)
	if err != nil {
		t.Fatal(err)
	}
	var addr common.Address
	for _, wl := range ws {
		if wl.Family == accounts.FamilyEVM {
			addr = common.HexToAddress(wl.Address)
		}
	}
	w.chain.SetBalance(t, addr, big.NewInt(1e18))
	w.chain.MintAt(t, baseUSDC, addr, 10_000_000)
	return addr
}

// eth is addr's native balance, wei.
func (w *proposeWorld) eth(t *testing.T, addr common.Address) *big.Int {
	t.Helper()
	var hex string
	w.chain.RPC(t, &hex, "eth_getBalance", addr.Hex(), "latest")
	n, ok := new(big.Int).SetString(strings.TrimPrefix(hex, "0x"), 16)
	if !ok {
		t.Fatalf("eth_getBalance %q", hex)
	}
	return n
}

func (w *proposeWorld) sendRows(t *testing.T, accountID string) []*sends.Send {
	t.Helper()
	var rows []*sends.Send
	if err := w.env.App.Store.DB().NewSelect().Model(&rows).Where("account_id = ?", accountID).Scan(context.Background()); err != nil {
		t.Fatal(err)
	}
	return rows
}

func (w *proposeWorld) concluded(t *testing.T, accountID, requestID string) *store.Invocation {
	t.Helper()
	for range 600 {
		inv, err := invocations.New(w.env.App.Store).Get(context.Background(), accountID, requestID)
		if err != nil {
			t.Fatal(err)
		}
		if store.StateOf(inv.State).Final {
			return inv
		}
		w.env.Clock.Advance(time.Second) // the follower takes sends last touched before now
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("proposals %s were not concluded", requestID)
	return nil
}

func refusal(t *testing.T, status int, out map[string]any, code string) map[string]any {
	t.Helper()
	e, _ := out["error"].(map[string]any)
	if e == nil || e["code"] != code {
		t.Fatalf("want %s: %d %v", code, status, out)
	}
	d, _ := e["details"].(map[string]any)
	return d
}

// The demo write intent's proposed transfer is simulated, shown decoded in a second
// confirmation, refused while signing is off, then confirmed, signed and landed: exactly the
// amount moves, once, whatever is confirmed again; the wallet pays the gas it actually cost
// and the partner call its fee as any call; on both databases.
func TestDemoSendProposalLands(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			w := newProposeWorld(t, dialect)
			wallet := w.funded(t, w.callerID)
			bob := crypto.PubkeyToAddress(w.chain.NewKey(t).PublicKey)
			msg := map[string]any{"message": "@demo_send send 2.5 USDC to bob", "args": map[string]any{"to": bob.Hex(), "amount": "2.5", "token": "USDC", "chain": "base"}}
			with := func(k string, v any) map[string]any {
				out := map[string]any{"message": msg["message"]}
				out[k] = v
				return out
			}
			// The write's quote, then its confirmation: the partner answers with a proposal.
			status, out := w.invoke(t, w.caller, msg)
			callID, _ := refusal(t, status, out, "CONFIRMATION_REQUIRED")["requestId"].(string)
			credit := w.credit(t)
			status, out = w.invoke(t, w.caller, with("confirmRequestId", callID))
			d := refusal(t, status, out, "CONFIRMATION_REQUIRED")
			propID, _ := d["requestId"].(string)
			txs, _ := d["transactions"].([]any)
			if propID == "" || propID == callID || len(txs) != 1 {
				t.Fatalf("the proposals' confirmation: %v", d)
			}
			eff := txs[0].(map[string]any)["effects"].([]any)[0].(map[string]any)
			if eff["kind"] != "transfer" || eff["recipient"] != strings.ToLower(bob.Hex()) || eff["amount"] != "2500000" || eff["token"] != strings.ToLower(baseUSDC.Hex()) || eff["unlimited"] != nil {
				t.Fatalf("the decoded effect: %v", eff)
			}
			if d["valueUsd"] != 2.49953 || d["call"].(map[string]any)["requestId"] != callID || charge(d["call"].(map[string]any))["gasMicro"] != float64(0) {
				t.Fatalf("the proposals' value and call: %v", d)
			}
			if spent := credit - w.credit(t); spent <= 0 {
				t.Fatalf("the partner call was not charged as any call (credit went down by %d)", spent)
			}
			if w.chain.BalanceAt(t, baseUSDC, bob) != 0 || len(w.sendRows(t, w.callerID)) != 0 {
				t.Fatal("something was signed before the confirmation")
			}
			// Signing off: refused, nothing signed, the proposals still confirmable.
			status, out = w.invoke(t, w.caller, with("confirmRequestId", propID))
			refusal(t, status, out, "FORBIDDEN")
			if len(w.sendRows(t, w.callerID)) != 0 {
				t.Fatal("signed with signing off")
			}
			if err := accounts.New(w.env.App.Store).SetSigning(context.Background(), w.callerID, true); err != nil {
				t.Fatal(err)
			}
			eth := w.eth(t, wallet)
			status, out = w.invoke(t, w.caller, with("confirmRequestId", propID))
			sent, _ := out["transactions"].([]any)
			if status != 200 || out["requestId"] != propID || len(sent) != 1 {
				t.Fatalf("the confirmed proposals: %d %v", status, out)
			}
			tx := sent[0].(map[string]any)
			hash, _ := tx["txHash"].(string)
			if (tx["status"] != "submitted" && tx["status"] != "confirmed") || len(hash) != 66 {
				t.Fatalf("the sent transaction: %v", tx)
			}
			inv := w.concluded(t, w.callerID, propID)
			if inv.State != store.InvSucceeded || inv.Kind != store.KindProposed || inv.ValueMicro != 2_499_530 || inv.TxHash == nil || *inv.TxHash != hash || inv.Handle != demo.SendHandle {
				t.Fatalf("the proposals' record %+v", inv)
			}
			if got := w.chain.BalanceAt(t, baseUSDC, bob); got != 2_500_000 || w.chain.BalanceAt(t, baseUSDC, wallet) != 7_500_000 {
				t.Fatalf("bob holds %d, want 2500000", got)
			}
			rows := w.sendRows(t, w.callerID)
			fee, ok := new(big.Int).SetString(rows[0].Fee, 10)
			if len(rows) != 1 || !ok || fee.Sign() <= 0 || new(big.Int).Sub(eth, w.eth(t, wallet)).Cmp(fee) != 0 {
				t.Fatalf("gas: the wallet paid %v wei, the record says %v (%d sends)", new(big.Int).Sub(eth, w.eth(t, wallet)), rows[0].Fee, len(rows))
			}
			// Confirmed again, by either request id: the same transaction, nothing sent twice.
			for _, id := range []string{propID, callID, propID} {
				status, again := w.invoke(t, w.caller, with("confirmRequestId", id))
				at := again["transactions"].([]any)[0].(map[string]any)
				if status != 200 || at["txHash"] != hash || at["status"] != "confirmed" || at["feeNative"] != rows[0].Fee || at["explorerUrl"] != "https://basescan.org/tx/"+hash {
					t.Fatalf("confirmed again with %s: %d %v", id, status, again)
				}
			}
			if len(w.sendRows(t, w.callerID)) != 1 || w.chain.BalanceAt(t, baseUSDC, bob) != 2_500_000 {
				t.Fatal("sent twice")
			}
			n, err := w.env.App.Store.DB().NewSelect().Model((*store.WebhookEvent)(nil)).Where("account_id = ? AND type = ?", w.callerID, "wallet.sent").Count(context.Background())
			if err != nil || n != 1 {
				t.Fatalf("%d wallet.sent events (%v), want 1", n, err)
			}
			// Proposals opened by a confirmation whose process stopped before signing: a retry
			// is never told success, nothing is signed, and the follower ends them failed.
			status, out = w.invoke(t, w.caller, msg)
			status, out = w.invoke(t, w.caller, with("confirmRequestId", refusal(t, status, out, "CONFIRMATION_REQUIRED")["requestId"]))
			stopped, _ := refusal(t, status, out, "CONFIRMATION_REQUIRED")["requestId"].(string)
			now := w.env.Clock.Now().UTC()
			if _, err := w.env.App.Store.DB().NewUpdate().Table("invocations").Set("state = ?", store.InvDispatching).Set("dispatched_at = ?", now).
				Where("request_id = ?", stopped).Exec(context.Background()); err != nil {
				t.Fatal(err)
			}
			status, out = w.invoke(t, w.caller, with("confirmRequestId", stopped))
			if refusal(t, status, out, "CONFLICT"); !strings.Contains(out["error"].(map[string]any)["message"].(string), "not signed") {
				t.Fatalf("the interrupted proposals: %d %v", status, out)
			}
			if inv := w.concluded(t, w.callerID, stopped); inv.State != store.InvFailed {
				t.Fatalf("the interrupted proposals ended %s", inv.State)
			}
			status, out = w.invoke(t, w.caller, with("confirmRequestId", stopped))
			if at := out["transactions"].([]any)[0].(map[string]any); status != 200 || out["success"] != false || at["status"] != "unsigned" {
				t.Fatalf("the interrupted proposals, concluded: %d %v", status, out)
			}
			if len(w.sendRows(t, w.callerID)) != 1 || w.chain.BalanceAt(t, baseUSDC, bob) != 2_500_000 {
				t.Fatal("the interrupted proposals were signed")
			}
			w.ledgerOK(t)
		})
	}
}

// A proposed unlimited approval is named unlimited (and unpriced) in its confirmation, and a
// policy denying its contract refuses it before anything is signed, saying so with the
// decoded effect; on both databases.
func TestUnlimitedApprovalProposalRefused(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			w := newProposeWorld(t, dialect)
			w.funded(t, w.callerID)
			if err := accounts.New(w.env.App.Store).SetSigning(context.Background(), w.callerID, true); err != nil {
				t.Fatal(err)
			}
			handle := w.publish(t, "@approver", "/approve", map[string]any{"category": "EXECUTE", "capabilities": []string{"MUTATES_USER_FUNDS"}})
			msg := map[string]any{"message": handle + " approve the router"}
			proposeOnce := func() (int, map[string]any) {
				status, out := w.invoke(t, w.caller, msg)
				id, _ := refusal(t, status, out, "CONFIRMATION_REQUIRED")["requestId"].(string)
				return w.invoke(t, w.caller, map[string]any{"message": msg["message"], "confirmRequestId": id})
			}
			effect := func(d map[string]any) map[string]any {
				return d["transactions"].([]any)[0].(map[string]any)["effects"].([]any)[0].(map[string]any)
			}
			// A key with "partner" alone may call the intent, but never have the wallet sign.
			_, k := w.env.REST(t, "POST", "/v1/keys", w.caller, map[string]any{"name": "no-send", "scopes": []string{"partner"}})
			partnerOnly, _ := k["secret"].(string)
			status, out := w.invoke(t, partnerOnly, msg)
			status, out = w.invoke(t, partnerOnly, map[string]any{"message": msg["message"], "confirmRequestId": refusal(t, status, out, "CONFIRMATION_REQUIRED")["requestId"]})
			if r := refusal(t, status, out, "FORBIDDEN"); r["call"] == nil || !strings.Contains(out["error"].(map[string]any)["message"].(string), `scope "send"`) {
				t.Fatalf("a partner-only key's proposals: %v", out)
			}
			status, out = proposeOnce()
			d := refusal(t, status, out, "CONFIRMATION_REQUIRED")
			e := effect(d)
			unpriced, _ := d["unpriced"].([]any)
			if e["kind"] != "approve" || e["unlimited"] != true || e["recipient"] != spender || e["token"] != strings.ToLower(baseUSDC.Hex()) ||
				len(unpriced) == 0 || !strings.Contains(unpriced[0].(string), "an unlimited approval of "+strings.ToLower(baseUSDC.Hex())+" to "+spender) {
				t.Fatalf("the unlimited approval's confirmation: %v", d)
			}
			if status, out := w.env.REST(t, "PUT", "/v1/policy", w.caller, map[string]any{"policy": map[string]any{"deny": map[string]any{"contracts": []string{baseUSDC.Hex()}}}}); status != 200 {
				t.Fatalf("policy_set: %d %v", status, out)
			}
			// Confirming the one shown before the policy: judged again, refused.
			status, out = w.invoke(t, w.caller, map[string]any{"message": msg["message"], "confirmRequestId": d["requestId"]})
			if r := refusal(t, status, out, "POLICY_DENIED"); r["rule"] != "deny.contracts" {
				t.Fatalf("the confirmation under the policy: %v", r)
			}
			// A new proposal: refused at once, the decoded effect shown.
			status, out = proposeOnce()
			r := refusal(t, status, out, "POLICY_DENIED")
			if r["rule"] != "deny.contracts" || effect(r)["unlimited"] != true {
				t.Fatalf("the refusal: %v", out)
			}
			if n := len(w.sendRows(t, w.callerID)); n != 0 {
				t.Fatalf("%d transactions signed", n)
			}
		})
	}
}

// Over MCP, a host that takes elicitation asks its user twice, the write's quote and then the
// proposed transfer decoded, and the call answers the signed transaction; on a session
// (2025-11-25) and in input_required results (2026-07-28).
func TestProposalByElicitation(t *testing.T) {
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(version, func(t *testing.T) {
			// On a session the question waits until the quote expires: the clock is now's.
			w := newProposeWorldAt(t, "sqlite", time.Time{})
			w.funded(t, w.callerID)
			if err := accounts.New(w.env.App.Store).SetSigning(context.Background(), w.callerID, true); err != nil {
				t.Fatal(err)
			}
			bob := crypto.PubkeyToAddress(w.chain.NewKey(t).PublicKey)
			cs, asked := connect(t, w.world, version, decide("approve"))
			out, e := callInvoke(t, cs, map[string]any{"message": "@demo_send 1 USDC to bob", "args": map[string]any{"to": bob.Hex(), "amount": "1", "token": "USDC", "chain": "base"}})
			if e != nil || len(*asked) != 2 {
				t.Fatalf("%v %v, asked %d times", out, e, len(*asked))
			}
			if m := (*asked)[1].Message; !strings.Contains(m, "@demo_send wants your wallet to sign 1 transaction(s)") || !strings.Contains(m, "send 1000000 units of token "+strings.ToLower(baseUSDC.Hex())+" to "+strings.ToLower(bob.Hex())) {
				t.Fatalf("the second question:\n%s", m)
			}
			sent, _ := out["transactions"].([]any)
			if len(sent) != 1 || sent[0].(map[string]any)["txHash"] == "" {
				t.Fatalf("the answer: %v", out)
			}
			w.chain.Mined(t, sent[0].(map[string]any)["txHash"].(string))
			if got := w.chain.BalanceAt(t, baseUSDC, bob); got != 1_000_000 || len(w.sendRows(t, w.callerID)) != 1 {
				t.Fatalf("bob holds %d, want 1000000", got)
			}
		})
	}
}

// A partner's proposed Solana transfer (a legacy message whose fee payer is the caller's
// wallet) is shown decoded, confirmed, signed over the partner's own bytes and lands: exactly
// the lamports move, and the wallet pays the 5,000-lamport fee; on both databases.
func TestSolanaProposalLands(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			svm := svmtest.Start(t)
			w := newWorldOn(t, apptest.Options{Dialect: dialect}, func(c *apptest.Config) { c.Tokens.SolanaRPC = svm.URL })
			ws, err := accounts.New(w.env.App.Store).Wallets(context.Background(), w.callerID)
			if err != nil {
				t.Fatal(err)
			}
			var wallet string
			for _, wl := range ws {
				if wl.Family == accounts.FamilySVM {
					wallet = wl.Address
				}
			}
			svm.Airdrop(t, wallet, 1_000_000_000)
			if err := accounts.New(w.env.App.Store).SetSigning(context.Background(), w.callerID, true); err != nil {
				t.Fatal(err)
			}
			_, bob := svmtest.NewWallet(t)
			w.solana = func(args []byte) string {
				var a struct{ From, To string }
				if err := json.Unmarshal(args, &a); err != nil {
					return ""
				}
				var bh struct {
					Value struct{ Blockhash string } `json:"value"`
				}
				svm.Call(t, &bh, "getLatestBlockhash")
				from := sol.MustPublicKeyFromBase58(a.From)
				tx, err := sol.NewTransaction([]sol.Instruction{system.NewTransferInstruction(200_000_000, from, sol.MustPublicKeyFromBase58(a.To)).Build()},
					sol.MustHashFromBase58(bh.Value.Blockhash), sol.TransactionPayer(from))
				if err != nil {
					return ""
				}
				tx.Signatures = make([]sol.Signature, 1)
				raw, _ := tx.MarshalBinary()
				return base64.StdEncoding.EncodeToString(raw)
			}
			schema := map[string]any{"type": "object", "properties": map[string]any{"from": map[string]any{"type": "string"}, "to": map[string]any{"type": "string"}},
				"required": []string{"from", "to"}}
			handle := w.publish(t, "@solsend", "/solpropose", map[string]any{"category": "EXECUTE", "capabilities": []string{"MUTATES_USER_FUNDS"}, "parametersSchema": schema})
			msg := handle + " 0.2 SOL to bob"
			status, out := w.invoke(t, w.caller, map[string]any{"message": msg, "args": map[string]any{"from": wallet, "to": bob}})
			status, out = w.invoke(t, w.caller, map[string]any{"message": msg, "confirmRequestId": refusal(t, status, out, "CONFIRMATION_REQUIRED")["requestId"]})
			d := refusal(t, status, out, "CONFIRMATION_REQUIRED")
			tx0 := d["transactions"].([]any)[0].(map[string]any)
			eff := tx0["effects"].([]any)[0].(map[string]any)
			if tx0["chain"] != "solana" || tx0["feeNative"] != "5000" || eff["kind"] != "native" || eff["recipient"] != bob || eff["native"] != "200000000" || eff["owner"] != wallet {
				t.Fatalf("the Solana proposal shown: %v", d)
			}
			status, out = w.invoke(t, w.caller, map[string]any{"message": msg, "confirmRequestId": d["requestId"]})
			sent, _ := out["transactions"].([]any)
			if status != 200 || len(sent) != 1 || sent[0].(map[string]any)["txHash"] == "" {
				t.Fatalf("the confirmed Solana proposal: %d %v", status, out)
			}
			var bal struct {
				Value uint64 `json:"value"`
			}
			svm.Call(t, &bal, "getBalance", bob)
			if bal.Value != 200_000_000 {
				t.Fatalf("bob holds %d lamports, want 200000000", bal.Value)
			}
			svm.Call(t, &bal, "getBalance", wallet)
			if bal.Value != 1_000_000_000-200_000_000-5_000 {
				t.Fatalf("the wallet holds %d lamports: the transfer and one 5000-lamport fee should have left it", bal.Value)
			}
			if n := len((&proposeWorld{world: w}).sendRows(t, w.callerID)); n != 1 {
				t.Fatalf("%d sends", n)
			}
		})
	}
}
