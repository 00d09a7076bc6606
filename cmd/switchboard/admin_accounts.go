package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/switchboard-hq/switchboard/cmd/switchboard/app"
	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/keys"
	"github.com/switchboard-hq/switchboard/tools/onboarding"
)

// accountOptions are the flags of `admin account create` and `admin key issue`.
type accountOptions struct {
	email, scopes, name, spendUSD string
	rate                          int
}

// accountCommands let an operator in the first person of a deployment without e-mail
// onboarding: an account (with its wallets, as agent_verify makes it) and a key for it.
func accountCommands() []adminCommand {
	o := new(accountOptions)
	return []adminCommand{
		{name: "account create", help: "create the account of an e-mail, with its EVM and Solana wallets (and, in the test environment, its starting credit), " +
			"as agent_verify does; an existing account is shown, not changed. Then issue it a key with 'switchboard admin key issue'",
			flags: func(fs *flag.FlagSet, _ *adminOptions) {
				fs.StringVar(&o.email, "email", "", "the account's e-mail (required)")
			},
			run: func(ctx context.Context, adm *app.Admin, _ *adminOptions, _ []string) (any, error) {
				return createAccount(ctx, adm, o.email)
			}},
		{name: "key issue", help: "issue an API key to the account of an e-mail: the secret alone goes to stdout (shown once, never stored), " +
			"the key's metadata to stderr. Give it to its holder as SWITCHBOARD_API_KEY or the x-api-key header",
			flags: func(fs *flag.FlagSet, _ *adminOptions) {
				fs.StringVar(&o.email, "email", "", "the account's e-mail (required; 'switchboard admin account create' makes the account)")
				fs.StringVar(&o.scopes, "scopes", "", "comma-separated scopes (required): "+strings.Join(tools.ScopeNames(), ","))
				fs.StringVar(&o.name, "name", "issued by the operator", "a label for the key")
				fs.StringVar(&o.spendUSD, "spend-limit-usd", "", "total USD the key may spend; empty: SWITCHBOARD_DEFAULT_SPEND_LIMIT_USD")
				fs.IntVar(&o.rate, "rate-limit-per-minute", 0, "requests per minute; 0: SWITCHBOARD_DEFAULT_RATE_LIMIT_PER_MINUTE")
			},
			run: func(ctx context.Context, adm *app.Admin, _ *adminOptions, _ []string) (any, error) {
				return issueKey(ctx, adm, o)
			}},
	}
}

// allAdminCommands is every `switchboard admin` subcommand, in the order help lists them.
func allAdminCommands() []adminCommand { return slices.Concat(adminCommands, accountCommands()) }

// findAdminCommand finds the subcommand args start with (one word, or two: "key issue") and
// returns it with the arguments after its name.
func findAdminCommand(args []string) (adminCommand, []string, bool) {
	all := allAdminCommands()
	if len(args) > 1 {
		if i := slices.IndexFunc(all, func(c adminCommand) bool { return c.name == args[0]+" "+args[1] }); i >= 0 {
			return all[i], args[2:], true
		}
	}
	if i := slices.IndexFunc(all, func(c adminCommand) bool { return c.name == args[0] }); i >= 0 {
		return all[i], args[1:], true
	}
	return adminCommand{}, nil, false
}

// accountCreated is `admin account create`'s answer.
type accountCreated struct {
	AccountID string             `json:"accountId"`
	Email     string             `json:"email"`
	Created   bool               `json:"created" jsonschema_description:"false: the e-mail already had this account"`
	Wallets   onboarding.Wallets `json:"wallets"`
}

func createAccount(ctx context.Context, adm *app.Admin, email string) (any, error) {
	email = strings.ToLower(strings.TrimSpace(email))
	if !strings.Contains(email, "@") || len(email) > 254 {
		return nil, fmt.Errorf("account create: --email %q: want the account's e-mail address, e.g. --email ops@example.com", email)
	}
	_, err := adm.AccountByEmail(ctx, email)
	existed := err == nil
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	id, err := adm.AccountForEmail(ctx, email)
	if err != nil {
		return nil, describe(err)
	}
	ws, err := adm.Wallets(ctx, id)
	if err != nil {
		return nil, err
	}
	return accountCreated{AccountID: id, Email: email, Created: !existed, Wallets: ws}, nil
}

// shownOnce is a secret for stdout alone, with what describes it for stderr.
type shownOnce struct {
	secret string
	about  any
}

func (s shownOnce) print(stdout, stderr io.Writer) error {
	if err := printJSON(stderr, s.about); err != nil {
		return err
	}
	fmt.Fprintln(stderr, "The key follows on stdout, shown this once: store it now (it is kept only as a hash).")
	_, err := fmt.Fprintln(stdout, s.secret)
	return err
}

func issueKey(ctx context.Context, adm *app.Admin, o *accountOptions) (any, error) {
	if strings.TrimSpace(o.email) == "" {
		return nil, errors.New("key issue: --email is required: the e-mail of the account the key is for")
	}
	if strings.TrimSpace(o.scopes) == "" {
		return nil, fmt.Errorf("key issue: --scopes is required, e.g. --scopes read,partner (the scopes: %s)", strings.Join(tools.ScopeNames(), ","))
	}
	acct, err := adm.AccountByEmail(ctx, strings.ToLower(strings.TrimSpace(o.email)))
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("key issue: no account for %s; create it first with 'switchboard admin account create --email %s'", o.email, o.email)
	}
	if err != nil {
		return nil, err
	}
	var lim *keys.Limits
	if o.spendUSD != "" || o.rate != 0 {
		l := adm.KeyDefaults()
		if o.spendUSD != "" {
			var usd tools.USD
			if err := json.Unmarshal([]byte(o.spendUSD), &usd); err != nil {
				return nil, fmt.Errorf("key issue: --spend-limit-usd %q: want a decimal USD amount, e.g. 25 or 0.50: %v", o.spendUSD, err)
			}
			l.SpendMicro = usd.Micro()
		}
		if o.rate != 0 {
			l.RatePerMinute = o.rate
		}
		lim = &l
	}
	out, err := adm.IssueKey(ctx, keys.IssueInput{AccountID: acct.ID, Name: o.name, Scopes: strings.Split(o.scopes, ","), Limits: lim})
	if err != nil {
		return nil, describe(err)
	}
	return shownOnce{secret: out.Secret, about: map[string]any{"accountId": acct.ID, "email": acct.Email, "key": out.Meta}}, nil
}
