package main

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/switchboard-hq/switchboard/cmd/switchboard/app/apptest"
	"github.com/switchboard-hq/switchboard/signing"
)

// otlpReceiver is an OTLP/HTTP trace collector in the test process: it decodes every export
// (protobuf) and keeps the spans.
type otlpReceiver struct {
	mu       sync.Mutex
	spans    []*tracepb.Span
	services map[string]bool
}

func (o *otlpReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
		http.Error(w, "want a protobuf POST to /v1/traces", http.StatusBadRequest)
		return
	}
	body, _ := io.ReadAll(r.Body)
	var req coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	o.mu.Lock()
	for _, rs := range req.ResourceSpans {
		for _, a := range rs.GetResource().GetAttributes() {
			if a.Key == "service.name" {
				o.services[a.GetValue().GetStringValue()] = true
			}
		}
		for _, ss := range rs.ScopeSpans {
			o.spans = append(o.spans, ss.Spans...)
		}
	}
	o.mu.Unlock()
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(out)
}

// trace returns the received spans of traceID.
func (o *otlpReceiver) trace(traceID []byte) []*tracepb.Span {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []*tracepb.Span
	for _, s := range o.spans {
		if bytes.Equal(s.TraceId, traceID) {
			out = append(out, s)
		}
	}
	return out
}

