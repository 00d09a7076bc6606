package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/switchboard-hq/switchboard/cmd/switchboard/app"
	"github.com/switchboard-hq/switchboard/contracts"
	"github.com/switchboard-hq/switchboard/contracts/anviltest"
	"github.com/switchboard-hq/switchboard/signing"
	"github.com/switchboard-hq/switchboard/signing/partnerexample"
	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/accounts"
	"github.com/switchboard-hq/switchboard/tools/partners/partnertest"
)

// TestAdminListing inserts a production listing from a JSON row, verifies it, activates it
// against a correct partner (the probe runs), and shows it: the operator's path in
// production, where the publish tools refuse.
func TestAdminListing(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("SWITCHBOARD_DATA_DIR", dir)
	t.Setenv("SWITCHBOARD_DATABASE_URL", "")
	t.Setenv("SWITCHBOARD_ENV", "production")
	t.Setenv("SWITCHBOARD_ALLOW_LOCAL_ENDPOINTS", "true") // the partner runs on loopback

	// The service's signing key, so the partner can verify; the partner's CA.
	key, _, err := signing.LoadOrCreatePrivateKey(filepath.Join(dir, "signing-key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	// Production is given its secrets: that key's file, a master key and a server secret.
	for _, kv := range productionSecrets(t) {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	t.Setenv("SWITCHBOARD_SIGNING_KEY_FILE", filepath.Join(dir, "signing-key.pem"))
	p := partnertest.Example(t, key.Public().(ed25519.PublicKey), partnerexample.DefaultHandle)
	caFile := filepath.Join(dir, "partner-ca.pem")
	os.WriteFile(caFile, partnertest.CAPEM(p.Server), 0o600)
	t.Setenv("SWITCHBOARD_PARTNER_CA_FILE", caFile)

	ctx := context.Background()
	run := func(stdin string, args ...string) (string, error) {
		var out, errOut bytes.Buffer
		err := runAdmin(ctx, mustConfig(t), args, strings.NewReader(stdin), &out, &errOut)
		return out.String(), err
	}
	// An account of this database owns the listing.
	if _, err := run("", "show-listing", "@nothing"); err == nil || !strings.Contains(err.Error(), "NOT_FOUND") {
		t.Fatalf("show missing: %v", err)
	}
	st, err := store.Open(ctx, "", dir)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	if err := accounts.New(st).Create(ctx, &accounts.Account{ID: "acct_partner", Email: "p@example.com", CreatedAt: now}, nil,
		&accounts.APIKey{ID: "k1", AccountID: "acct_partner", Name: "k", Prefix: "sb_live_x", Hash: "h", Scopes: []string{"publish"}, CreatedAt: now}); err != nil {
		t.Fatal(err)
	}
	st.Close()

	row := map[string]any{
		"ownerId": "acct_partner", "verificationStatus": "VERIFIED", "isCoreIntent": true,
		"publicIdentifier": "@example-echo", "name": "Echo", "description": "Echoes the query.", "category": "QUERY",
		"toolEndpoint": p.URL + partnerexample.RESTPath, "feeRate": 0, "parametersSchema": json.RawMessage(partnerexample.RESTParametersSchema),
	}
	raw, _ := json.Marshal(row)
	out, err := run(string(raw), "insert-listing")
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	json.Unmarshal([]byte(out), &got)
	if got["verificationStatus"] != "VERIFIED" || got["isCoreIntent"] != true || got["isActive"] != false || got["ownerId"] != "acct_partner" {
		t.Fatalf("inserted %s", out)
	}
	// The same validator: a bad row is refused with the reason.
	bad := strings.Replace(string(raw), `"QUERY"`, `"LEND"`, 1)
	if _, err := run(bad, "insert-listing"); err == nil || !strings.Contains(err.Error(), "category") {
		t.Fatalf("bad row: %v", err)
	}
	if _, err := run(`{"ownerId":"nobody","publicIdentifier":"@x-y-z","name":"n","description":"d","category":"QUERY","toolEndpoint":"https://a.example/","feeRate":0}`, "insert-listing"); err == nil || !strings.Contains(err.Error(), "no account") {
		t.Fatalf("unknown owner: %v", err)
	}
	file := filepath.Join(dir, "row.json")
	os.WriteFile(file, []byte(strings.Replace(string(raw), "@example-echo", "@example-two", 1)), 0o600)
	if _, err := run("", "insert-listing", "-file", file); err != nil {
		t.Fatalf("insert from file: %v", err)
	}

	out, err = run("", "set-verification", "@example-echo", "PREMIUM")
	if err != nil || !strings.Contains(out, `"verificationStatus": "PREMIUM"`) {
		t.Fatalf("set-verification: %s %v", out, err)
	}
	if _, err := run("", "set-verification", "@example-echo", "GOLD"); err == nil {
		t.Fatal("unknown status accepted")
	}
	out, err = run("", "set-active", "@example-echo", "true")
	if err != nil || !strings.Contains(out, `"isActive": true`) || !strings.Contains(out, `"verdict": "PASS"`) {
		t.Fatalf("set-active: %s %v", out, err)
	}
	out, err = run("", "show-listing", "@example-echo")
	if err != nil || !strings.Contains(out, `"isActive": true`) {
		t.Fatalf("show-listing: %s %v", out, err)
	}
	out, err = run("", "set-active", "@example-echo", "false")
	if err != nil || !strings.Contains(out, `"isActive": false`) {
		t.Fatalf("deactivate: %s %v", out, err)
	}
	if _, err := run("", "frobnicate"); err == nil {
		t.Fatal("unknown command accepted")
	}
}

func mustConfig(t *testing.T) app.Config {
	t.Helper()
	cfg, err := app.FromEnv(os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// The admin command is reached from main's dispatcher.
func TestAdminDispatch(t *testing.T) {
	t.Setenv("SWITCHBOARD_DATA_DIR", t.TempDir())
	var out, errOut bytes.Buffer
	err := run(context.Background(), []string{"admin", "show-listing", "@missing"}, &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), "no intent") {
		t.Fatalf("admin via run: %v (%s)", err, errOut.String())
	}
	if err := run(context.Background(), []string{"admin", "help"}, &out, &errOut); err != nil || !strings.Contains(errOut.String(), "insert-listing") {
		t.Fatalf("admin help: %v", err)
	}
}

// TestAdminCredit adds credit by e-mail, checks the ledger, and looks up a request.
func TestAdminCredit(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("SWITCHBOARD_DATA_DIR", dir)
	t.Setenv("SWITCHBOARD_DATABASE_URL", "")
	ctx := context.Background()
	st, err := store.Open(ctx, "", dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	if err := accounts.New(st).Create(ctx, &accounts.Account{ID: "acct_1", Email: "buyer@example.com", CreatedAt: now}, nil,
		&accounts.APIKey{ID: "k1", AccountID: "acct_1", Name: "k", Prefix: "sb_test_x", Hash: "h", Scopes: []string{"partner"}, CreatedAt: now}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	run := func(args ...string) (map[string]any, error) {
		var out, errOut bytes.Buffer
		if err := runAdmin(ctx, mustConfig(t), args, strings.NewReader(""), &out, &errOut); err != nil {
			return nil, err
		}
		var m map[string]any
		if err := json.Unmarshal(out.Bytes(), &m); err != nil {
			t.Fatalf("%v: output not JSON: %q", args, out.String())
		}
		return m, nil
	}
	for i, want := range []float64{2.5, 3.75} {
		out, err := run("credit", "Buyer@Example.com", []string{"2.5", "1.25"}[i])
		if err != nil || out["availableUsd"] != want || out["accountId"] != "acct_1" {
			t.Fatalf("credit %d: %v %v", i, out, err)
		}
	}
	for _, bad := range []string{"-1", "0", "1.0000001", "ten"} {
		if _, err := run("credit", "acct_1", bad); err == nil {
			t.Errorf("credit %s accepted", bad)
		}
	}
	if _, err := run("credit", "nobody@example.com", "1"); err == nil {
		t.Error("credit to an unknown account accepted")
	}
	if out, err := run("ledger-check"); err != nil || out["ledger"] != "ok" {
		t.Fatalf("ledger-check: %v %v", out, err)
	}
	if _, err := run("invocation", "00000000-0000-4000-8000-000000000000"); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("unknown invocation: %v", err)
	}
	// Fee tiers: only configured ones, stored on the account.
	if out, err := run("set-tier", "buyer@example.com", "pro"); err != nil || out["tier"] != "pro" || out["platformFeeBps"] != 15.0 {
		t.Fatalf("set-tier pro: %v %v", out, err)
	}
	if _, err := run("set-tier", "acct_1", "platinum"); err == nil || !strings.Contains(err.Error(), "enterprise, pro, standard") {
		t.Fatalf("set-tier to an unknown tier: %v", err)
	}
	// Spend policies: the operator sets (and may loosen) an account's; a malformed one is refused.
	polFile := filepath.Join(t.TempDir(), "policy.json")
	if err := os.WriteFile(polFile, []byte(`{"caps":[{"window":"day","usd":"20"}],"perCallMaxUsd":"0.50"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := run("set-policy", "buyer@example.com", polFile); err != nil || out["account"].(map[string]any)["perCallMaxUsd"] != "0.50" {
		t.Fatalf("set-policy: %v %v", out, err)
	}
	if err := os.WriteFile(polFile, []byte(`{"caps":[{"window":"day","usd":"0"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := run("set-policy", "buyer@example.com", polFile); err == nil || !strings.Contains(err.Error(), "caps[0].usd is 0") {
		t.Fatalf("set-policy with a zero cap: %v", err)
	}
	if err := os.WriteFile(polFile, []byte(`null`), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := run("set-policy", "buyer@example.com", polFile); err != nil || out["account"] != nil {
		t.Fatalf("set-policy null: %v %v", out, err)
	}
	// A balance that its ledger does not explain fails ledger-check (the exit status).
	st, err = store.Open(ctx, "", dir)
	if err != nil {
		t.Fatal(err)
	}
	if acct, _ := accounts.New(st).ByID(ctx, "acct_1"); acct.Tier != "pro" {
		t.Fatalf("tier stored: %q", acct.Tier)
	}
	if err := st.InTx(ctx, func(ctx context.Context, q *store.Q) error {
		return q.AdjustCredit(ctx, "acct_1", store.CreditDelta{Available: 7}, now)
	}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	if _, err := run("ledger-check"); err == nil || !strings.Contains(err.Error(), "user:acct_1:available") {
		t.Fatalf("ledger-check on a broken ledger: %v", err)
	}
}

// `admin sweep` concludes abandoned work now and says how much; on a clean database, nothing.
func TestAdminSweep(t *testing.T) {
	t.Setenv("SWITCHBOARD_DATA_DIR", t.TempDir())
	t.Setenv("SWITCHBOARD_DATABASE_URL", "")
	var out, errOut bytes.Buffer
	if err := runAdmin(context.Background(), mustConfig(t), []string{"sweep"}, strings.NewReader(""), &out, &errOut); err != nil {
		t.Fatalf("sweep: %v %s", err, errOut.String())
	}
	var got map[string]int
	if err := json.Unmarshal(out.Bytes(), &got); err != nil || got["concludedDispatches"] != 0 || got["refundedReservations"] != 0 || len(got) != 2 {
		t.Fatalf("sweep output: %s %v", out.String(), err)
	}
}

// An operator grant is bounded before anything is written: the amount that once overflowed a
// SQLite balance (and broke the account and the ledger check) is refused, as is one over the
// per-grant maximum; the account and the ledger stay sound.
func TestAdminCreditIsBounded(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("SWITCHBOARD_DATA_DIR", dir)
	t.Setenv("SWITCHBOARD_DATABASE_URL", "")
	ctx := context.Background()
	run := func(args ...string) (string, error) {
		var out, errOut bytes.Buffer
		err := runAdmin(ctx, mustConfig(t), args, strings.NewReader(""), &out, &errOut)
		return out.String(), err
	}
	run("ledger-check") // creates and migrates the database
	st, err := store.Open(ctx, "", dir)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	if err := accounts.New(st).Create(ctx, &accounts.Account{ID: "acct_rich", Email: "rich@example.com", CreatedAt: now}, nil,
		&accounts.APIKey{ID: "k1", AccountID: "acct_rich", Name: "k", Prefix: "sb_test_x", Hash: "h", Scopes: []string{"read"}, CreatedAt: now}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	for amount, want := range map[string]string{
		"9223372036854.775807": "maximum",
		"1000000.000001":       "at most 1000000",
		"-5":                   "positive",
	} {
		if out, err := run("credit", "rich@example.com", amount); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("credit %s: %q %v, want an error saying %q", amount, out, err, want)
		}
	}
	if out, err := run("credit", "rich@example.com", "1000000"); err != nil || !strings.Contains(out, `"availableUsd": 1000000`) {
		t.Fatalf("credit at the maximum: %q %v", out, err)
	}
	if out, err := run("ledger-check"); err != nil || !strings.Contains(out, "ok") {
		t.Fatalf("ledger-check after refused grants: %q %v", out, err)
	}
}

// `admin deploy-payer -test-token` deploys both contracts on a real node and prints settings
// that work: `admin payout` with them runs (nothing accrued: nothing paid).
func TestAdminDeployPayerAndPayout(t *testing.T) {
	chain := anviltest.Start(t)
	t.Setenv("SWITCHBOARD_DATA_DIR", t.TempDir())
	t.Setenv("SWITCHBOARD_DATABASE_URL", "")
	t.Setenv("SWITCHBOARD_FLATFEE_RPC_URL", chain.URL)
	t.Setenv("SWITCHBOARD_FLATFEE_CHAIN_ID", fmt.Sprint(anviltest.ChainID))
	t.Setenv("SWITCHBOARD_FLATFEE_RELAYER_KEY", hexutil.Encode(crypto.FromECDSA(chain.Relayer)))
	t.Setenv("SWITCHBOARD_FLATFEE_TREASURY", chain.Treasury.Hex())
	var out, errOut bytes.Buffer
	if err := runAdmin(context.Background(), mustConfig(t), []string{"deploy-payer", "-test-token"}, strings.NewReader(""), &out, &errOut); err != nil {
		t.Fatalf("deploy-payer: %v %s", err, errOut.String())
	}
	var settings map[string]string
	if err := json.Unmarshal(out.Bytes(), &settings); err != nil || !common.IsHexAddress(settings["SWITCHBOARD_FLATFEE_PAYER"]) || !common.IsHexAddress(settings["SWITCHBOARD_FLATFEE_TOKEN"]) {
		t.Fatalf("settings: %s %v", out.String(), err)
	}
	got, err := chain.Client.Call(context.Background(), common.HexToAddress(settings["SWITCHBOARD_FLATFEE_PAYER"]), contracts.FlatFeePayer, "treasury")
	if err != nil || got[0].(common.Address) != chain.Treasury {
		t.Fatalf("the deployed payer's treasury: %v %v", got, err)
	}
	t.Setenv("SWITCHBOARD_FLATFEE_TOKEN", settings["SWITCHBOARD_FLATFEE_TOKEN"])
	t.Setenv("SWITCHBOARD_FLATFEE_PAYER", settings["SWITCHBOARD_FLATFEE_PAYER"])
	out.Reset()
	if err := runAdmin(context.Background(), mustConfig(t), []string{"payout"}, strings.NewReader(""), &out, &errOut); err != nil || !strings.Contains(out.String(), `"payouts": []`) {
		t.Fatalf("payout: %q %v %s", out.String(), err, errOut.String())
	}
	t.Setenv("SWITCHBOARD_FLATFEE_TREASURY", "nope")
	if err := runAdmin(context.Background(), mustConfig(t), []string{"deploy-payer"}, strings.NewReader(""), &out, &errOut); err == nil {
		t.Fatal("deploy-payer without a treasury address")
	}
}

// TestAdminCommandsHaveHelp: every subcommand answers --help with its synopsis and what it
// does, and runs nothing; 'admin help' lists every one.
func TestAdminCommandsHaveHelp(t *testing.T) {
	var list, errOut bytes.Buffer
	if err := run(context.Background(), []string{"admin", "help"}, &list, &errOut); err != nil {
		t.Fatal(err)
	}
	for _, c := range allAdminCommands() {
		if !strings.Contains(errOut.String(), c.synopsis()) {
			t.Errorf("admin help does not list %q", c.synopsis())
		}
		var out, help bytes.Buffer
		if err := runAdmin(context.Background(), app.Config{}, []string{c.name, "--help"}, strings.NewReader(""), &out, &help); err != nil {
			t.Errorf("%s --help: %v", c.name, err)
		}
		if !strings.Contains(help.String(), "usage: switchboard admin "+c.synopsis()) || !strings.Contains(help.String(), c.help) || out.Len() != 0 {
			t.Errorf("%s --help printed %q (stdout %q)", c.name, help.String(), out.String())
		}
	}
}
