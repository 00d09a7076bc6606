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

	"github.com/switchboard-hq/switchboard/cmd/switchboard/app"
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
  invocation <request-id>                   what happened to a request: the invocation, its
                                            transitions and its ledger rows
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
	var want int // positional arguments
	switch sub {
	case "insert-listing":
		fs.StringVar(&file, "file", "-", "the JSON row; - reads stdin")
	case "set-verification", "set-active":
		want = 2
	case "show-listing", "invocation":
		want = 1
	case "credit":
		want = 2
	case "ledger-check", "sweep":
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
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(out)
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
	acct, err := a.Store.AccountByID(ctx, who)
	if errors.Is(err, store.ErrNotFound) {
		acct, err = a.Store.AccountByEmail(ctx, strings.ToLower(who))
	}
	if err != nil {
		return nil, fmt.Errorf("credit: no account %q: %w", who, err)
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
