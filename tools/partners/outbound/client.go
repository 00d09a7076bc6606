package outbound

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/switchboard-hq/switchboard/signing"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Defaults of the partner client.
const (
	// DefaultMaxBody caps every partner response body.
	DefaultMaxBody = 1 << 20
	// DefaultTimeout is a call's timeout when the target sets none (the spec's 30 s).
	DefaultTimeout = 30 * time.Second
)

// ErrBodyTooLarge is returned while reading a partner response past the cap.
var ErrBodyTooLarge = errors.New("partner response body exceeds the size limit")

// Options configure a Client.
type Options struct {
	// Signer signs envelopes with the service key (required for Call).
	Signer *signing.Signer
	// AllowLocal (development only) permits http and local addresses.
	AllowLocal bool
	// Resolver resolves endpoint hosts; nil means net.DefaultResolver.
	Resolver Resolver
	// ExtraCAPEM holds PEM certificates trusted in addition to the system roots (tests and
	// private deployments; see SWITCHBOARD_PARTNER_CA_FILE).
	ExtraCAPEM []byte
	// MaxBody caps response bodies; 0 means DefaultMaxBody.
	MaxBody int64
	// Now is the clock for latencies; nil means time.Now.
	Now func() time.Time
	// InProcess are hosts served inside this process (Guard.InProcess).
	InProcess map[string]func(ctx context.Context) (net.Conn, error)
	Log       *slog.Logger
}

// Client talks to partner endpoints. It is safe for concurrent use and keeps one
// connection pool for every partner call of the process.
type Client struct {
	guard     *Guard
	signer    *signing.Signer
	transport http.RoundTripper // guarded, TLS-verified, body-capped
	http      *http.Client      // transport without redirects
	maxBody   int64
	now       func() time.Time
	log       *slog.Logger
}

// ReadCAFile reads the PEM file named by SWITCHBOARD_PARTNER_CA_FILE ("" reads nothing).
func ReadCAFile(path string) ([]byte, error) {
	if path == "" {
		return nil, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("partner CA file: %w", err)
	}
	return b, nil
}

// New builds a Client.
func New(o Options) (*Client, error) {
	roots, err := x509.SystemCertPool()
	if err != nil || roots == nil {
		roots = x509.NewCertPool()
	}
	if len(o.ExtraCAPEM) > 0 && !roots.AppendCertsFromPEM(o.ExtraCAPEM) {
		return nil, errors.New("partner CA file holds no PEM certificate")
	}
	g := &Guard{AllowLocal: o.AllowLocal, Resolver: o.Resolver, InProcess: o.InProcess}
	tr := &http.Transport{
		Proxy:               nil, // a proxy would dial for us, around the guard
		DialContext:         g.DialContext,
		TLSClientConfig:     &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout: 10 * time.Second,
		ForceAttemptHTTP2:   true,
		// A broker calls few hosts with many callers at once: with fewer idle connections
		// kept per host than calls in flight, every burst closes some and opens new ones,
		// and each new one pays a TLS handshake, here and at the partner (measured: 16 under
		// 32 callers churned; 128 under 256 callers opened one connection per 22 calls). The
		// idle ones are the connections the last burst had open anyway: keeping them costs
		// no more memory than that burst did.
		MaxIdleConns:           1024,
		MaxIdleConnsPerHost:    512,
		IdleConnTimeout:        90 * time.Second,
		ExpectContinueTimeout:  time.Second,
		MaxResponseHeaderBytes: 64 << 10,
	}
	max := o.MaxBody
	if max <= 0 {
		max = DefaultMaxBody
	}
	c := &Client{guard: g, signer: o.Signer, maxBody: max, now: o.Now, log: o.Log}
	if c.now == nil {
		c.now = time.Now
	}
	if c.log == nil {
		c.log = slog.Default()
	}
	c.transport = capTransport{base: tr, max: max}
	c.http = c.newHTTPClient(c.transport)
	return c, nil
}

func (c *Client) newHTTPClient(rt http.RoundTripper) *http.Client {
	return &http.Client{
		Transport: rt,
		// Redirects are not followed: a partner endpoint answers itself, and a redirect
		// could point anywhere (the guard would still check the dial, but a signed
		// envelope must not travel to a URL nobody published).
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// HTTPClient is the guarded client itself (SSRF guard at every dial, verified TLS, no
// redirects, bodies capped), for other fetches of URLs that callers name: an MCP host's
// client metadata document.
func (c *Client) HTTPClient() *http.Client { return c.http }

// Guard returns the client's SSRF guard (for checking URLs at publish).
func (c *Client) Guard() *Guard { return c.guard }

// capTransport caps response bodies: reading past max fails with ErrBodyTooLarge.
type capTransport struct {
	base http.RoundTripper
	max  int64
}

func (t capTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	// A traced call tells the partner its trace (W3C traceparent), beside the signed headers.
	if trace.SpanContextFromContext(req.Context()).IsValid() {
		req = req.Clone(req.Context())
		otel.GetTextMapPropagator().Inject(req.Context(), propagation.HeaderCarrier(req.Header))
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return nil, safe(err)
	}
	resp.Body = &cappedBody{rc: resp.Body, left: t.max}
	return resp, nil
}

type cappedBody struct {
	rc   io.ReadCloser
	left int64
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		var one [1]byte
		n, err := b.rc.Read(one[:])
		if n > 0 {
			return 0, ErrBodyTooLarge
		}
		return 0, safe(err)
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, safe(err)
}

func (b *cappedBody) Close() error { return b.rc.Close() }
