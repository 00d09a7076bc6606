package mcpserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/switchboard-hq/switchboard/mcpserver"
	"github.com/switchboard-hq/switchboard/store/accounts"
	"github.com/switchboard-hq/switchboard/tools"
)

// replica is one Switchboard replica's MCP door on a loopback server.
type replica struct {
	url  string
	door *mcpserver.Door
}

func newReplica(t *testing.T, k *tools.Kernel, w world, name string, limits mcpserver.SessionLimits) replica {
	t.Helper()
	srv := mcpserver.New(k, mcpserver.Options{Name: "switchboard", Version: "test", Log: quiet, Replica: name})
	door := mcpserver.HTTPHandler(srv, mcpserver.HTTPOptions{Log: quiet, Auth: w.auth, Sessions: limits})
	hs := httptest.NewServer(door)
	t.Cleanup(func() { hs.Close(); door.Close() })
	return replica{url: hs.URL, door: door}
}

// host connects a go-sdk client on revision version with key (none: ""); answer, when set,
// is its elicitation handler (so it declares elicitation). asked counts its elicitations.
func host(t *testing.T, url, key, version string, answer func() (*mcp.ElicitResult, error)) (*mcp.ClientSession, *int) {
	t.Helper()
	asked := new(int)
	opts := &mcp.ClientOptions{}
	if answer != nil {
		opts.ElicitationHandler = func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			*asked++
			return answer()
		}
	}
	h := headers{}
	if key != "" {
		h["x-api-key"] = key
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1"}, opts).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: h}, DisableStandaloneSSE: true},
		&mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect on %s: %v", version, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, asked
}

func approve() (*mcp.ElicitResult, error) {
	return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "approve"}}, nil
}

func decline() (*mcp.ElicitResult, error) {
	return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "decline"}}, nil
}

var sessionLimits = mcpserver.SessionLimits{PerReplica: 10, PerKey: 5, Idle: time.Hour}

// Hosts on 2025-06-18 and 2025-11-25 that declare elicitation get a session over HTTP, and a
// write's confirmation as an elicitation: approved, it is sent once; declined, nothing is.
func TestSessionElicitsOnEarlierRevisions(t *testing.T) {
	k, w := newKernelWith(t)
	r := newReplica(t, k, w, "replica-a", sessionLimits)
	for _, version := range []string{"2025-06-18", "2025-11-25"} {
		t.Run(version, func(t *testing.T) {
			cs, asked := host(t, r.url, secret, version, approve)
			if !strings.HasPrefix(cs.ID(), "replica-a.") {
				t.Fatalf("session id %q does not name its replica", cs.ID())
			}
			before := w.sent.Load()
			out, e := call(t, cs, "confirm_write", map[string]any{})
			if e != nil || out["sent"] != true || out["request"] != "req-1" || *asked != 1 || w.sent.Load() != before+1 {
				t.Fatalf("approved: %v %v, asked %d, sent %d", out, e, *asked, w.sent.Load()-before)
			}

			cs, asked = host(t, r.url, secret, version, decline)
			out, e = call(t, cs, "confirm_write", map[string]any{})
			if e != nil || out["declined"] != true || *asked != 1 || w.sent.Load() != before+1 {
				t.Fatalf("declined: %v %v, asked %d, sent %d", out, e, *asked, w.sent.Load()-before)
			}
		})
	}
}

// Everyone else stays stateless, with the confirmRequestId round trip: no elicitation
// declared, no key, a key that does not authenticate, and MCP 2026-07-28 (which asks inside
// an input_required result instead).
func TestNoSessionWithoutNeed(t *testing.T) {
	k, w := newKernelWith(t)
	r := newReplica(t, k, w, "replica-a", sessionLimits)
	for _, c := range []struct {
		name, key, version string
		answer             func() (*mcp.ElicitResult, error)
	}{
		{"no elicitation", secret, "2025-11-25", nil},
		{"no key", "", "2025-11-25", approve},
		{"an unknown key", "sb_test_unknown", "2025-06-18", approve},
	} {
		t.Run(c.name, func(t *testing.T) {
			cs, asked := host(t, r.url, c.key, c.version, c.answer)
			_, e := call(t, cs, "confirm_write", map[string]any{})
			if cs.ID() != "" || e == nil || e.Code != tools.CodeConfirmationRequired || *asked != 0 {
				t.Fatalf("session %q, %v, asked %d", cs.ID(), e, *asked)
			}
		})
	}
	cs, asked := host(t, r.url, secret, "2026-07-28", approve)
	out, e := call(t, cs, "confirm_write", map[string]any{})
	if cs.ID() != "" || e != nil || out["sent"] != true || *asked != 1 || r.door.Live() != 0 {
		t.Fatalf("2026-07-28: session %q, %v %v, asked %d, live %d", cs.ID(), out, e, *asked, r.door.Live())
	}
}

