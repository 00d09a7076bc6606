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
	"github.com/switchboard-hq/switchboard/cmd/switchboard/app"
	"github.com/switchboard-hq/switchboard/contracts"
	"github.com/switchboard-hq/switchboard/store/payouts"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/billing"
	"github.com/switchboard-hq/switchboard/tools/partners"
)

// adminCommand is one `switchboard admin` subcommand: its synopsis and help, its flags, and
// what it does with the built service.
type adminCommand struct {
	name  string
	args  []string // positional arguments, by name
	help  string   // what it does, for 'admin help' and 'admin <name> --help'
	flags func(fs *flag.FlagSet, o *adminOptions)
	// run does the command through the service's operator facade; adm is nil for commands that
	// do not need the service (noApp).
	run   func(ctx context.Context, adm *app.Admin, o *adminOptions, args []string) (any, error)
	noApp bool
}

// adminOptions are the subcommands' own flags, and what they read.
type adminOptions struct {
	cfg       app.Config
	stdin     io.Reader
	file      string
	testToken bool
	retire    bool
	keyID     string
}

// adminCommands is every `switchboard admin` subcommand, in the order help lists them.
var adminCommands = []adminCommand{
	{name: "insert-listing", help: "insert a partner intent from a JSON row (stdin by default): the partner_publish_intent fields plus " +
		"ownerId (an account id of this database), optional verificationStatus (UNVERIFIED, VERIFIED, PREMIUM; default UNVERIFIED) " +
		"and isCoreIntent. Same validator as publishing, no rate limit; starts inactive",
		flags: func(fs *flag.FlagSet, o *adminOptions) {
			fs.StringVar(&o.file, "file", "-", "the JSON row; - reads stdin")
		},
		run: func(ctx context.Context, adm *app.Admin, o *adminOptions, _ []string) (any, error) {
			row, err := readRow(o.file, o.stdin)
			if err != nil {
				return nil, err
			}
			if row.OwnerID == "" {
				return nil, errors.New("the row needs ownerId: the account id of the partner in this database")
			}
			if row.VerificationStatus == "" {
				row.VerificationStatus = partners.StatusUnverified
			}
			return described(adm.InsertListing(ctx, row.OwnerID, row.IntentInput, row.VerificationStatus, row.IsCoreIntent))
		}},
	{name: "set-verification", args: []string{"id|@handle", "status"}, help: "set verificationStatus: UNVERIFIED, VERIFIED or PREMIUM",
		run: func(ctx context.Context, adm *app.Admin, _ *adminOptions, args []string) (any, error) {
			return described(adm.SetVerification(ctx, args[0], args[1]))
		}},
	{name: "set-active", args: []string{"id|@handle", "true|false"}, help: "activate (after the negative-auth probe passes) or deactivate",
		run: func(ctx context.Context, adm *app.Admin, _ *adminOptions, args []string) (any, error) {
			active, err := strconv.ParseBool(args[1])
			if err != nil {
				return nil, fmt.Errorf("set-active: %q is not true or false", args[1])
			}
			return described(adm.SetActive(ctx, args[0], active))
		}},
	{name: "show-listing", args: []string{"id|@handle"}, help: "print a listing",
		run: func(ctx context.Context, adm *app.Admin, _ *adminOptions, args []string) (any, error) {
			return described(adm.Listing(ctx, args[0]))
		}},
	{name: "credit", args: []string{"account-id|e-mail", "usd"}, help: "add credit to an account (decimal USD, up to 6 places)",
		run: func(ctx context.Context, adm *app.Admin, _ *adminOptions, args []string) (any, error) {
			return credit(ctx, adm, args[0], args[1])
		}},
	{name: "set-tier", args: []string{"account-id|e-mail", "tier"}, help: "set an account's fee tier (one of SWITCHBOARD_FEE_TIERS): the platform's basis points on the value its calls route",
		run: func(ctx context.Context, adm *app.Admin, _ *adminOptions, args []string) (any, error) {
			return setTier(ctx, adm, args[0], args[1])
		}},
	{name: "set-policy", args: []string{"account-id|e-mail", "policy.json|-"}, help: "set an account's spend policy (DESIGN's shape; docs/policies.md), or with -key a key's; the file's JSON null removes it. " +
		"The operator, like the owner on the portal, may loosen it",
		flags: func(fs *flag.FlagSet, o *adminOptions) {
			fs.StringVar(&o.keyID, "key", "", "the key whose policy to set (default: the account's)")
		},
		run: func(ctx context.Context, adm *app.Admin, o *adminOptions, args []string) (any, error) {
			return setPolicy(ctx, adm, o, args[0], args[1])
		}},
	{name: "invocation", args: []string{"request-id"}, help: "what happened to a request: the invocation, its transitions and its ledger rows",
		run: func(ctx context.Context, adm *app.Admin, _ *adminOptions, args []string) (any, error) {
			return invocation(ctx, adm, args[0])
		}},
	{name: "deploy-payer", noApp: true, help: "deploy the FlatFeePayer on SWITCHBOARD_FLATFEE_RPC_URL (relayer: the SWITCHBOARD_FLATFEE_RELAYER_KEY's address; " +
		"treasury: SWITCHBOARD_FLATFEE_TREASURY; token: SWITCHBOARD_FLATFEE_TOKEN, or with -test-token a fresh TestUSDC) and print the settings to use",
		flags: func(fs *flag.FlagSet, o *adminOptions) {
			fs.BoolVar(&o.testToken, "test-token", false, "also deploy a TestUSDC (test networks only) and use it")
		},
		run: func(ctx context.Context, _ *app.Admin, o *adminOptions, _ []string) (any, error) {
			return deployPayer(ctx, o.cfg, o.testToken)
		}},
	{name: "rotate-key", help: "rotate the service's signing key in steps: publish the next key (key set at /.well-known/service-keys), then, " +
		"run again after an hour and 5 minutes, switch signing to it (the old key stays published as previous, for receipts); -retire stops publishing the previous key",
		flags: func(fs *flag.FlagSet, o *adminOptions) {
			fs.BoolVar(&o.retire, "retire", false, "stop publishing the previous key")
		},
		run: func(ctx context.Context, adm *app.Admin, o *adminOptions, _ []string) (any, error) {
			if o.retire {
				n, err := adm.RetireKey(ctx)
				if err != nil {
					return nil, err
				}
				return map[string]any{"action": "retired", "retired": n}, nil
			}
			return described(adm.RotateKey(ctx))
		}},
	resealCommand,
	{name: "payout", help: "pay partners' accrued per-call fees in the stablecoin now (serve does it every SWITCHBOARD_PAYOUT_INTERVAL)",
		run: func(ctx context.Context, adm *app.Admin, _ *adminOptions, _ []string) (any, error) {
			paid, err := adm.Payouts(ctx)
			if err != nil {
				return nil, err
			}
			if paid == nil {
				paid = []*payouts.Payout{}
			}
			return map[string]any{"payouts": paid}, nil
		}},
	{name: "ledger-check", help: "verify the ledger's invariants (balanced, matching balances)",
		run: func(ctx context.Context, adm *app.Admin, _ *adminOptions, _ []string) (any, error) {
			if err := adm.CheckLedger(ctx); err != nil {
				return nil, err
			}
			return map[string]string{"ledger": "ok"}, nil
		}},
	{name: "sweep", help: "conclude dispatches a crash abandoned (replaying this data directory's journal of write outcomes first) and refund reservations nobody settled, now (serve does it every SWITCHBOARD_SWEEP_INTERVAL)",
		run: func(ctx context.Context, adm *app.Admin, _ *adminOptions, _ []string) (any, error) {
			recovered, refunded, err := adm.Sweep(ctx)
			if err != nil {
				return nil, err
			}
			return map[string]int{"concludedDispatches": recovered, "refundedReservations": refunded}, nil
		}},
}

