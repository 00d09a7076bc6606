package main

import (
	"context"
	"crypto/ed25519"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/switchboard-hq/switchboard/signing"
	"github.com/switchboard-hq/switchboard/store"
	"github.com/uptrace/bun"
)

// partnerReady is what the partner process announces: the delay proxy's URL (what the
// intent and the relay call) and the certificate both of its TLS servers present.
type partnerReady struct {
	Proxy  string `json:"proxy"`
	Direct string `json:"direct"`
	CAPEM  string `json:"caPem"`
}

// relayReady is what the relay process announces.
type relayReady struct {
	URL string `json:"url"`
}

// runRole runs the harness as one of its child processes (-role partner|relay) until
// SIGTERM or SIGINT, or until its parent dies (Pdeathsig).
func runRole(role string, args []string) error {
	fs := flag.NewFlagSet(role, flag.ContinueOnError)
	keyFile := fs.String("key", "", "the service's signing key file (PEM)")
	delay := fs.Duration("delay", 20*time.Millisecond, "partner: how long the proxy holds each request")
	target := fs.String("target", "", "relay: the partner URL it forwards to")
	caFile := fs.String("ca", "", "relay: the CA file that trusts the partner")
	dsn := fs.String("db", "", "relay: the database it commits one row per call to")
	if err := fs.Parse(args); err != nil {
		return err
	}
	key, _, err := signing.LoadOrCreatePrivateKey(*keyFile)
	if err != nil {
		return fmt.Errorf("signing key: %w", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	switch role {
	case "partner":
		return servePartner(ctx, key, *delay)
	case "relay":
		return serveRelay(ctx, key, *target, *caFile, *dsn)
	}
	return fmt.Errorf("unknown role %q", role)
}

// servePartner is the benchmark's partner (it verifies every envelope against the service
// key and answers /free at once) behind a TLS reverse proxy on loopback that holds each
// request for delay before forwarding it, as brokerBehindProxy builds them.
func servePartner(ctx context.Context, key ed25519.PrivateKey, delay time.Duration) error {
	verifier := signing.NewVerifierFromKey(key.Public().(ed25519.PublicKey))
	partner := httptest.NewUnstartedServer(signing.Middleware(verifier, http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Type", "application/json")
		io.WriteString(rw, `{"success":true,"result":{"answer":"free"}}`)
	})))
	partner.Config.ErrorLog = log.New(io.Discard, "", 0)
	partner.StartTLS()
	defer partner.Close()

	u, _ := url.Parse(partner.URL)
	rp := httputil.NewSingleHostReverseProxy(u)
	tr := partner.Client().Transport.(*http.Transport).Clone()
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost = 2048, 2048
	rp.Transport = tr
	rp.ErrorLog = log.New(io.Discard, "", 0)
	proxy := httptest.NewUnstartedServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
		rp.ServeHTTP(rw, r)
	}))
	proxy.Config.ErrorLog = log.New(io.Discard, "", 0)
	proxy.StartTLS() // httptest's certificate again: one CA file trusts both
	defer proxy.Close()
	announce(partnerReady{Proxy: proxy.URL, Direct: partner.URL,
		CAPEM: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: proxy.Certificate().Raw}))})
	<-ctx.Done()
	return nil
}

// benchCalls is the relay's table, as recordingRelay's: one row per call, the partner's answer.
const benchCalls = "CREATE TABLE IF NOT EXISTS bench_calls (id TEXT PRIMARY KEY, answer TEXT NOT NULL)"

// serveRelay is the committing relay of the broker benchmark (recordingRelay) as a process of
// its own: it signs the envelope with the service key, forwards it to target through a
// transport that keeps connections as Switchboard's outbound client does (512 per host),
// commits the partner's answer as one row in a transaction of its own, and answers the
// result with a signed receipt.
func serveRelay(ctx context.Context, key ed25519.PrivateKey, target, caFile, dsn string) error {
	tr, err := partnerTransport(caFile)
	if err != nil {
		return err
	}
	st, err := store.Open(ctx, dsn, "")
	if err != nil {
		return fmt.Errorf("relay database: %w", err)
	}
	defer st.Close()
	signer := signing.NewSigner(key)
	h := http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		relayCall(rw, r, signer, tr, target, func(ctx context.Context, id string, answer []byte) error {
			return st.Tx(ctx, func(ctx context.Context, tx bun.Tx) error {
				_, err := tx.ExecContext(ctx, "INSERT INTO bench_calls (id, answer) VALUES (?, ?)", id, string(answer))
				return err
			})
		})
	})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ErrorLog: log.New(io.Discard, "", 0)}
	go srv.Serve(l)
	announce(relayReady{URL: "http://" + l.Addr().String()})
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return srv.Shutdown(sctx)
}

// relayCall is one relayed call, as relayWith serves it.
func relayCall(rw http.ResponseWriter, r *http.Request, signer *signing.Signer, tr http.RoundTripper, target string, record func(context.Context, string, []byte) error) {
	var in struct{ Message string }
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		http.Error(rw, err.Error(), 400)
		return
	}
	args, _ := json.Marshal(map[string]string{"query": strings.TrimPrefix(in.Message, handle+" ")})
	fields := signing.CallFields{RequestID: signing.NewRequestID(), IntentDefinitionID: "i", UserID: "u", Args: args}
	req, _ := http.NewRequestWithContext(r.Context(), "POST", target, http.NoBody)
	resp, err := signing.NewRESTRoundTripper(signer, fields, tr).RoundTrip(req)
	if err != nil {
		http.Error(rw, err.Error(), http.StatusBadGateway)
		return
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 {
		http.Error(rw, fmt.Sprint(resp.StatusCode, err), http.StatusBadGateway)
		return
	}
	now := time.Now().UTC().Format(time.RFC3339)
	receipt, err := signer.SignReceipt(signing.Receipt{RequestID: fields.RequestID, Handle: handle, IntentID: "i", UserID: "u",
		Success: true, CreatedAt: now, FinishedAt: now, ResultSHA256: signing.ResultHash(body)})
	if err != nil {
		http.Error(rw, err.Error(), 500)
		return
	}
	if err := record(r.Context(), fields.RequestID, body); err != nil {
		http.Error(rw, err.Error(), http.StatusServiceUnavailable)
		return
	}
	rw.Header().Set("Content-Type", "application/json")
	json.NewEncoder(rw).Encode(map[string]any{"result": json.RawMessage(body), "receipt": receipt})
}

// partnerTransport trusts the partner's certificate (caFile) and keeps idle connections as
// Switchboard's outbound client does: 512 per host.
func partnerTransport(caFile string) (*http.Transport, error) {
	pool, err := certPool(caFile)
	if err != nil {
		return nil, err
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{RootCAs: pool}
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost = 1024, 512
	return tr, nil
}

// certPool is a pool of the certificates in caFile.
func certPool(caFile string) (*x509.CertPool, error) {
	raw, err := os.ReadFile(caFile)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(raw) {
		return nil, errors.New("no certificate in " + caFile)
	}
	return pool, nil
}