// Sessions are capped per key and per replica; a host past a cap is served statelessly (the
// confirmRequestId round trip), and a closed session frees its place.
func TestSessionCaps(t *testing.T) {
	k, w := newKernelWith(t)
	ctx := context.Background()
	const other = "sb_test_other"
	if err := accounts.New(w.store).CreateKey(ctx, &accounts.APIKey{ID: "k-other", AccountID: "acct", Name: "o", Prefix: "o", Hash: tools.HashKey(other),
		Scopes: []string{"read"}, SpendLimitMicro: 1, RateLimitPerMinute: 100, CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	r := newReplica(t, k, w, "replica-a", mcpserver.SessionLimits{PerReplica: 3, PerKey: 2, Idle: time.Hour})
	first, _ := host(t, r.url, secret, "2025-11-25", approve)
	host(t, r.url, secret, "2025-11-25", approve)
	over, asked := host(t, r.url, secret, "2025-11-25", approve)
	if _, e := call(t, over, "confirm_write", map[string]any{}); over.ID() != "" || e == nil || e.Code != tools.CodeConfirmationRequired || *asked != 0 {
		t.Fatalf("a third session of one key (cap 2): session %q, %v, asked %d", over.ID(), e, *asked)
	}
	if s, _ := host(t, r.url, other, "2025-11-25", approve); s.ID() == "" {
		t.Fatal("another key was refused a session under the replica's cap")
	}
	if s, _ := host(t, r.url, other, "2025-11-25", approve); s.ID() != "" || r.door.Live() != 3 {
		t.Fatalf("a fourth session on a replica capped at 3: %q, live %d", s.ID(), r.door.Live())
	}
	first.Close() // DELETE: the place is free again, once the server has closed the session
	for until := time.Now().Add(10 * time.Second); r.door.Live() != 2 && time.Now().Before(until); {
		time.Sleep(10 * time.Millisecond)
	}
	if s, _ := host(t, r.url, secret, "2025-11-25", approve); s.ID() == "" {
		t.Fatalf("no session after one was closed: live %d", r.door.Live())
	}
}

// post sends one JSON-RPC message on session sid with key, and returns the status.
func post(t *testing.T, url, sid, key, body string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", sid)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	if key != "" {
		req.Header.Set("x-api-key", key)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}

// Every request on a session is authenticated: a session id is worth nothing without its key
// or with another one, and a revoked key ends its sessions.
func TestSessionKeyCheckedOnEveryRequest(t *testing.T) {
	k, w := newKernelWith(t)
	ctx := context.Background()
	const other = "sb_test_other"
	if err := accounts.New(w.store).CreateKey(ctx, &accounts.APIKey{ID: "k-other", AccountID: "acct", Name: "o", Prefix: "o", Hash: tools.HashKey(other),
		Scopes: []string{"read"}, SpendLimitMicro: 1, RateLimitPerMinute: 100, CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	r := newReplica(t, k, w, "replica-a", sessionLimits)
	cs, _ := host(t, r.url, secret, "2025-11-25", approve)
	const ping = `{"jsonrpc":"2.0","id":7,"method":"ping"}`
	if got := post(t, r.url, cs.ID(), secret, ping); got != http.StatusOK {
		t.Fatalf("its own key: %d", got)
	}
	if got := post(t, r.url, cs.ID(), other, ping); got != http.StatusNotFound {
		t.Fatalf("another key of the same account: %d, want 404", got)
	}
	if got := post(t, r.url, cs.ID(), "", ping); got != http.StatusUnauthorized {
		t.Fatalf("no key: %d, want 401", got)
	}
	if _, err := accounts.New(w.store).RevokeKey(ctx, "acct", "k-read", time.Now(), nil); err != nil {
		t.Fatal(err)
	}
	if got := post(t, r.url, cs.ID(), secret, ping); got != http.StatusUnauthorized || r.door.Live() != 0 {
		t.Fatalf("a revoked key: %d, live %d; want 401 and the session closed", got, r.door.Live())
	}
}

// A session lost (its replica restarted, or the host's request reached another replica) is
// answered 404, as the MCP spec says; the host initializes again, and a quote made before the
// loss is confirmed by the confirmRequestId round trip on any replica. A confirmation the
// host fails to answer falls back to that round trip too.
func TestSessionLost(t *testing.T) {
	k, w := newKernelWith(t)
	a := newReplica(t, k, w, "replica-a", sessionLimits)
	b := newReplica(t, k, w, "replica-b", sessionLimits)

	// The host's elicitation fails (its window was closed): the call answers CONFIRMATION_REQUIRED.
	cs, asked := host(t, a.url, secret, "2025-06-18", func() (*mcp.ElicitResult, error) { return nil, errors.New("window closed") })
	_, e := call(t, cs, "confirm_write", map[string]any{})
	if e == nil || e.Code != tools.CodeConfirmationRequired || e.Details["requestId"] != "req-1" || *asked != 1 || w.sent.Load() != 0 {
		t.Fatalf("an unanswered elicitation: %v, asked %d, sent %d", e, *asked, w.sent.Load())
	}

	// The session reaches replica b: unknown there.
	const ping = `{"jsonrpc":"2.0","id":7,"method":"ping"}`
	if got := post(t, b.url, cs.ID(), secret, ping); got != http.StatusNotFound {
		t.Fatalf("a session of replica a on replica b: %d, want 404", got)
	}
	// Replica a restarts: its sessions are gone.
	a.door.Close()
	if got := post(t, a.url, cs.ID(), secret, ping); got != http.StatusNotFound {
		t.Fatalf("a session after its replica restarted: %d, want 404", got)
	}
	// The host initializes again (on b) and confirms the quote it holds by confirmRequestId.
	again, asked := host(t, b.url, secret, "2025-06-18", approve)
	if !strings.HasPrefix(again.ID(), "replica-b.") {
		t.Fatalf("initialized again: session %q", again.ID())
	}
	out, e := call(t, again, "confirm_write", map[string]any{"confirmRequestId": e.Details["requestId"]})
	if e != nil || out["sent"] != true || *asked != 0 || w.sent.Load() != 1 {
		t.Fatalf("confirmRequestId after the loss: %v %v, asked %d, sent %d", out, e, *asked, w.sent.Load())
	}
}

// A session nobody uses is closed after the idle timeout.
func TestSessionIdleTimeout(t *testing.T) {
	k, w := newKernelWith(t)
	r := newReplica(t, k, w, "replica-a", mcpserver.SessionLimits{PerReplica: 10, PerKey: 5, Idle: 50 * time.Millisecond})
	// The initialize alone (a host's next request could come after the 50 ms under load).
	req, _ := http.NewRequest(http.MethodPost, r.url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":`+
		`{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"host","version":"1"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("x-api-key", secret)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	sid := res.Header.Get("Mcp-Session-Id")
	if res.StatusCode != http.StatusOK || !strings.HasPrefix(sid, "replica-a.") {
		t.Fatalf("initialize: %d, session %q", res.StatusCode, sid)
	}
	for deadline := time.Now().Add(10 * time.Second); r.door.Live() != 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("an idle session still open after 10 s (idle timeout 50 ms): live %d", r.door.Live())
		}
	}
	if got := post(t, r.url, sid, secret, `{"jsonrpc":"2.0","id":7,"method":"ping"}`); got != http.StatusNotFound {
		t.Fatalf("a request on the closed idle session: %d, want 404", got)
	}
}

// A replica that starts draining stops waiting for a human: the confirmation still open
// answers CONFIRMATION_REQUIRED on the call's own stream, and the quote is completed by
// confirmRequestId on another replica.
func TestDrainEndsWaitingConfirmations(t *testing.T) {
	k, w := newKernelWith(t)
	asking, endAsks := context.WithCancel(context.Background())
	defer endAsks()
	srv := mcpserver.New(k, mcpserver.Options{Name: "switchboard", Version: "test", Log: quiet, Replica: "replica-a", Asking: asking})
	door := mcpserver.HTTPHandler(srv, mcpserver.HTTPOptions{Log: quiet, Auth: w.auth, Sessions: sessionLimits})
	hs := httptest.NewServer(door)
	t.Cleanup(func() { hs.Close(); door.Close() })

	// The human never answers; the replica drains while the form is open.
	away := make(chan struct{})
	cs, asked := host(t, hs.URL, secret, "2025-11-25", func() (*mcp.ElicitResult, error) {
		endAsks()
		<-away
		return nil, errors.New("the human never came back")
	})
	t.Cleanup(func() { close(away) })
	// Well before the quote expires (a minute): the drain, not the expiry, ends the wait.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "confirm_write", Arguments: map[string]any{}})
	if err != nil {
		t.Fatalf("the call still waits for the human after the drain began: %v", err)
	}
	var body tools.Body
	json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &body)
	e := body.Error
	if e == nil || e.Code != tools.CodeConfirmationRequired || e.Details["requestId"] != "req-1" || *asked != 1 || w.sent.Load() != 0 {
		t.Fatalf("a confirmation open when the replica drains: %v, asked %d, sent %d", e, *asked, w.sent.Load())
	}
	b := newReplica(t, k, w, "replica-b", sessionLimits)
	again, _ := host(t, b.url, secret, "2025-11-25", approve)
	if out, e := call(t, again, "confirm_write", map[string]any{"confirmRequestId": "req-1"}); e != nil || out["sent"] != true || w.sent.Load() != 1 {
		t.Fatalf("confirmRequestId on another replica: %v %v, sent %d", out, e, w.sent.Load())
	}
}
