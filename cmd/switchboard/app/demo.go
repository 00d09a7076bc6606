package app

import (
	"context"
	"crypto/ed25519"
	"errors"
	"log/slog"
	"net"
	"time"

	"github.com/switchboard-hq/switchboard/signing"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/onboarding"
	"github.com/switchboard-hq/switchboard/tools/partners"
	"github.com/switchboard-hq/switchboard/tools/partners/demo"
)

// startDemo starts the demo partner where it is offered: the test environment with
// SWITCHBOARD_DEMO_PARTNER on (the default). Never in production, whatever the setting. It
// verifies calls with the service's current key, as a partner reading the published key does.
func startDemo(cfg Config, signer *signing.Signer, log *slog.Logger) (*demo.Partner, error) {
	if cfg.Env != "test" || !cfg.DemoPartner {
		return nil, nil
	}
	v := signing.NewVerifier(signing.KeySourceFunc(func(context.Context) (ed25519.PublicKey, error) { return signer.PublicKey(), nil }),
		signing.WithKeyCacheTTL(time.Second), signing.WithLogger(log)) // follows a rotation within a second
	return demo.Start(v, sendsDemo(cfg))
}

// sendsDemo: @demo_send is offered where its proposals can be signed, a deployment with a
// node for base (SWITCHBOARD_RPC_BASE).
func sendsDemo(cfg Config) bool { return cfg.Tokens.RPCBase != "" }

// demoDialers is the partner client's way to the demo partner: its host only.
func demoDialers(p *demo.Partner) map[string]func(context.Context) (net.Conn, error) {
	if p == nil {
		return nil
	}
	return map[string]func(context.Context) (net.Conn, error){demo.Host: p.Dial}
}

// offerDemo lists @demo_echo, owned by the demo partner's account, verified and active: the
// same insertion, activation probe and account as an operator's listing. Replicas starting
// together may race to insert it; the loser finds it listed.
func offerDemo(ctx context.Context, cfg Config, ob *onboarding.Service, ps *partners.Service, log *slog.Logger) error {
	if err := offerListing(ctx, ob, ps, demo.Listing(), log); err != nil {
		return err
	}
	log.Info("demo partner offered (test environment): discover 'demo', then invoke " + demo.Handle + " with a query")
	if !sendsDemo(cfg) {
		return nil
	}
	if err := offerListing(ctx, ob, ps, demo.SendListing(), log); err != nil {
		return err
	}
	log.Info("demo write intent offered: " + demo.SendHandle + " proposes a USDC transfer on base, signed by the caller's embedded wallet")
	return nil
}

// offerListing lists one demo intent, verified and active.
func offerListing(ctx context.Context, ob *onboarding.Service, ps *partners.Service, listing partners.IntentInput, log *slog.Logger) error {
	row, err := ps.Lookup(ctx, listing.PublicIdentifier)
	if e := (*tools.Error)(nil); errors.As(err, &e) && e.Code == tools.CodeNotFound {
		owner, oerr := ob.AccountForEmail(ctx, demo.OwnerEmail)
		if oerr != nil {
			return oerr
		}
		if _, err := ps.Insert(ctx, owner, listing, partners.StatusVerified, false); err != nil {
			log.Info("demo partner: insert (another replica may have listed it)", "handle", listing.PublicIdentifier, "err", err)
		}
		row, err = ps.Lookup(ctx, listing.PublicIdentifier)
	}
	if err != nil {
		return err
	}
	if !row.IsActive && row.ArchivedAt == nil {
		if _, err := ps.SetActive(ctx, row, true); err != nil {
			return err
		}
	}
	return nil
}
