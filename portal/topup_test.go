package portal_test

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/switchboard-hq/switchboard/cmd/switchboard/app"
	"github.com/switchboard-hq/switchboard/cmd/switchboard/app/apptest"
	"github.com/switchboard-hq/switchboard/contracts/anviltest"
	"github.com/switchboard-hq/switchboard/store/accounts"
	"github.com/switchboard-hq/switchboard/store/ledger"
)

// The dashboard shows the balance and how to add credit: the x402 request for any wallet, and,
// once signing is on, a button that tops up from the embedded wallet (on a real chain), after
// which the balance shows the credit bought.
func TestDashboardAddsCredit(t *testing.T) {
	chain := anviltest.Start(t)
	env := apptest.Start(t, apptest.Options{Config: func(c *app.Config) {
		c.FlatFee = app.FlatFeeConfig{RPCURL: chain.URL, ChainID: anviltest.ChainID, Token: chain.Token.Hex(), Payer: chain.Payer.Hex(),
			RelayerKey: hexutil.Encode(crypto.FromECDSA(chain.Relayer)), Confirmations: 1, PlatformUSD: "0.01", PayoutInterval: "0"}
		c.TopupMinUSD, c.TopupMaxUSD, c.TopupCapUSD = "1", "100", "1000"
	}})
	const email = "owner@example.com"
	h := newHuman(t, env)
	h.signIn(email)
	_, body := h.get("/developer")
	if !strings.Contains(body, "Add credit") || !strings.Contains(body, "/v1/credit/topup") || !strings.Contains(body, "turn signing on") || strings.Contains(body, `action="/developer/credit/topup"`) {
		t.Fatalf("dashboard with signing off:\n%s", body)
	}
	acct, err := accounts.New(env.App.Store).ByEmail(context.Background(), email)
	if err != nil {
		t.Fatal(err)
	}
	ws, err := accounts.New(env.App.Store).Wallets(context.Background(), acct.ID)
	if err != nil {
		t.Fatal(err)
	}
	var evm string
	for _, w := range ws {
		if common.IsHexAddress(w.Address) {
			evm = w.Address
		}
	}
	chain.Mint(t, common.HexToAddress(evm), 20_000_000)
	if err := accounts.New(env.App.Store).SetSigning(context.Background(), acct.ID, true); err != nil {
		t.Fatal(err)
	}
	_, body = h.get("/developer")
	if !strings.Contains(body, `action="/developer/credit/topup"`) || !strings.Contains(body, "Top up from the embedded wallet") {
		t.Fatalf("dashboard with signing on has no top-up button:\n%s", body)
	}
	st, body := h.post("/developer/credit/topup", url.Values{"csrf": {h.csrf()}, "amountUsd": {"7.5"}}, false)
	if st != 200 || !strings.Contains(body, "Credit bought: 7.5 USD") || !strings.Contains(body, "17.5 USD available") {
		t.Fatalf("top-up by button: %d\n%s", st, body)
	}
	if chain.Balance(t, chain.Treasury) != 7_500_000 {
		t.Fatalf("the treasury holds %d, want 7500000", chain.Balance(t, chain.Treasury))
	}
	if err := env.App.Settled(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := ledger.Check(context.Background(), env.App.Store); err != nil {
		t.Fatalf("ledger-check: %v", err)
	}
}