// synopsis is the command with its flags and arguments, as help shows it.
func (c adminCommand) synopsis() string {
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	if c.flags != nil {
		c.flags(fs, &adminOptions{})
	}
	parts := []string{c.name}
	fs.VisitAll(func(f *flag.Flag) {
		if f.DefValue == "false" {
			parts = append(parts, "[-"+f.Name+"]")
		} else {
			parts = append(parts, "[-"+f.Name+" "+f.DefValue+"]")
		}
	})
	for _, a := range c.args {
		parts = append(parts, "<"+a+">")
	}
	return strings.Join(parts, " ")
}

// adminUsage lists the subcommands.
func adminUsage() string {
	var b strings.Builder
	b.WriteString("usage: switchboard admin <command> [flags] [args]\n\n" +
		"Operator commands on the configured database (SWITCHBOARD_DATABASE_URL, SWITCHBOARD_ENV, ...).\n" +
		"Partner publishing is live on the test environment; production listings are inserted here.\n\ncommands:\n")
	for _, c := range allAdminCommands() {
		fmt.Fprintf(&b, "  %s\n      %s\n", c.synopsis(), c.help)
	}
	b.WriteString("\nEach prints its result as JSON. 'switchboard admin <command> --help' shows its flags and the service\n" +
		"settings, which are flags too (each also a SWITCHBOARD_* variable).\n")
	return b.String()
}

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
		fmt.Fprint(stderr, adminUsage())
		if len(args) == 0 {
			return errors.New("no admin command")
		}
		return nil
	}
	c, rest, ok := findAdminCommand(args)
	if !ok {
		fmt.Fprint(stderr, adminUsage())
		return fmt.Errorf("unknown admin command %q", args[0])
	}
	o := &adminOptions{stdin: stdin}
	fs := flag.NewFlagSet("switchboard admin "+c.name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: switchboard admin %s\n\n%s\n\nflags:\n", c.synopsis(), c.help)
		fs.PrintDefaults()
	}
	cfg.RegisterFlags(fs, true)
	if c.flags != nil {
		c.flags(fs, o)
	}
	if err := fs.Parse(rest); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if fs.NArg() != len(c.args) {
		fs.Usage()
		return fmt.Errorf("admin %s takes %d argument(s), got %d", c.name, len(c.args), fs.NArg())
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	// Operator commands act on the database as it is: only serve and stdio list the demo partner.
	cfg.DemoPartner = false
	o.cfg = cfg
	var adm *app.Admin
	if !c.noApp {
		log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
		a, err := app.Build(ctx, cfg, app.Deps{Log: log})
		if err != nil {
			return err
		}
		defer a.Close()
		adm = a.Admin()
	}
	out, err := c.run(ctx, adm, o, fs.Args())
	if err != nil {
		return err
	}
	if s, ok := out.(shownOnce); ok {
		return s.print(stdout, stderr)
	}
	return printJSON(stdout, out)
}

