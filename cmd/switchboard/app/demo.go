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
	return demo.Start(v)
}

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
func offerDemo(ctx context.Context, ob *onboarding.Service, ps *partners.Service, log *slog.Logger) error {
	row, err := ps.Lookup(ctx, demo.Handle)
	if e := (*tools.Error)(nil); errors.As(err, &e) && e.Code == tools.CodeNotFound {
		owner, oerr := ob.AccountForEmail(ctx, demo.OwnerEmail)
		if oerr != nil {
			return oerr
		}
		if _, err := ps.Insert(ctx, owner, demo.Listing(), partners.StatusVerified, false); err != nil {
			log.Info("demo partner: insert (another replica may have listed it)", "err", err)
		}
		row, err = ps.Lookup(ctx, demo.Handle)
	}
	if err != nil {
		return err
	}
	if !row.IsActive && row.ArchivedAt == nil {
		if _, err := ps.SetActive(ctx, row, true); err != nil {
			return err
		}
	}
	log.Info("demo partner offered (test environment): discover 'demo', then invoke " + demo.Handle + " with a query")
	return nil
}
