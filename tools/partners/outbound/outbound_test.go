package outbound_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/signing"
	"github.com/switchboard-hq/switchboard/tools/partners/outbound"
	"github.com/switchboard-hq/switchboard/tools/partners/partnertest"
)

// fakeDNS answers from a table; a name may change its answer after the first lookup
// (DNS rebinding).
type fakeDNS struct {
	first, later map[string][]netip.Addr
	lookups      atomic.Int32
}

func (d *fakeDNS) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	n := d.lookups.Add(1)
	if n > 1 && d.later != nil {
		if a, ok := d.later[host]; ok {
			return a, nil
		}
	}
	if a, ok := d.first[host]; ok {
		return a, nil
	}
	return nil, errors.New("no such host")
}

func addrs(ss ...string) []netip.Addr {
	var out []netip.Addr
	for _, s := range ss {
		out = append(out, netip.MustParseAddr(s))
	}
	return out
}

func newKey(t *testing.T) ed25519.PrivateKey {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return priv
}

type setup struct {
	priv   ed25519.PrivateKey
	pub    ed25519.PublicKey
	client *outbound.Client
}

// newSetup builds a client trusting httptest's certificate. local is the development
// setting (needed to reach loopback test servers).
func newSetup(t *testing.T, local bool, res outbound.Resolver) *setup {
	t.Helper()
	priv := newKey(t)
	ca := partnertest.Start(t, http.NotFoundHandler()) // any httptest TLS server: they share one certificate
	c, err := outbound.New(outbound.Options{Signer: signing.NewSigner(priv), AllowLocal: local, Resolver: res,
		ExtraCAPEM: partnertest.CAPEM(ca.Server)})
	if err != nil {
		t.Fatal(err)
	}
	return &setup{priv: priv, pub: priv.Public().(ed25519.PublicKey), client: c}
}

func fields() signing.CallFields {
	return signing.CallFields{RequestID: signing.NewRequestID(), IntentDefinitionID: "int_1", UserID: "u_abc",
		Args: json.RawMessage(`{"query":"price of eth","days":7}`)}
}

func TestDisallowed(t *testing.T) {
	cases := map[string]string{
		"127.0.0.1":          "loopback",
		"127.8.9.10":         "loopback",
		"10.1.2.3":           "private",
		"172.20.0.1":         "private",
		"192.168.1.1":        "private",
		"100.64.0.1":         "carrier-grade NAT (shared)",
		"169.254.169.254":    "cloud metadata service",
		"169.254.1.1":        "link-local",
		"0.0.0.0":            "unspecified (this network)",
		"224.0.0.1":          "multicast",
		"255.255.255.255":    "reserved",
		"::1":                "loopback",
		"::":                 "unspecified",
		"fd12:3456::1":       "unique local (IPv6 private)",
		"fd00:ec2::254":      "cloud metadata service",
		"fe80::1":            "link-local",
		"::ffff:127.0.0.1":   "loopback",
		"::ffff:10.0.0.1":    "private",
		"64:ff9b::a00:1":     "private", // NAT64 of 10.0.0.1
		"2002:a00:1::1":      "private", // 6to4 of 10.0.0.1
		"2001:db8::1":        "documentation",
		"ff02::1":            "multicast",
		"::a00:1":            "not global unicast",
		"8.8.8.8":            "",
		"93.184.216.34":      "",
		"2606:4700::1111":    "",
		"64:ff9b::808:808":   "", // NAT64 of 8.8.8.8
		"::ffff:93.184.0.10": "",
	}
	for ip, want := range cases {
		if got := outbound.Disallowed(netip.MustParseAddr(ip)); got != want {
			t.Errorf("Disallowed(%s) = %q, want %q", ip, got, want)
		}
	}
}