// TestTracesAcrossBrokerAndPartner runs serve with OTEL_EXPORTER_OTLP_ENDPOINT pointing at an
// OTLP receiver in the test process and calls a partner (TLS, signature-checking) with a W3C
// traceparent: the tool call's span is the caller's span's child, with auth, billing, the
// partner attempt and the batch commit as its children, and the partner receives a
// traceparent naming the attempt's span, beside an envelope that still verifies.
func TestTracesAcrossBrokerAndPartner(t *testing.T) {
	bin := buildBinary(t)
	recv := &otlpReceiver{services: map[string]bool{}}
	collector := httptest.NewServer(recv)
	defer collector.Close()

	dir := t.TempDir()
	keyFile := filepath.Join(dir, "signing-key.pem")
	key, _, err := signing.LoadOrCreatePrivateKey(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var partnerSaw []string
	work := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		partnerSaw = append(partnerSaw, r.Header.Get("traceparent"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"success":true,"result":{"traced":true},"providerCostMicro":100}`)
	})
	partner, caFile := startPartner(t, signing.Middleware(serviceVerifier(key), work), dir)
	env := []string{"SWITCHBOARD_DATA_DIR=" + dir, "SWITCHBOARD_DATABASE_URL=", "SWITCHBOARD_SIGNING_KEY_FILE=" + keyFile,
		"SWITCHBOARD_SMTP_URL=", "SWITCHBOARD_API_KEY=", "SWITCHBOARD_ALLOW_LOCAL_ENDPOINTS=true", "SWITCHBOARD_PARTNER_CA_FILE=" + caFile,
		"OTEL_EXPORTER_OTLP_ENDPOINT=" + collector.URL, "OTEL_BSP_SCHEDULE_DELAY=100", "OTEL_SERVICE_NAME=switchboard-test"}
	s := startServe(t, bin, freeAddr(t), env)
	apiKey := s.onboard("traces@example.com")
	st, out := s.do("POST", "/v1/partner/intents", apiKey, map[string]any{
		"publicIdentifier": "@traced", "name": "Traced", "description": "answers and shows its trace", "category": "QUERY",
		"toolEndpoint": partner.URL + "/work", "timeoutMs": 5000, "feeRate": 0.0005,
		"payoutAddresses": map[string]string{"evm": "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"}})
	if st != 201 {
		t.Fatalf("publish: %d %v", st, out)
	}
	if st, out := s.do("POST", "/v1/partner/intents/"+out["id"].(string)+"/active", apiKey, map[string]any{"active": true}); st != 200 {
		t.Fatalf("activate: %d %v", st, out)
	}
	mu.Lock()
	partnerSaw = nil // the activation's probe is not the call under test
	mu.Unlock()

	traceID, _ := hex.DecodeString("4bf92f3577b34da6a3ce929d0e0e4736")
	callerSpan, _ := hex.DecodeString("00f067aa0ba902b7")
	req, _ := http.NewRequest("POST", s.url+"/v1/invoke", strings.NewReader(`{"message":"@traced go"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-api-key", apiKey)
	req.Header.Set("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var answer map[string]any
	json.NewDecoder(resp.Body).Decode(&answer)
	resp.Body.Close()
	if resp.StatusCode != 200 || answer["success"] != true {
		t.Fatalf("invoke: %d %v", resp.StatusCode, answer)
	}

	// The batch commit ends after the answer; the exporter sends every 100 ms.
	var spans []*tracepb.Span
	var byName map[string][]*tracepb.Span
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		spans = recv.trace(traceID)
		byName = map[string][]*tracepb.Span{}
		for _, sp := range spans {
			byName[sp.Name] = append(byName[sp.Name], sp)
		}
		if len(byName["batch.commit"]) > 0 && len(byName["tool invoke_partner_message"]) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("spans of the trace after 10 s: %v\n%s", names(spans), s.stderr)
		}
	}
	if !recv.services["switchboard-test"] {
		t.Errorf("service names %v, want switchboard-test (OTEL_SERVICE_NAME)", recv.services)
	}
	call := byName["tool invoke_partner_message"][0]
	if !bytes.Equal(call.ParentSpanId, callerSpan) || call.Kind != tracepb.Span_SPAN_KIND_SERVER {
		t.Fatalf("the tool call's span: parent %x kind %v, want the caller's span %x, server", call.ParentSpanId, call.Kind, callerSpan)
	}
	for _, name := range []string{"auth", "billing.reserve", "partner.call", "batch.commit"} {
		if len(byName[name]) == 0 {
			t.Errorf("no %s span in the trace: %v", name, names(spans))
			continue
		}
		for _, sp := range byName[name] {
			if !bytes.Equal(sp.ParentSpanId, call.SpanId) {
				t.Errorf("%s: parent %x, want the tool call's span %x", name, sp.ParentSpanId, call.SpanId)
			}
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	attempt := byName["partner.call"][0]
	if attempt.Kind != tracepb.Span_SPAN_KIND_CLIENT || len(byName["partner.call"]) != 1 {
		t.Errorf("partner attempts: %d, kind %v; want one client span", len(byName["partner.call"]), attempt.Kind)
	}
	want := fmt.Sprintf("00-%x-%x-01", traceID, attempt.SpanId)
	mu.Lock()
	saw := partnerSaw
	mu.Unlock()
	if len(saw) != 1 || saw[0] != want {
		t.Errorf("the partner received traceparent %q, want [%s] (the attempt's span)", saw, want)
	}

	// The MCP door honours traceparent the same way.
	mcpTrace, _ := hex.DecodeString("0af7651916cd43dd8448eb211c80319c")
	mcpCaller, _ := hex.DecodeString("b7ad6b7169203331")
	cs := apptest.ConnectMCP(t, s.url+"/mcp", apiKey, headerTransport{"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"})
	if _, e := apptest.CallTool(t, cs, "account_get", nil); e != nil {
		t.Fatalf("account_get over MCP: %v", e)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		var found *tracepb.Span
		for _, sp := range recv.trace(mcpTrace) {
			if sp.Name == "tool account_get" {
				found = sp
			}
		}
		if found != nil {
			if !bytes.Equal(found.ParentSpanId, mcpCaller) {
				t.Fatalf("account_get over MCP: parent %x, want the caller's %x", found.ParentSpanId, mcpCaller)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no span of account_get in the MCP caller's trace after 10 s: %v", names(recv.trace(mcpTrace)))
		}
	}
	t.Logf("one traced call: %d spans, %v", len(spans), names(spans))
}

// headerTransport sets headers on every request.
type headerTransport map[string]string

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h {
		r.Header.Set(k, v)
	}
	return http.DefaultTransport.RoundTrip(r)
}

func names(spans []*tracepb.Span) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name)
	}
	return out
}
