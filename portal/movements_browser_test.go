package portal_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/switchboard-hq/switchboard/cmd/switchboard/app"
	"github.com/switchboard-hq/switchboard/cmd/switchboard/app/apptest"
	"github.com/switchboard-hq/switchboard/contracts/anviltest"
	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/accounts"
	"github.com/switchboard-hq/switchboard/store/ledger"
)

// TestCallLogShowsMoneyMovements: in a real browser, a human buys credit with the dashboard's
// button (the embedded wallet on anvil), and the call log shows it as a top-up with its value,
// network and transaction (a local test network: the hash, no explorer link); a movement on
// Base links its transaction to Base's explorer; the kind filter keeps only top-ups.
func TestCallLogShowsMoneyMovements(t *testing.T) {
	chain := anviltest.Start(t)
	env := apptest.Start(t, apptest.Options{Config: func(c *app.Config) {
		c.FlatFee = app.FlatFeeConfig{RPCURL: chain.URL, ChainID: anviltest.ChainID, Token: chain.Token.Hex(), Payer: chain.Payer.Hex(),
			RelayerKey: hexutil.Encode(crypto.FromECDSA(chain.Relayer)), Confirmations: 1, PlatformUSD: "0.01", PayoutInterval: "0"}
		c.TopupMinUSD, c.TopupMaxUSD, c.TopupCapUSD = "1", "100", "1000"
	}})
	ctx := browser(t)
	do, text := steps(t, ctx)
	const email = "movements@example.com"
	do("sign in",
		chromedp.Navigate(env.URL+"/developer"),
		chromedp.WaitVisible(chromedp.CSS(`#email`)),
		chromedp.SendKeys(chromedp.CSS(`#email`), email),
		chromedp.Click(chromedp.CSS(`button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`#code`)))
	do("the code",
		chromedp.SendKeys(chromedp.CSS(`#code`), env.Inbox.Code(t, email, 1)),
		chromedp.Click(chromedp.CSS(`form[action="/developer/sign-in/code"] button`)),
		chromedp.WaitVisible(chromedp.CSS(`table`))) // the account page: the sign-in pages have none

	bg := context.Background()
	acct, err := accounts.New(env.App.Store).ByEmail(bg, email)
	if err != nil {
		t.Fatal(err)
	}
	ws, err := accounts.New(env.App.Store).Wallets(bg, acct.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range ws {
		if common.IsHexAddress(w.Address) {
			chain.Mint(t, common.HexToAddress(w.Address), 20_000_000)
		}
	}
	if err := accounts.New(env.App.Store).SetSigning(bg, acct.ID, true); err != nil {
		t.Fatal(err)
	}
	do("top up by button",
		chromedp.Navigate(env.URL+"/developer"),
		chromedp.WaitVisible(chromedp.CSS(`#topup-amount`)),
		chromedp.SetValue(chromedp.CSS(`#topup-amount`), "3"),
		chromedp.Click(chromedp.CSS(`form[action="/developer/credit/topup"] button`)),
	)
	// The answer's page, not the form's still on screen while it loads. Its text is read in the
	// same evaluation that finds it: a second query can meet a main the page has just replaced.
	var body string
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		got, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("main")?.innerText ?? ""`))
		if err == nil && strings.Contains(got, "Credit bought") {
			body = got
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the top-up button, no answer: %v %q", err, got)
		}
	}
	if !strings.Contains(body, "Credit bought: 3 USD") {
		t.Fatalf("after the top-up button: %q", body)
	}

	// Another movement as an x402 payment on Base records it (tools/billing writes it).
	network, tx := "eip155:8453", "0x"+strings.Repeat("5a", 32)
	now := time.Now().UTC()
	if err := env.App.Store.CreateInvocation(bg, &store.Invocation{RequestID: "00000000-0000-4000-8000-0000000000b5", AccountID: acct.ID,
		Handle: "x402_fetch", Args: "{}", Kind: store.KindX402, Network: &network, TxHash: &tx, ValueMicro: 250_000,
		Outcome: store.Outcome{State: store.InvSucceeded, FinishedAt: &now}, CreatedAt: now}, "paid"); err != nil {
		t.Fatal(err)
	}

	do("the call log",
		chromedp.Navigate(env.URL+"/developer/calls"),
		chromedp.WaitVisible(chromedp.CSS(`table.calls`)))
	screenshot(t, ctx, "calls-movements")
	topup := text(`table.calls tbody tr:nth-child(2)`) // newest first: the x402 payment, then the top-up
	if !strings.Contains(topup, "Top-up") || !strings.Contains(topup, "3 USD") || !strings.Contains(topup, "eip155:31337") || !strings.Contains(topup, "0x") {
		t.Fatalf("the top-up's row: %q", topup)
	}
	if n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("table.calls tbody tr:nth-child(2) td.tx a").length`)); err != nil || n != 0 {
		t.Fatalf("a local test network's transaction links out (%d links, %v)", n, err)
	}
	href, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("table.calls tbody tr:nth-child(1) td.tx a").getAttribute("href")`))
	if err != nil || href != "https://basescan.org/tx/"+tx {
		t.Fatalf("the Base payment's explorer link %q %v", href, err)
	}
	if row := text(`table.calls tbody tr:nth-child(1)`); !strings.Contains(row, "x402 payment") || !strings.Contains(row, "0.25 USD") {
		t.Fatalf("the x402 payment's row: %q", row)
	}

	do("only top-ups",
		chromedp.SetValue(chromedp.CSS(`#kind`), "topup"),
		chromedp.Click(chromedp.CSS(`form.calls-filter button[type=submit]`)),
		chromedp.WaitReady(chromedp.CSS(`#kind option[value="topup"][selected]`)), // the filtered page
		chromedp.WaitVisible(chromedp.CSS(`table.calls`)))
	if n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("table.calls tbody tr").length`)); err != nil || n != 1 || !strings.Contains(text(`table.calls tbody`), "Top-up") {
		t.Fatalf("filtered by kind topup: %d rows (%v): %q", n, err, text(`table.calls tbody`))
	}

	if err := env.App.Settled(bg); err != nil {
		t.Fatal(err)
	}
	if err := ledger.Check(bg, env.App.Store); err != nil {
		t.Fatalf("ledger-check: %v", err)
	}
}