func TestCheckURL(t *testing.T) {
	dns := &fakeDNS{first: map[string][]netip.Addr{
		"partner.example":  addrs("93.184.216.34", "2606:4700::1111"),
		"sneaky.example":   addrs("127.0.0.1"),
		"mixed.example":    addrs("93.184.216.34", "10.0.0.7"),
		"internal.example": addrs("fd00::5"),
	}}
	g := &outbound.Guard{Resolver: dns}
	ctx := context.Background()
	blocked := []string{
		"https://127.0.0.1/x",
		"https://localhost.:8443/x", // unknown to the fake DNS: fails resolution, tested below
		"https://10.0.0.1/x",
		"https://169.254.169.254/latest/meta-data/",
		"https://[fd00::1]/x",
		"https://[::1]:8443/x",
		"https://sneaky.example/x",
		"https://mixed.example/x",
		"https://internal.example/x",
	}
	for _, raw := range blocked {
		_, err := g.CheckURL(ctx, raw)
		if raw == "https://localhost.:8443/x" {
			if err == nil {
				t.Errorf("%s: accepted an unresolvable host", raw)
			}
			continue
		}
		if !outbound.IsBlocked(err) {
			t.Errorf("%s: got %v, want a BlockedError", raw, err)
		}
	}
	bad := []string{"http://partner.example/x", "ftp://partner.example/x", "https:///x", "https://u:p@partner.example/x",
		"https://partner.example/x#frag", "partner.example/x", "https://partner.example:99999/x"}
	for _, raw := range bad {
		var ue *outbound.URLError
		if _, err := g.CheckURL(ctx, raw); !errors.As(err, &ue) {
			t.Errorf("%s: got %v, want a URLError", raw, err)
		}
	}
	if _, err := g.CheckURL(ctx, "https://partner.example/tool?v=1"); err != nil {
		t.Errorf("public endpoint refused: %v", err)
	}
	// The development setting allows http and local addresses.
	dev := &outbound.Guard{AllowLocal: true, Resolver: dns}
	for _, raw := range []string{"http://127.0.0.1:8080/x", "https://sneaky.example/x", "http://localhost/x"} {
		if _, err := dev.CheckURL(ctx, raw); err != nil {
			t.Errorf("development setting refused %s: %v", raw, err)
		}
	}
}

// With the development setting off, the dialer refuses loopback however the URL got
// there, and a name that resolved publicly at publish but resolves to loopback at dial
// time (DNS rebinding) is refused too. The partner never sees a request.
func TestGuardAtDial(t *testing.T) {
	dns := &fakeDNS{
		first: map[string][]netip.Addr{"rebind.example": addrs("93.184.216.34")},
		later: map[string][]netip.Addr{"rebind.example": addrs("127.0.0.1")},
	}
	s := newSetup(t, false, dns)
	p := partnertest.Correct(t, s.pub)
	u, _ := url.Parse(p.URL)

	// Published on 443 (a publish takes 443 or 8443); dialled below on the test partner's port.
	if _, err := s.client.Guard().CheckURL(context.Background(), "https://rebind.example/tool"); err != nil {
		t.Fatalf("publish-time check: %v", err)
	}
	for _, endpoint := range []string{p.URL, "https://rebind.example:" + u.Port() + "/tool"} {
		_, err := s.client.Call(context.Background(), outbound.Target{Endpoint: endpoint, Timeout: 5 * time.Second}, fields())
		if !outbound.IsBlocked(err) {
			t.Errorf("%s: got %v, want the guard to refuse the dial", endpoint, err)
		}
		rep := s.client.Probe(context.Background(), outbound.Target{Endpoint: endpoint, Timeout: 5 * time.Second}, fields())
		if rep.Verdict != outbound.ProbeFail || rep.Steps[0].Verdict != outbound.StepBlocked {
			t.Errorf("%s: probe %+v, want FAIL with BLOCKED steps", endpoint, rep)
		}
		mcpTarget := outbound.Target{Endpoint: endpoint, Binding: signing.BindingMCPHTTP, ToolName: "@x", Timeout: 5 * time.Second}
		if _, err := s.client.Call(context.Background(), mcpTarget, fields()); !outbound.IsBlocked(err) {
			t.Errorf("%s over MCP: got %v, want the guard to refuse the dial", endpoint, err)
		}
	}
	if n := len(p.Hits()); n != 0 {
		t.Fatalf("the partner received %d requests through the guard", n)
	}
}