// described is a service call's result, its error as describe puts it.
func described[T any](v T, err error) (any, error) {
	if err != nil {
		return nil, describe(err)
	}
	return v, nil
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
	key, err := contracts.ParseKey(f.RelayerKey)
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
func credit(ctx context.Context, adm *app.Admin, who, usd string) (any, error) {
	var amount tools.USD
	if err := json.Unmarshal([]byte(usd), &amount); err != nil {
		return nil, fmt.Errorf("credit: %q: %v", usd, err)
	}
	if amount <= 0 {
		return nil, fmt.Errorf("credit: %q: the amount must be positive", usd)
	}
	acct, err := adm.Account(ctx, who)
	if err != nil {
		return nil, fmt.Errorf("credit: %w", err)
	}
	ca, err := adm.Credit(ctx, acct.ID, amount.Micro())
	if err != nil {
		return nil, err
	}
	return map[string]any{"accountId": acct.ID, "creditedUsd": amount, "availableUsd": tools.USD(ca.AvailableMicro), "reservedUsd": tools.USD(ca.ReservedMicro)}, nil
}

// setPolicy sets an account's (or one of its keys') spend policy from a file (- : stdin).
func setPolicy(ctx context.Context, adm *app.Admin, o *adminOptions, who, file string) (any, error) {
	acct, err := adm.Account(ctx, who)
	if err != nil {
		return nil, fmt.Errorf("set-policy: %w", err)
	}
	var raw []byte
	if file == "-" {
		raw, err = io.ReadAll(io.LimitReader(o.stdin, billing.MaxPolicyBytes+1))
	} else {
		raw, err = os.ReadFile(file)
	}
	if err != nil {
		return nil, fmt.Errorf("set-policy: %w", err)
	}
	var pol *billing.Policy
	if strings.TrimSpace(string(raw)) != "null" {
		if pol, err = billing.ParsePolicy(raw); err != nil {
			return nil, describe(err)
		}
	}
	out, err := adm.SetPolicy(ctx, acct.ID, o.keyID, pol)
	if err != nil {
		return nil, describe(err)
	}
	return out, nil
}

// setTier moves an account to a fee tier.
func setTier(ctx context.Context, adm *app.Admin, who, tier string) (any, error) {
	acct, err := adm.Account(ctx, who)
	if err != nil {
		return nil, fmt.Errorf("set-tier: %w", err)
	}
	bps, err := adm.SetTier(ctx, acct.ID, tier)
	if err != nil {
		return nil, describe(err)
	}
	return map[string]any{"accountId": acct.ID, "tier": tier, "platformFeeBps": bps}, nil
}

// invocation gathers everything recorded about one request.
func invocation(ctx context.Context, adm *app.Admin, requestID string) (any, error) {
	r, err := adm.Invocation(ctx, requestID)
	if err != nil {
		return nil, err
	}
	out := map[string]any{"invocation": r.Invocation, "events": r.Events, "ledger": r.Ledger}
	if r.Invocation.LedgerTxn != nil { // recorded whole in its row: its postings are summed in its batch's
		out["ledgerBatch"] = r.LedgerBatch
	}
	return out, nil
}
