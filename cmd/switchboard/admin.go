package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/switchboard-hq/switchboard/cmd/switchboard/app"
	"github.com/switchboard-hq/switchboard/contracts"
	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/partners"
)

const adminUsage = `usage: switchboard admin <command> [flags] [args]

Operator commands on the configured database (SWITCHBOARD_DATABASE_URL, SWITCHBOARD_ENV, ...).
Partner publishing is live on the test environment; production listings are inserted here.

commands:
  insert-listing [-file row.json]           insert a partner intent from a JSON row (stdin by default):
                                            the partner_publish_intent fields plus ownerId (an account id
                                            of this database), optional verificationStatus (UNVERIFIED,
                                            VERIFIED, PREMIUM; default UNVERIFIED) and isCoreIntent.
                                            Same validator as publishing, no rate limit; starts inactive.
  set-verification <id|@handle> <status>    set verificationStatus: UNVERIFIED, VERIFIED or PREMIUM
  set-active <id|@handle> <true|false>      activate (after the negative-auth probe passes) or deactivate
  show-listing <id|@handle>                 print a listing
  credit <account-id|e-mail> <usd>          add credit to an account (decimal USD, up to 6 places)
  set-tier <account-id|e-mail> <tier>       set an account's fee tier (one of SWITCHBOARD_FEE_TIERS):
                                            the platform's basis points on the value its calls route
  invocation <request-id>                   what happened to a request: the invocation, its
                                            transitions and its ledger rows
  deploy-payer [-test-token]                deploy the FlatFeePayer on SWITCHBOARD_FLATFEE_RPC_URL (relayer: the
                                            SWITCHBOARD_FLATFEE_RELAYER_KEY's address; treasury:
                                            SWITCHBOARD_FLATFEE_TREASURY; token: SWITCHBOARD_FLATFEE_TOKEN, or with
                                            -test-token a fresh TestUSDC) and print the settings to use
  rotate-key [-retire]                      rotate the service's signing key in steps: publish the next key (key set at
                                            /.well-known/service-keys), then, run again after an hour and 5 minutes,
                                            switch signing to it (the old key stays published as previous, for
                                            receipts); -retire stops publishing the previous key
  payout                                    pay partners' accrued per-call fees in the stablecoin now
                                            (serve does it every SWITCHBOARD_PAYOUT_INTERVAL)
  ledger-check                              verify the ledger's invariants (balanced, matching balances)
  sweep                                     conclude dispatches a crash abandoned and refund reservations
                                            nobody settled, now (serve does it every 30 s)

Each prints the listing as JSON. The service settings are flags too (see 'switchboard serve --help').
`

// listingRow is insert-listing's input: the publish fields plus what only the operator sets.
type listingRow struct {
	partners.IntentInput
	OwnerID            string `json:"ownerId"`
	VerificationStatus string `json:"verificationStatus,omitempty"`
	IsCoreIntent       bool   `json:"isCoreIntent,omitempty"`
}

