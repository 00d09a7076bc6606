// Package apptest starts the whole service for tests: a real store (SQLite or PostgreSQL),
// a real SMTP server in-process as the mailer's target, an adjustable clock, and the HTTP
// server on loopback.
package apptest

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"mime/quotedprintable"
	"net"
	"net/http"
	"net/http/httptest"
	"net/mail"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-smtp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/switchboard-hq/switchboard/cmd/switchboard/app"
	"github.com/switchboard-hq/switchboard/signing"
	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/storetest"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/billing"
	"github.com/switchboard-hq/switchboard/tools/keyring"
	"github.com/switchboard-hq/switchboard/tools/payments"
	"github.com/switchboard-hq/switchboard/tools/webhooks"
)

// Clock is a settable clock, safe for concurrent use.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock starts at t.
func NewClock(t time.Time) *Clock { return &Clock{now: t} }

// Now returns the current time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// Env is a running service.
type Env struct {
	App    *App
	Server *httptest.Server
	URL    string
	Inbox  *Inbox
	Clock  *Clock
}

// Options tune Start.
type Options struct {
	Dialect string                // "sqlite" (default) or "postgres"
	Config  func(cfg *app.Config) // adjust the configuration
	Log     io.Writer             // where logs go; default discarded
	Store   *store.Store          // a store the test opened itself (its own cluster, options); default a fresh one of Dialect
	Start   time.Time             // the clock's first reading; default the real time (fixture prices want tokenstest.T0)
	// Metadata fetches client metadata documents in place of the guarded client, which
	// refuses loopback whatever the configuration (app.Deps.Metadata).
	Metadata *http.Client
	// Served builds the app as serve does, without checking each answer against its tool's
	// output schema (a test's check, with its own cost): for benchmarks of the served path.
	Served bool
}

// Start builds the app against a fresh migrated database, an in-process SMTP server and a
// clock at the real time, and serves it on a loopback httptest server.
func Start(t testing.TB, o Options) *Env {
	t.Helper()
	// Every answer any call of the test gets is checked against its tool's output schema, as
	// strict clients check it; the mismatches are reported when the test ends (registered
	// first, this runs after the server has closed).
	var (
		badMu   sync.Mutex
		bad     []string
		badSeen = map[string]bool{}
	)
	t.Cleanup(func() {
		badMu.Lock()
		defer badMu.Unlock()
		for _, b := range bad {
			t.Errorf("%s", b)
		}
	})
	checkAnswer := func(tool string, err error) {
		badMu.Lock()
		defer badMu.Unlock()
		msg := fmt.Sprintf("%s answered what its output schema refuses (strict MCP clients reject it): %v", tool, err)
		if !badSeen[msg] {
			badSeen[msg] = true
			bad = append(bad, msg)
		}
	}
	if o.Dialect == "" {
		o.Dialect = "sqlite"
	}
	st := o.Store
	if st == nil {
		st = storetest.Open(t, o.Dialect)
	}
	inbox := NewInbox(t)
	clock := NewClock(time.Now())
	if !o.Start.IsZero() {
		clock = NewClock(o.Start)
	}
	srv := httptest.NewUnstartedServer(nil)
	t.Cleanup(srv.Close)
	cfg := app.Defaults()
	cfg.BaseURL = "http://" + srv.Listener.Addr().String()
	cfg.DataDir = t.TempDir()
	cfg.SMTPURL = inbox.URL()
	cfg.DemoPartner = false // a test that wants the demo partner turns it on
	// No test reaches the internet by accident: every upstream points at a closed port until
	// a test names its own local fake.
	for _, u := range []*string{&cfg.Tokens.RPCEthereum, &cfg.Tokens.RPCArbitrum, &cfg.Tokens.RPCBase, &cfg.Tokens.RPCPolygon,
		&cfg.Tokens.RPCOptimism, &cfg.Tokens.RPCAvalanche, &cfg.Tokens.RPCBSC, &cfg.Tokens.SolanaRPC,
		&cfg.Tokens.CoinGeckoURL, &cfg.Tokens.DefiLlamaURL, &cfg.Tokens.JupiterURL} {
		*u = "http://127.0.0.1:9"
	}
	if o.Config != nil {
		o.Config(&cfg)
	}
	if cfg.Env == "production" {
		SupplySecrets(t, &cfg)
	}
	w := o.Log
	if w == nil {
		w = io.Discard
	}
	log := slog.New(slog.NewTextHandler(w, nil))
	checks := checkAnswer
	if o.Served {
		checks = nil
	}
	a, err := app.BuildOn(context.Background(), cfg, app.Deps{Now: clock.Now, Log: log, Metadata: o.Metadata, CheckAnswers: checks}, st)
	if err != nil {
		t.Fatalf("build app: %v", err)
	}
	t.Cleanup(a.Stop) // before the store closes (cleanups run last first)
	srv.Config.Handler = a.Handler()
	srv.Start()
	p := a.Parts()
	return &Env{App: &App{App: a, Config: cfg, Store: st, Log: log, Handler: a.Handler(), Metrics: a.Metrics(),
		Kernel: p.Kernel, Billing: p.Billing, Payments: p.Payments, Webhooks: p.Webhooks, Keys: p.Keys, SigningKey: p.SigningKey}, Server: srv, URL: srv.URL, Inbox: inbox, Clock: clock}
}

