package app

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/switchboard-hq/switchboard/signing"
	"github.com/switchboard-hq/switchboard/tools/onboarding"
	"github.com/switchboard-hq/switchboard/tools/partners"
	"github.com/switchboard-hq/switchboard/tools/partners/demo"
	"github.com/switchboard-hq/switchboard/tools/partners/outbound"
	"github.com/switchboard-hq/switchboard/tools/service"
)

// partnerSide is what partner calls go through: the demo partner (test environment only),
// the outbound client, the client metadata fetcher and the partner intents' service.
type partnerSide struct {
	demo     *demo.Partner // nil where it is not offered
	out      *outbound.Client
	metadata *http.Client
	svc      *partners.Service
}

// close stops the demo partner, when there is one.
func (p partnerSide) close() {
	if p.demo != nil {
		p.demo.Close()
	}
}

// newPartnerSide builds the partner side, and offers the demo partner where it runs.
// metadata, when set, replaces the guarded metadata client (Deps.Metadata).
func newPartnerSide(ctx context.Context, cfg Config, d service.Deps, signer *signing.Signer, mailer onboarding.Mailer, ob *onboarding.Service,
	serverSecret []byte, metadata *http.Client) (p partnerSide, err error) {
	if p.demo, err = startDemo(cfg, signer, d.Log); err != nil {
		return p, err
	}
	defer func() {
		if err != nil {
			p.close()
		}
	}()
	var guarded *http.Client
	if p.out, guarded, err = partnerClient(cfg, signer, d.Log, p.demo); err != nil {
		return p, err
	}
	p.metadata = cmp.Or(metadata, guarded)
	pseudonyms := derive(serverSecret, "switchboard partner pseudonyms v1") // the userId partners see
	if p.svc, err = newPartners(cfg, d, mailer, p.out, pseudonyms); err != nil {
		return p, err
	}
	if p.demo != nil {
		if err := offerDemo(ctx, cfg, ob, p.svc, d.Log); err != nil {
			d.Log.Warn("demo partner not offered", "err", err)
		}
	}
	return p, nil
}

// partnerClient is the outbound client every partner call and probe goes through: the
// service's signature, the SSRF guard, the extra CA of SWITCHBOARD_PARTNER_CA_FILE. metadata
// fetches client metadata documents: the same, with the guard on whatever
// SWITCHBOARD_ALLOW_LOCAL_ENDPOINTS says (anyone can name a document's URL; only the operator
// names partner endpoints in development).
// The demo partner (test environment) is reached by partner calls only, never by metadata fetches.
func partnerClient(cfg Config, signer *signing.Signer, log *slog.Logger, demoPartner *demo.Partner) (out *outbound.Client, metadata *http.Client, err error) {
	if cfg.AllowLocalEndpoints && cfg.Env == "production" { // serve and stdio refuse it (Config.CheckLocalEndpoints)
		log.Warn("SWITCHBOARD_ALLOW_LOCAL_ENDPOINTS is on in production for this operator command: its partner probes may reach local addresses; a serving process refuses it")
	}
	partnerCA, err := outbound.ReadCAFile(cfg.PartnerCAFile)
	if err != nil {
		return nil, nil, err
	}
	callCA := partnerCA
	if demoPartner != nil { // its certificate is valid for its in-process host alone
		callCA = append(append(append([]byte{}, partnerCA...), '\n'), demoPartner.CAPEM()...)
	}
	if out, err = outbound.New(outbound.Options{Signer: signer, AllowLocal: cfg.AllowLocalEndpoints, ExtraCAPEM: callCA, Log: log,
		InProcess: demoDialers(demoPartner)}); err != nil {
		return nil, nil, fmt.Errorf("SWITCHBOARD_PARTNER_CA_FILE: %w", err)
	}
	guarded, err := outbound.New(outbound.Options{ExtraCAPEM: partnerCA, Log: log})
	if err != nil {
		return nil, nil, fmt.Errorf("SWITCHBOARD_PARTNER_CA_FILE: %w", err)
	}
	return out, guarded.HTTPClient(), nil
}

// newPartners builds the partner intents' service; its notices (an intent deactivated by
// its re-probes) go to the owner by e-mail when a mailer is configured.
func newPartners(cfg Config, d service.Deps, mailer onboarding.Mailer, out *outbound.Client, pseudonyms []byte) (*partners.Service, error) {
	return partners.NewService(partners.Config{Env: cfg.Env, PseudonymSecret: pseudonyms,
		ReprobeFailures: cfg.ReprobeFailures, Notify: notifier(d, mailer)}, d, out)
}