// runAdmin runs `switchboard admin ...`.
func runAdmin(ctx context.Context, cfg app.Config, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprint(stderr, adminUsage)
		if len(args) == 0 {
			return errors.New("no admin command")
		}
		return nil
	}
	sub := args[0]
	fs := flag.NewFlagSet("switchboard admin "+sub, flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg.RegisterFlags(fs, true)
	var file string
	var testToken, retire bool
	var want int // positional arguments
	switch sub {
	case "insert-listing":
		fs.StringVar(&file, "file", "-", "the JSON row; - reads stdin")
	case "set-verification", "set-active":
		want = 2
	case "show-listing", "invocation":
		want = 1
	case "credit", "set-tier":
		want = 2
	case "ledger-check", "sweep", "payout":
	case "rotate-key":
		fs.BoolVar(&retire, "retire", false, "stop publishing the previous key")
	case "deploy-payer":
		fs.BoolVar(&testToken, "test-token", false, "also deploy a TestUSDC (test networks only) and use it")
	default:
		fmt.Fprint(stderr, adminUsage)
		return fmt.Errorf("unknown admin command %q", sub)
	}
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if fs.NArg() != want {
		fs.Usage()
		return fmt.Errorf("admin %s takes %d argument(s), got %d", sub, want, fs.NArg())
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	if sub == "deploy-payer" {
		out, err := deployPayer(ctx, cfg, testToken)
		if err != nil {
			return err
		}
		return printJSON(stdout, out)
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	a, err := app.Build(ctx, cfg, app.Deps{Log: log})
	if err != nil {
		return err
	}
	defer a.Close()
	svc := a.Partners

	var out any
	switch sub {
	case "insert-listing":
		row, err := readRow(file, stdin)
		if err != nil {
			return err
		}
		if row.OwnerID == "" {
			return errors.New("the row needs ownerId: the account id of the partner in this database")
		}
		if row.VerificationStatus == "" {
			row.VerificationStatus = partners.StatusUnverified
		}
		out, err = svc.Insert(ctx, row.OwnerID, row.IntentInput, row.VerificationStatus, row.IsCoreIntent)
		if err != nil {
			return describe(err)
		}
	case "set-verification":
		out, err = svc.SetVerificationStatus(ctx, fs.Arg(0), fs.Arg(1))
		if err != nil {
			return describe(err)
		}
	case "set-active":
		active, perr := strconv.ParseBool(fs.Arg(1))
		if perr != nil {
			return fmt.Errorf("set-active: %q is not true or false", fs.Arg(1))
		}
		row, err := svc.Lookup(ctx, fs.Arg(0))
		if err != nil {
			return describe(err)
		}
		res, err := svc.SetActive(ctx, row, active)
		if err != nil {
			return describe(err)
		}
		out = res
	case "show-listing":
		row, err := svc.Lookup(ctx, fs.Arg(0))
		if err != nil {
			return describe(err)
		}
		out = partners.IntentOf(row)
	case "credit":
		if out, err = credit(ctx, a, fs.Arg(0), fs.Arg(1)); err != nil {
			return err
		}
	case "set-tier":
		if out, err = setTier(ctx, a, fs.Arg(0), fs.Arg(1)); err != nil {
			return err
		}
	case "invocation":
		if out, err = invocation(ctx, a, fs.Arg(0)); err != nil {
			return err
		}
	case "ledger-check":
		if err := a.Store.LedgerCheck(ctx); err != nil {
			return err
		}
		out = map[string]string{"ledger": "ok"}
	case "sweep":
		recovered, refunded, err := a.Sweep(ctx)
		if err != nil {
			return err
		}
		out = map[string]int{"concludedDispatches": recovered, "refundedReservations": refunded}
	case "rotate-key":
		if retire {
			n, err := a.Keys.Retire(ctx)
			if err != nil {
				return err
			}
			out = map[string]any{"action": "retired", "retired": n}
			break
		}
		step, err := a.Keys.Rotate(ctx)
		if err != nil {
			return describe(err)
		}
		out = step
	case "payout":
		if a.Payments == nil {
			return errors.New("payout needs the flat-fee network: set SWITCHBOARD_FLATFEE_RPC_URL and the other SWITCHBOARD_FLATFEE_* settings")
		}
		paid, err := a.Payments.Payouts(ctx)
		if err != nil {
			return err
		}
		if paid == nil {
			paid = []*store.Payout{}
		}
		out = map[string]any{"payouts": paid}
	}
	return printJSON(stdout, out)
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// deployPayer deploys the FlatFeePayer (and, for a test network, a TestUSDC) with the relayer
// key and prints the settings that point Switchboard at them.
func deployPayer(ctx context.Context, cfg app.Config, testToken bool) (any, error) {
	f := cfg.FlatFee
	if f.RPCURL == "" || f.ChainID == 0 {
		return nil, errors.New("deploy-payer needs SWITCHBOARD_FLATFEE_RPC_URL and SWITCHBOARD_FLATFEE_CHAIN_ID")
	}
	key, err := crypto.HexToECDSA(strings.TrimPrefix(f.RelayerKey, "0x"))
	if err != nil {
		return nil, fmt.Errorf("SWITCHBOARD_FLATFEE_RELAYER_KEY: want a hex secp256k1 private key: %w", err)
	}
	if !common.IsHexAddress(f.Treasury) {
		return nil, fmt.Errorf("SWITCHBOARD_FLATFEE_TREASURY=%q: want the 0x address the platform's share settles to", f.Treasury)
	}
	c, err := contracts.Dial(ctx, f.RPCURL, int64(f.ChainID), key, f.Confirmations)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	token := f.Token
	if testToken {
		addr, err := c.Deploy(ctx, contracts.TestUSDC)
		if err != nil {
			return nil, fmt.Errorf("deploy TestUSDC: %w", err)
		}
		token = addr.Hex()
	}
	if !common.IsHexAddress(token) {
		return nil, fmt.Errorf("SWITCHBOARD_FLATFEE_TOKEN=%q: want the stablecoin's 0x address, or pass -test-token", token)
	}
	payer, err := c.Deploy(ctx, contracts.FlatFeePayer, common.HexToAddress(token), c.From(), common.HexToAddress(f.Treasury))
	if err != nil {
		return nil, fmt.Errorf("deploy FlatFeePayer: %w", err)
	}
	return map[string]string{"SWITCHBOARD_FLATFEE_CHAIN_ID": fmt.Sprint(f.ChainID), "SWITCHBOARD_FLATFEE_TOKEN": token,
		"SWITCHBOARD_FLATFEE_PAYER": payer.Hex(), "relayer": c.From().Hex(), "treasury": common.HexToAddress(f.Treasury).Hex()}, nil
}

func readRow(file string, stdin io.Reader) (*listingRow, error) {
	var raw []byte
	var err error
	if file == "-" {
		raw, err = io.ReadAll(io.LimitReader(stdin, 1<<20))
	} else {
		raw, err = os.ReadFile(file)
	}
	if err != nil {
		return nil, fmt.Errorf("read the row: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	row := new(listingRow)
	if err := dec.Decode(row); err != nil {
		return nil, fmt.Errorf("the row is not a listing (publish fields, ownerId, verificationStatus, isCoreIntent): %w", err)
	}
	return row, nil
}

// describe turns a tool error into a plain message with its details.
func describe(err error) error {
	e := tools.Translate(err)
	if len(e.Details) == 0 {
		return fmt.Errorf("%s: %s", e.Code, e.Message)
	}
	d, _ := json.Marshal(e.Details)
	return fmt.Errorf("%s: %s\ndetails: %s", e.Code, e.Message, d)
}

// credit grants USD to an account named by id or e-mail and returns its balance.
func credit(ctx context.Context, a *app.App, who, usd string) (any, error) {
	var amount tools.USD
	if err := json.Unmarshal([]byte(usd), &amount); err != nil {
		return nil, fmt.Errorf("credit: %q: %v", usd, err)
	}
	if amount <= 0 {
		return nil, fmt.Errorf("credit: %q: the amount must be positive", usd)
	}
	acct, err := accountOf(ctx, a, who)
	if err != nil {
		return nil, fmt.Errorf("credit: %w", err)
	}
	if err := a.Billing.Grant(ctx, acct.ID, amount.Micro(), "operator credit"); err != nil {
		return nil, err
	}
	ca, err := a.Store.Credit(ctx, acct.ID)
	if err != nil {
		return nil, err
	}
	return map[string]any{"accountId": acct.ID, "creditedUsd": amount, "availableUsd": tools.USD(ca.AvailableMicro), "reservedUsd": tools.USD(ca.ReservedMicro)}, nil
}

// accountOf finds an account by id or e-mail.
func accountOf(ctx context.Context, a *app.App, who string) (*store.Account, error) {
	acct, err := a.Store.AccountByID(ctx, who)
	if errors.Is(err, store.ErrNotFound) {
		acct, err = a.Store.AccountByEmail(ctx, strings.ToLower(who))
	}
	if err != nil {
		return nil, fmt.Errorf("no account %q: %w", who, err)
	}
	return acct, nil
}

// setTier moves an account to a fee tier.
func setTier(ctx context.Context, a *app.App, who, tier string) (any, error) {
	acct, err := accountOf(ctx, a, who)
	if err != nil {
		return nil, fmt.Errorf("set-tier: %w", err)
	}
	if err := a.Billing.SetTier(ctx, acct.ID, tier); err != nil {
		return nil, describe(err)
	}
	return map[string]any{"accountId": acct.ID, "tier": tier, "platformFeeBps": a.Billing.Config().TierBps[tier]}, nil
}

// invocation gathers everything recorded about one request.
func invocation(ctx context.Context, a *app.App, requestID string) (any, error) {
	inv, err := a.Store.InvocationByID(ctx, requestID)
	if err != nil {
		return nil, fmt.Errorf("invocation %s: %w", requestID, err)
	}
	events, err := a.Store.InvocationEvents(ctx, requestID)
	if err != nil {
		return nil, err
	}
	ledger, err := a.Store.LedgerEntries(ctx, requestID)
	if err != nil {
		return nil, err
	}
	return map[string]any{"invocation": inv, "events": events, "ledger": ledger}, nil
}
