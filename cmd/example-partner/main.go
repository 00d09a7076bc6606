// Command example-partner runs the example Switchboard partner of package
// signing/partnerexample: a REST endpoint at /rest (sample schema (a), {query}) and an
// MCP_HTTP endpoint at /mcp (sample schema (b), {ticker, days}, tool named by -handle); with
// -send-token, also the write intent at /send ({to, amount}: it proposes an ERC-20 transfer of
// that token as result.transactions, for Switchboard to simulate, show, sign and broadcast).
//
//	example-partner -service-url https://switchboard.example -addr :8443 -tls-cert cert.pem -tls-key key.pem
//	example-partner -public-key-file service-public-key.pem -addr 127.0.0.1:9090
//	example-partner -public-key-file k.pem -send-chain base -send-token 0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913
//
// Every call must carry a valid service signature; the public key comes from
// <service-url>/.well-known/service-public-key (cached one hour) or from a PEM file. Every
// signed call is logged on one line (requestId, verified or refused), and every success
// reports -fee-rate as providerCostMicro: Switchboard pays a partner what it reports, capped
// by the feeRate it published, and nothing when it reports nothing.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/switchboard-hq/switchboard/signing"
	"github.com/switchboard-hq/switchboard/signing/partnerexample"
)

type config struct {
	addr          string
	serviceURL    string
	publicKeyFile string
	tlsCert       string
	tlsKey        string
	handle        string
	costMicro     int64
	send          *partnerexample.Token // the write intent's token; nil: not served
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("example-partner", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.addr, "addr", ":9090", "listen address")
	fs.StringVar(&c.serviceURL, "service-url", "", "Switchboard base URL; the public key is fetched from <url>/.well-known/service-public-key")
	fs.StringVar(&c.publicKeyFile, "public-key-file", "", "PEM (SPKI) file with the service public key, instead of -service-url")
	fs.StringVar(&c.tlsCert, "tls-cert", "", "TLS certificate file (PEM); with -tls-key serves HTTPS")
	fs.StringVar(&c.tlsKey, "tls-key", "", "TLS private key file (PEM)")
	fs.StringVar(&c.handle, "handle", partnerexample.DefaultHandle, "the @handle, used as the MCP tool name")
	feeRate := fs.String("fee-rate", "0.05", "USD per call reported as providerCostMicro on every success: the feeRate you publish (you are paid what you report, up to it; 0 for a free intent)")
	tok := partnerexample.Token{}
	fs.StringVar(&tok.Address, "send-token", "", "serve the write intent at /send proposing transfers of this ERC-20 (0x address)")
	fs.StringVar(&tok.Chain, "send-chain", "base", "the write intent's chain (a Switchboard balances chain name)")
	fs.StringVar(&tok.Symbol, "send-symbol", "USDC", "the write intent's token symbol (for its summary)")
	fs.IntVar(&tok.Decimals, "send-decimals", 6, "the write intent's token decimals")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if tok.Address != "" {
		if _, err := partnerexample.TransferCalldata(tok.Address, big.NewInt(1)); err != nil {
			return c, fmt.Errorf("-send-token: %w", err)
		}
		if tok.Decimals < 0 || tok.Decimals > 36 {
			return c, errors.New("-send-decimals: between 0 and 36")
		}
		c.send = &tok
	}
	var err error
	if c.costMicro, err = signing.FeeRateMicro(*feeRate); err != nil {
		return c, fmt.Errorf("-fee-rate: %w", err)
	}
	if (c.serviceURL == "") == (c.publicKeyFile == "") {
		return c, errors.New("give exactly one of -service-url and -public-key-file")
	}
	if (c.tlsCert == "") != (c.tlsKey == "") {
		return c, errors.New("-tls-cert and -tls-key go together")
	}
	return c, nil
}

func newVerifier(ctx context.Context, c config, logger *slog.Logger) (*signing.Verifier, error) {
	if c.publicKeyFile != "" {
		pemBytes, err := os.ReadFile(c.publicKeyFile)
		if err != nil {
			return nil, err
		}
		return signing.NewVerifierFromPEM(pemBytes, signing.WithLogger(logger))
	}
	v := signing.NewVerifierFromURL(c.serviceURL, signing.WithLogger(logger))
	if err := v.Refresh(ctx); err != nil {
		// Not fatal: calls answer 503 until the key can be fetched.
		logger.Warn("service public key not available yet", "error", err)
	}
	return v, nil
}

func run(ctx context.Context, args []string, stderr io.Writer) error {
	c, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	v, err := newVerifier(ctx, c, logger)
	if err != nil {
		return err
	}
	srv := &http.Server{
		Addr:              c.addr,
		Handler:           partnerexample.New(v, partnerexample.Config{Handle: c.handle, CostMicro: c.costMicro, Log: logger, Send: c.send}),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	errc := make(chan error, 1)
	go func() {
		scheme := "http"
		if c.tlsCert != "" {
			scheme = "https"
		}
		logger.Info("example partner listening", "addr", c.addr, "scheme", scheme,
			"rest", partnerexample.RESTPath, "mcp", partnerexample.MCPPath, "tool", c.handle, "providerCostMicro", c.costMicro)
		if c.tlsCert != "" {
			errc <- srv.ListenAndServeTLS(c.tlsCert, c.tlsKey)
		} else {
			errc <- srv.ListenAndServe()
		}
	}()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return srv.Shutdown(shutdownCtx)
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stderr); err != nil && !errors.Is(err, http.ErrServerClosed) {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "example-partner:", err)
		}
		os.Exit(2)
	}
}