// SupplySecrets sets the production secrets a configuration leaves empty, as an operator
// supplies them (production generates none): a signing key file written to a directory of the
// test's own, a master key and a server secret.
func SupplySecrets(t testing.TB, cfg *app.Config) {
	t.Helper()
	if cfg.SigningKeyFile == "" {
		cfg.SigningKeyFile = filepath.Join(t.TempDir(), "supplied-signing-key.pem")
		_, priv, _ := ed25519.GenerateKey(rand.Reader)
		pemBytes, err := signing.MarshalPrivateKeyPEM(priv)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(cfg.SigningKeyFile, pemBytes, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, v := range []*string{&cfg.MasterKey, &cfg.ServerSecret} {
		if *v == "" {
			key := make([]byte, 32)
			rand.Read(key)
			*v = base64.StdEncoding.EncodeToString(key)
		}
	}
}

// App is the built service (its methods: Sweep, Settled, Admin, ...) with what tests reach
// below the doors: the configuration, store and logger the test built it with, its handlers,
// and its app.Parts.
type App struct {
	*app.App
	Config     app.Config
	Store      *store.Store
	Log        *slog.Logger
	Handler    http.Handler // the public front
	Metrics    http.Handler // the operator's /metrics and pprof
	Kernel     *tools.Kernel
	Billing    *billing.Service
	Payments   *payments.Service // nil without the flat-fee network
	Webhooks   *webhooks.Service // endpoints and the delivery worker (RunOnce delivers now)
	Keys       *keyring.Ring
	SigningKey ed25519.PrivateKey // the key file's key the service key ring was seeded with
}

// Inbox is an in-process SMTP server that keeps every message it receives.
type Inbox struct {
	addr string
	mu   sync.Mutex
	msgs []Received
	cond *sync.Cond
}

// Received is one delivered message.
type Received struct {
	From    string
	To      []string
	Subject string
	Text    string
}

// NewInbox starts an SMTP server on loopback, stopped when t ends.
func NewInbox(t testing.TB) *Inbox {
	t.Helper()
	in := &Inbox{}
	in.cond = sync.NewCond(&in.mu)
	s := smtp.NewServer(smtp.BackendFunc(func(*smtp.Conn) (smtp.Session, error) { return &session{inbox: in}, nil }))
	s.Domain = "localhost"
	s.ReadTimeout = 10 * time.Second
	s.WriteTimeout = 10 * time.Second
	s.MaxMessageBytes = 1 << 20
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("smtp listen: %v", err)
	}
	in.addr = l.Addr().String()
	go s.Serve(l)
	t.Cleanup(func() { s.Close() })
	return in
}

// URL is the SWITCHBOARD_SMTP_URL of this server.
func (in *Inbox) URL() string { return "smtp://" + in.addr }

// Messages returns what was received so far.
func (in *Inbox) Messages() []Received {
	in.mu.Lock()
	defer in.mu.Unlock()
	return append([]Received(nil), in.msgs...)
}

var codeRe = regexp.MustCompile(`code is (\d{8})`)

// Code waits up to 10 s for the n-th (1-based) message to `to` and returns the code in it.
func (in *Inbox) Code(t testing.TB, to string, n int) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var seen int
		for _, m := range in.Messages() {
			for _, rcpt := range m.To {
				if strings.EqualFold(rcpt, to) {
					seen++
					if seen == n {
						c := codeRe.FindStringSubmatch(m.Text)
						if c == nil {
							t.Fatalf("message to %s has no code: %q", to, m.Text)
						}
						return c[1]
					}
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no message %d to %s (have %d)", n, to, seen)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

type session struct {
	inbox *Inbox
	from  string
	to    []string
}

func (s *session) Reset()        { s.from, s.to = "", nil }
func (s *session) Logout() error { return nil }

func (s *session) Mail(from string, _ *smtp.MailOptions) error {
	s.from = from
	return nil
}

func (s *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	s.to = append(s.to, to)
	return nil
}

func (s *session) Data(r io.Reader) error {
	msg, err := mail.ReadMessage(r)
	if err != nil {
		return err
	}
	body, err := decodeBody(msg)
	if err != nil {
		return err
	}
	subject, _ := new(mime.WordDecoder).DecodeHeader(msg.Header.Get("Subject"))
	s.inbox.mu.Lock()
	s.inbox.msgs = append(s.inbox.msgs, Received{From: s.from, To: s.to, Subject: subject, Text: body})
	s.inbox.mu.Unlock()
	return nil
}

func decodeBody(msg *mail.Message) (string, error) {
	var r io.Reader = msg.Body
	switch strings.ToLower(msg.Header.Get("Content-Transfer-Encoding")) {
	case "quoted-printable":
		r = quotedprintable.NewReader(r)
	case "base64":
		r = base64.NewDecoder(base64.StdEncoding, r)
	}
	b, err := io.ReadAll(r)
	if err != nil {
		return "", fmt.Errorf("decode body: %w", err)
	}
	return string(b), nil
}

// Config is the app's configuration, for Options.Config.
type Config = app.Config

// Do sends a JSON request (body: a string sent as is, or a value marshalled) with key as a
// Bearer token, and decodes the JSON answer.
func Do(t testing.TB, method, url, key string, body any) (int, http.Header, map[string]any) {
	t.Helper()
	return DoWith(t, method, url, key, body, nil)
}

// DoWith is Do with extra request headers.
func DoWith(t testing.TB, method, url, key string, body any, headers map[string]string) (int, http.Header, map[string]any) {
	t.Helper()
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		r = strings.NewReader(b)
	default:
		raw, _ := json.Marshal(b)
		r = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, url, r)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("%s %s: %d, body not JSON: %q", method, url, resp.StatusCode, raw)
	}
	return resp.StatusCode, resp.Header, out
}

// REST is Do against this service's base URL.
func (e *Env) REST(t testing.TB, method, path, key string, body any) (int, map[string]any) {
	t.Helper()
	status, _, out := Do(t, method, e.URL+path, key, body)
	return status, out
}

// Onboard signs an e-mail up and verifies it over REST, returning the Account.
func (e *Env) Onboard(t testing.TB, email string) map[string]any {
	t.Helper()
	if status, body := e.REST(t, "POST", "/v1/agents/signup", "", map[string]any{"email": email}); status != 200 {
		t.Fatalf("signup %s: %d %v", email, status, body)
	}
	n := 0
	for _, m := range e.Inbox.Messages() {
		for _, to := range m.To {
			if strings.EqualFold(to, email) {
				n++
			}
		}
	}
	status, acct := e.REST(t, "POST", "/v1/agents/verify", "", map[string]any{"email": email, "code": e.Inbox.Code(t, email, n)})
	if status != 200 {
		t.Fatalf("verify %s: %d %v", email, status, acct)
	}
	return acct
}

// keyTransport adds the API key to every request, as an MCP host configured with a header does.
type keyTransport struct {
	key  string
	base http.RoundTripper
}

func (k keyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if k.key != "" {
		r.Header.Set("x-api-key", k.key)
	}
	return k.base.RoundTrip(r)
}

// MCP opens a go-sdk client session over Streamable HTTP with key ("" for none) as the
// x-api-key header, closed when t ends.
func (e *Env) MCP(t testing.TB, key string) *mcp.ClientSession {
	t.Helper()
	return ConnectMCP(t, e.URL+"/mcp", key, http.DefaultTransport)
}

// ConnectMCP opens a go-sdk client session over Streamable HTTP to endpoint through base,
// with key ("" for none) as the x-api-key header, closed when t ends. Benchmarks pass a
// transport that keeps enough idle connections for their concurrency.
func ConnectMCP(t testing.TB, endpoint, key string, base http.RoundTripper) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "apptest", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{
		Endpoint:             endpoint,
		HTTPClient:           &http.Client{Transport: keyTransport{key: key, base: base}},
		DisableStandaloneSSE: true,
	}, nil)
	if err != nil {
		t.Fatalf("connect MCP: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// CallTool calls a tool over MCP and returns its JSON object result, or the error object
// when the result is isError. It fails the test when structuredContent and the text differ.
func CallTool(t testing.TB, cs *mcp.ClientSession, name string, args any) (map[string]any, *tools.Error) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error: %v", name, err)
	}
	text := res.Content[0].(*mcp.TextContent).Text
	if res.IsError {
		var body tools.Body
		if err := json.Unmarshal([]byte(text), &body); err != nil || body.Error == nil {
			t.Fatalf("%s: error result is not the error model: %q", name, text)
		}
		return nil, body.Error
	}
	var out map[string]any
	if err := json.Unmarshal([]byte(text), &out); err != nil {
		t.Fatalf("%s: result is not a JSON object: %q", name, text)
	}
	structured, _ := json.Marshal(res.StructuredContent)
	var a, b any
	json.Unmarshal(structured, &a)
	json.Unmarshal([]byte(text), &b)
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if !bytes.Equal(ja, jb) {
		t.Fatalf("%s: structuredContent %s differs from text %s", name, structured, text)
	}
	return out, nil
}

// KeylessMCPCall posts a bare JSON-RPC tools/call to /mcp with no credentials and returns the
// HTTP answer: a tool that needs a key is challenged with 401 before the MCP server sees it.
func KeylessMCPCall(t testing.TB, baseURL, tool string) (int, http.Header, map[string]any) {
	t.Helper()
	return DoWith(t, "POST", baseURL+"/mcp", "", map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call",
		"params": map[string]any{"name": tool, "arguments": map[string]any{}}}, map[string]string{"Accept": "application/json, text/event-stream"})
}

