package main

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/switchboard-hq/switchboard/signing"
	"github.com/switchboard-hq/switchboard/tools/partners/outbound"
)

const partnerUsage = `usage: switchboard partner check [flags] URL

Runs the whole verification battery against your REST partner endpoint before you publish it,
no account needed: a signed round trip with a throwaway key this command serves itself at
-key-addr (point your partner's Switchboard URL there while the check runs), then an unsigned
request, another key's signature, a 64-byte signature that does not verify, a timestamp 6
minutes old, a mismatched Idempotency-Key, the same request replayed, a text/plain body and a
2 MiB body. Prints PASS, FAIL or WARN per line with what to fix; exits non-zero on any FAIL.
The same battery is in partner_test_endpoint's report.

flags:
`

// runPartner runs `switchboard partner check`.
func runPartner(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "check" {
		fmt.Fprint(stderr, partnerUsage)
		return errors.New("usage: switchboard partner check URL")
	}
	fs := flag.NewFlagSet("switchboard partner check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, partnerUsage); fs.PrintDefaults() }
	keyAddr := fs.String("key-addr", "127.0.0.1:8787", "where to serve the throwaway public key (GET /.well-known/service-public-key)")
	argsJSON := fs.String("args", `{"query":"ping"}`, "the args of the signed calls (a JSON object your endpoint accepts)")
	timeout := fs.Duration("timeout", 10*time.Second, "how long each request may take")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return errors.New("give the endpoint URL")
	}
	var probe map[string]any
	if err := json.Unmarshal([]byte(*argsJSON), &probe); err != nil {
		return fmt.Errorf("-args must be a JSON object: %w", err)
	}
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return err
	}
	pem, err := signing.MarshalPublicKeyPEM(pub)
	if err != nil {
		return err
	}
	l, err := net.Listen("tcp", *keyAddr)
	if err != nil {
		return fmt.Errorf("serve the throwaway key at %s: %w (choose another with -key-addr)", *keyAddr, err)
	}
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/.well-known/service-public-key" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/x-pem-file")
		w.Write(pem)
	})}
	go srv.Serve(l)
	defer srv.Close()
	fmt.Fprintf(stdout, "Signing with a throwaway key served at http://%s/.well-known/service-public-key\n(point your partner's Switchboard URL at http://%s for this check)\n\n", l.Addr(), l.Addr())

	out, err := outbound.New(outbound.Options{Signer: signing.NewSigner(priv), AllowLocal: true})
	if err != nil {
		return err
	}
	raw, _ := json.Marshal(probe)
	checks := out.Battery(ctx, outbound.Target{Endpoint: fs.Arg(0), Binding: signing.BindingREST, Timeout: *timeout},
		signing.NewSigner(priv), signing.CallFields{IntentDefinitionID: "partner-check", UserID: "u_partner_check", Args: raw})
	printChecks(stdout, checks)
	if outbound.BatteryFailed(checks) {
		return errors.New("the endpoint failed the battery: fix the FAIL lines above")
	}
	return nil
}

// printChecks writes the battery's report, one line per check and the fix under a failure.
func printChecks(w io.Writer, checks []outbound.Check) {
	pass := 0
	for _, c := range checks {
		got := "no answer"
		if c.Status != 0 {
			got = fmt.Sprintf("HTTP %d", c.Status)
		}
		fmt.Fprintf(w, "%-4s  %-44s %s (want %s)\n", c.Verdict, c.Name, got, c.Want)
		if c.Fix != "" {
			fmt.Fprintf(w, "      fix: %s\n", c.Fix)
		}
		if c.Verdict == outbound.CheckPass {
			pass++
		}
	}
	fmt.Fprintf(w, "\n%d of %d checks passed\n", pass, len(checks))
}
