package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/switchboard-hq/switchboard/cmd/switchboard/app"
	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/learned"
	"github.com/switchboard-hq/switchboard/tools/service"
	"github.com/switchboard-hq/switchboard/tools/tokens"
)

const tokensUsage = `usage: switchboard tokens refresh [flags]

Pulls the public token lists into the database: CoinGecko's per-platform token lists and coins
list (for each token's CoinGecko id) and Jupiter's verified tokens. Tokens on these lists are
"listed": resolve_token ranks them above unlisted ones and never flags them as spam. A list that
cannot be fetched is reported and skipped; the command fails only when every list failed.
`

// runTokens is `switchboard tokens ...`.
func runTokens(ctx context.Context, cfg app.Config, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "refresh" {
		fmt.Fprint(stderr, tokensUsage)
		if len(args) > 0 && (args[0] == "help" || args[0] == "-h" || args[0] == "--help") {
			return nil
		}
		return errors.New("unknown tokens command; want 'switchboard tokens refresh'")
	}
	fs := flag.NewFlagSet("switchboard tokens refresh", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg.RegisterFlags(fs, true)
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	log := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: level(cfg.LogLevel)}))
	st, err := store.Open(ctx, cfg.DatabaseURL, cfg.DataDir)
	if err != nil {
		return err
	}
	defer st.Close()
	if _, err := st.Migrate(ctx); err != nil {
		return err
	}
	svc, err := tokens.NewService(cfg.Tokens, service.Deps{Store: st, Now: time.Now, Log: log})
	if err != nil {
		return err
	}
	reports, rerr := svc.Refresh(ctx)
	for _, r := range reports {
		if r.Err != "" {
			fmt.Fprintf(stdout, "%-40s failed: %s\n", r.Source, r.Err)
		} else {
			fmt.Fprintf(stdout, "%-40s %d tokens\n", r.Source, r.Tokens)
		}
	}
	if rerr != nil {
		return rerr
	}
	all, listed, err := learned.New(st).CountTokens(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "database now holds %d learned tokens, %d of them listed\n", all, listed)
	return nil
}