// Metrics is a parsed /metrics answer, by family name.
type Metrics map[string]*dto.MetricFamily

// Scrape reads /metrics from the app's operator handler (the one SWITCHBOARD_METRICS_ADDR serves).
func (e *Env) Scrape(t testing.TB) Metrics {
	t.Helper()
	rec := httptest.NewRecorder()
	e.App.Metrics.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("/metrics: %d %s", rec.Code, rec.Body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(rec.Body)
	if err != nil {
		t.Fatalf("/metrics is not the Prometheus text format: %v", err)
	}
	return families
}

// Value is the value of the series of family name whose labels include labels (a histogram's
// sample count), and whether there is one.
func (m Metrics) Value(name string, labels map[string]string) (float64, bool) {
	f := m[name]
	if f == nil {
		return 0, false
	}
next:
	for _, s := range f.GetMetric() {
		have := map[string]string{}
		for _, l := range s.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		for k, v := range labels {
			if have[k] != v {
				continue next
			}
		}
		switch {
		case s.Histogram != nil:
			return float64(s.GetHistogram().GetSampleCount()), true
		case s.Counter != nil:
			return s.GetCounter().GetValue(), true
		case s.Gauge != nil:
			return s.GetGauge().GetValue(), true
		default:
			return s.GetUntyped().GetValue(), true
		}
	}
	return 0, false
}

// LabelValues lists the values label takes in family name.
func (m Metrics) LabelValues(name, label string) []string {
	var out []string
	for _, s := range m[name].GetMetric() {
		for _, l := range s.GetLabel() {
			if l.GetName() == label {
				out = append(out, l.GetValue())
			}
		}
	}
	return out
}