func TestCallREST(t *testing.T) {
	s := newSetup(t, true, nil)
	p := partnertest.Correct(t, s.pub)
	f := fields()
	res, err := s.client.Call(context.Background(), outbound.Target{Endpoint: p.URL}, f)
	if err != nil {
		t.Fatal(err)
	}
	if !res.OK() || res.Status != 200 || res.Envelope.ProviderCostMicro != 1500 {
		t.Fatalf("result %+v (parse: %s)", res, res.ParseError)
	}
	var echoed struct {
		RequestID string          `json:"requestId"`
		UserID    string          `json:"userId"`
		Args      json.RawMessage `json:"args"`
	}
	if err := json.Unmarshal(res.Envelope.Result, &echoed); err != nil {
		t.Fatal(err)
	}
	if echoed.RequestID != f.RequestID || echoed.UserID != "u_abc" || string(echoed.Args) != `{"days":7,"query":"price of eth"}` {
		t.Fatalf("partner saw %+v", echoed)
	}
	h := p.Hits()[0]
	if h.Header.Get(signing.HeaderIdempotencyKey) != f.RequestID || h.Header.Get(signing.HeaderUserID) != "" {
		t.Fatalf("headers %v", h.Header)
	}
}

func TestCallFailuresAreResults(t *testing.T) {
	s := newSetup(t, true, nil)
	p := partnertest.Fails500(t)
	res, err := s.client.Call(context.Background(), outbound.Target{Endpoint: p.URL}, fields())
	if err != nil {
		t.Fatal(err)
	}
	if res.OK() || res.Status != 500 || res.Envelope == nil || res.Envelope.Success || res.Envelope.Error.Code != "UPSTREAM" {
		t.Fatalf("result %+v", res)
	}
}

func TestNoRedirectsAndBodyCap(t *testing.T) {
	s := newSetup(t, true, nil)
	var followed atomic.Bool
	target := partnertest.Start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { followed.Store(true) }))
	redirect := partnertest.Start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL, http.StatusTemporaryRedirect)
	}))
	res, err := s.client.Call(context.Background(), outbound.Target{Endpoint: redirect.URL}, fields())
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != http.StatusTemporaryRedirect || res.OK() || followed.Load() {
		t.Fatalf("redirect followed or mis-reported: %+v, followed %v", res, followed.Load())
	}
	huge := partnertest.Start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"success":true,"result":"`))
		w.Write([]byte(strings.Repeat("x", 2<<20)))
		w.Write([]byte(`"}`))
	}))
	res, err = s.client.Call(context.Background(), outbound.Target{Endpoint: huge.URL}, fields())
	if err != nil {
		t.Fatal(err)
	}
	if res.OK() || !strings.Contains(res.ParseError, "over 1048576 bytes") || len(res.Body) > outbound.DefaultMaxBody {
		t.Fatalf("oversized body: ok=%v parse=%q len=%d", res.OK(), res.ParseError, len(res.Body))
	}
}

func TestTLSIsVerified(t *testing.T) {
	priv := newKey(t)
	c, err := outbound.New(outbound.Options{Signer: signing.NewSigner(priv), AllowLocal: true}) // no extra CA
	if err != nil {
		t.Fatal(err)
	}
	p := partnertest.Correct(t, priv.Public().(ed25519.PublicKey))
	if _, err := c.Call(context.Background(), outbound.Target{Endpoint: p.URL}, fields()); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("untrusted certificate: got %v", err)
	}
	if _, err := outbound.New(outbound.Options{ExtraCAPEM: []byte("not pem")}); err == nil {
		t.Fatal("a CA file without certificates was accepted")
	}
}

