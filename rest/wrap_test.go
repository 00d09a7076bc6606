package rest_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/rest"
	"github.com/switchboard-hq/switchboard/tools"
)

// stamp is a wrap as cmd's x402 one is shaped: In reads the X-Stamp header into the input's
// stamp (refusing "bad"), Out names the tool in X-Stamped and adds to an error's message.
type stamp struct{}

func (stamp) In(x *tools.Exchange, req *tools.Request) *tools.Error {
	v := x.Header.Get("X-Stamp")
	if v == "" {
		return nil
	}
	if v == "bad" {
		return tools.Errorf(tools.CodeBadInput, "bad stamp")
	}
	var m map[string]any
	json.Unmarshal(req.Args, &m)
	m["stamp"] = v
	req.Args, _ = json.Marshal(m)
	return nil
}

func (stamp) Out(x *tools.Exchange, _ any, e *tools.Error) *tools.Error {
	x.Reply.Header.Set("X-Stamped", x.Tool.Name+" "+string(x.Door))
	if e != nil {
		shown := *e
		shown.Message += " (stamped)"
		return &shown
	}
	return nil
}

type stampIn struct {
	Message string `json:"message"`
	Stamp   string `json:"stamp,omitempty"`
}

// stampServer serves invoke_partner_message (POST /v1/invoke), which echoes its input and
// fails on the message "fail", with opts; calls counts the calls that reached the tool.
func stampServer(t *testing.T, calls *atomic.Int32, opts ...rest.Option) *httptest.Server {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	k, err := tools.NewKernel(nil, nil, nil, log, time.Now, tools.New(tools.Def{Name: "invoke_partner_message", Title: "invoke", Description: "echoes",
		Access: tools.Public, Annotations: tools.Annotations{ReadOnly: tools.Bool(false), Destructive: tools.Bool(false), OpenWorld: tools.Bool(false)}},
		func(_ context.Context, _ *tools.Caller, in stampIn) (stampIn, error) {
			calls.Add(1)
			if in.Message == "fail" {
				return stampIn{}, tools.Errorf(tools.CodeConflict, "failed")
			}
			return in, nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(rest.Handler(k, opts...))
	t.Cleanup(srv.Close)
	return srv
}

func post(t *testing.T, url, body string, h map[string]string) (*http.Response, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	for k, v := range h {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	json.NewDecoder(resp.Body).Decode(&out)
	return resp, out
}

// A wrap given to Handler reads the request's headers into the call, adds headers to the
// answer and changes how an error shows; its refusal is answered without calling the tool.
func TestWrapRunsAroundEveryCall(t *testing.T) {
	var calls atomic.Int32
	srv := stampServer(t, &calls, rest.WithWrap(stamp{}))
	resp, out := post(t, srv.URL+"/v1/invoke", `{"message":"hi"}`, map[string]string{"X-Stamp": "s1"})
	if resp.StatusCode != 200 || out["stamp"] != "s1" || resp.Header.Get("X-Stamped") != "invoke_partner_message rest" {
		t.Fatalf("%d %v, X-Stamped %q", resp.StatusCode, out, resp.Header.Get("X-Stamped"))
	}
	resp, out = post(t, srv.URL+"/v1/invoke", `{"message":"fail"}`, nil)
	msg, _ := out["error"].(map[string]any)["message"].(string)
	if resp.StatusCode != 409 || msg != "failed (stamped)" || resp.Header.Get("X-Stamped") == "" {
		t.Fatalf("error: %d %v, X-Stamped %q", resp.StatusCode, out, resp.Header.Get("X-Stamped"))
	}
	before := calls.Load()
	resp, out = post(t, srv.URL+"/v1/invoke", `{"message":"hi"}`, map[string]string{"X-Stamp": "bad"})
	if resp.StatusCode != 400 || calls.Load() != before || resp.Header.Get("X-Stamped") != "" {
		t.Fatalf("refused by the wrap: %d %v, %d calls reached the tool", resp.StatusCode, out, calls.Load()-before)
	}
}

// Without a wrap the door reads no header beside the body: the transport's extras are the
// wraps' alone.
func TestNoWrapReadsNoHeader(t *testing.T) {
	var calls atomic.Int32
	srv := stampServer(t, &calls)
	resp, out := post(t, srv.URL+"/v1/invoke", `{"message":"hi"}`, map[string]string{"X-Stamp": "s1", "PAYMENT-SIGNATURE": "e30="})
	if resp.StatusCode != 200 || out["stamp"] != nil || out["message"] != "hi" || resp.Header.Get("X-Stamped") != "" {
		t.Fatalf("%d %v", resp.StatusCode, out)
	}
}

type keyedIn struct {
	Name           string `json:"name"`
	IdempotencyKey string `json:"idempotencyKey,omitempty"`
}

// The Idempotency-Key header becomes idempotencyKey for a tool whose definition takes one,
// and is not read for a tool that does not (whatever its input has).
func TestIdempotencyKeyHeaderFollowsTheDefinition(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	def := func(name string, takes bool) tools.Def {
		return tools.Def{Name: name, Title: name, Description: "echoes", Access: tools.Public, TakesIdempotencyKey: takes,
			Annotations: tools.Annotations{ReadOnly: tools.Bool(false), Destructive: tools.Bool(false), OpenWorld: tools.Bool(false)}}
	}
	h := func(_ context.Context, _ *tools.Caller, in keyedIn) (keyedIn, error) { return in, nil }
	k, err := tools.NewKernel(nil, nil, nil, log, time.Now, tools.New(def("api_key_create", true), h), tools.New(def("connected_wallet_add", false), h))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(rest.Handler(k))
	t.Cleanup(srv.Close)
	hdr := map[string]string{rest.IdempotencyHeader: "k-1"}
	if resp, out := post(t, srv.URL+"/v1/keys", `{"name":"a"}`, hdr); resp.StatusCode != 201 || out["idempotencyKey"] != "k-1" {
		t.Fatalf("a tool that takes a key: %d %v", resp.StatusCode, out)
	}
	if resp, out := post(t, srv.URL+"/v1/wallets/connected", `{"name":"a"}`, hdr); resp.StatusCode != 200 || out["idempotencyKey"] != nil {
		t.Fatalf("a tool that takes none: %d %v", resp.StatusCode, out)
	}
}

// Routes is a fresh table on each call: what one caller does to it, no other sees.
func TestRoutesIsAFreshCopy(t *testing.T) {
	a := rest.Routes()
	want := a[0].Path
	a[0].Path = "/v1/changed"
	a[1].Params = map[string]string{"x": "y"}
	if b := rest.Routes(); b[0].Path != want || len(b[1].Params) != 0 {
		t.Fatalf("a change to one table reached the next: %q, %v", b[0].Path, b[1].Params)
	}
}