func TestProbe(t *testing.T) {
	s := newSetup(t, true, nil)
	cases := []struct {
		name     string
		partner  func(t *testing.T) *partnertest.Partner
		binding  signing.Binding
		verdict  string
		unsigned string
		forged   string
	}{
		{"correct REST", func(t *testing.T) *partnertest.Partner { return partnertest.Correct(t, s.pub) }, "", outbound.ProbePass, outbound.StepRejected, outbound.StepRejected},
		{"accepts unsigned", func(t *testing.T) *partnertest.Partner { return partnertest.AcceptsUnsigned(t, s.pub) }, "", outbound.ProbeFail, outbound.StepAccepted, outbound.StepRejected},
		{"accepts forged", func(t *testing.T) *partnertest.Partner { return partnertest.AcceptsForged(t) }, "", outbound.ProbeFail, outbound.StepRejected, outbound.StepAccepted},
		{"fails 500", func(t *testing.T) *partnertest.Partner { return partnertest.Fails500(t) }, "", outbound.ProbeFail, outbound.StepWrongStatus, outbound.StepWrongStatus},
		{"hangs", func(t *testing.T) *partnertest.Partner { return partnertest.Hangs(t) }, "", outbound.ProbeInconclusive, outbound.StepInconclusive, outbound.StepInconclusive},
		{"correct MCP", func(t *testing.T) *partnertest.Partner { return partnertest.MCP(t, s.pub, "@echo", true) }, signing.BindingMCPHTTP, outbound.ProbePass, outbound.StepRejected, outbound.StepRejected},
		{"unprotected MCP", func(t *testing.T) *partnertest.Partner { return partnertest.MCP(t, s.pub, "@echo", false) }, signing.BindingMCPHTTP, outbound.ProbeFail, outbound.StepAccepted, outbound.StepAccepted},
		{"hanging MCP", func(t *testing.T) *partnertest.Partner { return partnertest.Hangs(t) }, signing.BindingMCPHTTP, outbound.ProbeInconclusive, outbound.StepInconclusive, outbound.StepInconclusive},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.partner(t)
			timeout := 5 * time.Second
			if tc.verdict == outbound.ProbeInconclusive {
				timeout = 300 * time.Millisecond
			}
			rep := s.client.Probe(context.Background(), outbound.Target{Endpoint: p.URL, Binding: tc.binding, ToolName: "@echo", Timeout: timeout}, fields())
			if rep.Verdict != tc.verdict || rep.Steps[0].Request != outbound.ProbeUnsigned || rep.Steps[0].Verdict != tc.unsigned ||
				rep.Steps[1].Request != outbound.ProbeForged || rep.Steps[1].Verdict != tc.forged {
				t.Fatalf("report %+v", rep)
			}
			if rep.Reason == "" {
				t.Fatal("no reason")
			}
			// The forged request carried a well-formed signature; the unsigned one none.
			for _, h := range p.Hits() {
				if h.Method == "initialize" || h.Method == "notifications/initialized" {
					continue
				}
				if h.Signature != "" && len(h.Signature) != signing.SignatureBase64Len {
					t.Errorf("forged signature is not well-formed: %q", h.Signature)
				}
			}
		})
	}
}

func TestCallMCP(t *testing.T) {
	s := newSetup(t, true, nil)
	p := partnertest.MCP(t, s.pub, "@echo-tool", true)
	f := fields()
	res, err := s.client.Call(context.Background(), outbound.Target{Endpoint: p.URL, Binding: signing.BindingMCPHTTP, ToolName: "@echo-tool"}, f)
	if err != nil {
		t.Fatal(err)
	}
	if !res.OK() {
		t.Fatalf("result %+v (%s)", res, res.ParseError)
	}
	var echoed struct {
		RequestID string          `json:"requestId"`
		UserID    string          `json:"userId"`
		Args      json.RawMessage `json:"args"`
	}
	json.Unmarshal(res.Envelope.Result, &echoed)
	if echoed.RequestID != f.RequestID || echoed.UserID != "u_abc" || string(echoed.Args) != `{"days":7,"query":"price of eth"}` {
		t.Fatalf("partner saw %+v", echoed)
	}
	var calls int
	for _, h := range p.Hits() {
		if h.Method == "tools/call" {
			calls++
			if h.Header.Get(signing.HeaderUserID) != "u_abc" || h.Header.Get(signing.HeaderRequestID) != f.RequestID {
				t.Errorf("tools/call headers %v", h.Header)
			}
		}
	}
	if calls != 1 {
		t.Fatalf("%d tools/call", calls)
	}
	// A wrong tool name is an answer, not a network error.
	res, err = s.client.Call(context.Background(), outbound.Target{Endpoint: p.URL, Binding: signing.BindingMCPHTTP, ToolName: "@other"}, fields())
	if err != nil || res.OK() || res.ParseError == "" {
		t.Fatalf("unknown tool: %+v %v", res, err)
	}
}

func TestParseResponse(t *testing.T) {
	good := []string{
		`{"success":true,"result":{"a":1}}`,
		`{"success":true,"result":null,"providerCostMicro":0}`,
		`{"success":false,"error":{"code":"BAD_INPUT","message":"ticker?"}}`,
		`{"success":true,"result":[1],"providerCostMicro":250000,"extra":"ok"}`,
	}
	for _, b := range good {
		if env, why := outbound.ParseResponse([]byte(b)); env == nil {
			t.Errorf("%s refused: %s", b, why)
		}
	}
	bad := []string{``, `[]`, `{"result":1}`, `{"success":"yes"}`, `{"success":true}`, `{"success":false}`,
		`{"success":false,"error":{"message":"x"}}`, `{"success":true,"result":1,"providerCostMicro":-1}`,
		`{"success":true,"result":1,"providerCostMicro":1.5}`, `{"success":true,"result":1} {}`}
	for _, b := range bad {
		if env, why := outbound.ParseResponse([]byte(b)); env != nil || why == "" {
			t.Errorf("%s accepted", b)
		}
	}
	// An answer nested past the limit is refused before it is decoded, naming the limit.
	deep := `{"success":true,"result":` + strings.Repeat(`{"a":`, 100_000) + "1" + strings.Repeat("}", 100_000) + "}"
	if env, why := outbound.ParseResponse([]byte(deep)); env != nil || !strings.Contains(why, "nested deeper than 64 levels") {
		t.Errorf("a deep answer: %v %q", env, why)
	}
}

// Numeric host forms that C resolvers read as addresses (127.1, 2130706433, 0x7f000001,
// 0177.0.0.1, ...) are refused by the guard itself, whatever a resolver would answer: here
// the test's resolver would even call them public, and it is never asked.
func TestNumericHostFormsAreRefused(t *testing.T) {
	forms := []string{"0x7f000001", "2130706433", "0177.0.0.1", "127.1", "0x7f.1", "127.0.1", "017700000001", "0x7F.0.0.1", "10.1", "3232235777", "1.2.3.04"}
	public := map[string][]netip.Addr{}
	for _, f := range forms {
		public[f] = addrs("93.184.216.34")
	}
	dns := &fakeDNS{first: public}
	g := &outbound.Guard{Resolver: dns}
	ctx := context.Background()
	for _, f := range forms {
		var ue *outbound.URLError
		if _, err := g.CheckURL(ctx, "https://"+f+"/tool"); !errors.As(err, &ue) || !strings.Contains(err.Error(), "non-standard form") {
			t.Errorf("%s at publish: %v, want a URLError naming the form", f, err)
		}
		if _, err := g.DialContext(ctx, "tcp", net.JoinHostPort(f, "443")); err == nil || !strings.Contains(err.Error(), "non-standard form") {
			t.Errorf("%s at dial: %v, want it refused", f, err)
		}
	}
	if n := dns.lookups.Load(); n != 0 {
		t.Fatalf("the resolver was asked %d times about numeric forms", n)
	}
	// Names and canonical addresses are unaffected.
	dns.first["api.example"] = addrs("93.184.216.34")
	for _, ok := range []string{"https://api.example/x", "https://93.184.216.34/x", "https://[2606:4700::1111]/x"} {
		if _, err := g.CheckURL(ctx, ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
}

// The address checked is the address dialled: the dialer resolves once per connection and
// connects to exactly what it checked, so a name cannot answer one way to the check and
// another to the connection.
func TestDialResolvesOncePerConnection(t *testing.T) {
	dns := &fakeDNS{
		first: map[string][]netip.Addr{"flip.example": addrs("127.0.0.1")},
		later: map[string][]netip.Addr{"flip.example": addrs("93.184.216.34")},
	}
	g := &outbound.Guard{Resolver: dns}
	_, err := g.DialContext(context.Background(), "tcp", "flip.example:443")
	if !outbound.IsBlocked(err) {
		t.Fatalf("dial: %v, want the first answer (loopback) refused", err)
	}
	if n := dns.lookups.Load(); n != 1 {
		t.Fatalf("%d lookups for one dial, want 1 (a second lookup could be answered differently)", n)
	}
}
