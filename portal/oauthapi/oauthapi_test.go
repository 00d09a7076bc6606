package oauthapi_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/switchboard-hq/switchboard/portal/oauthapi"
	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/storetest"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/oauth"
	"github.com/switchboard-hq/switchboard/tools/service"
)

func serve(t *testing.T, st *store.Store) *httptest.Server {
	t.Helper()
	svc := oauth.New(oauth.Config{Issuer: "https://sb.example", Resource: "https://sb.example/mcp"}, service.Deps{Store: st})
	srv := httptest.NewServer(oauthapi.New(svc, nil))
	t.Cleanup(srv.Close)
	return srv
}

func do(t *testing.T, req *http.Request) (*http.Response, map[string]any) {
	t.Helper()
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out map[string]any
	json.NewDecoder(res.Body).Decode(&out)
	return res, out
}

// The metadata documents name the endpoints the hosts call, under the issuer.
func TestMetadata(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		srv := serve(t, st)
		res, out := do(t, mustReq(t, "GET", srv.URL+"/.well-known/oauth-authorization-server", nil))
		if res.StatusCode != 200 || out["token_endpoint"] != "https://sb.example/oauth/token" || out["registration_endpoint"] != "https://sb.example/oauth/register" ||
			res.Header.Get("Cache-Control") != "no-store" || res.Header.Get("Access-Control-Allow-Origin") != "*" {
			t.Fatalf("authorization server metadata: %d %v %v", res.StatusCode, res.Header, out)
		}
		for _, path := range []string{"/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"} {
			res, out := do(t, mustReq(t, "GET", srv.URL+path, nil))
			if res.StatusCode != 200 || out["resource"] != "https://sb.example/mcp" {
				t.Fatalf("%s: %d %v", path, res.StatusCode, out)
			}
		}
	})
}

func mustReq(t *testing.T, method, u string, body *strings.Reader) *http.Request {
	t.Helper()
	var req *http.Request
	var err error
	if body == nil {
		req, err = http.NewRequestWithContext(t.Context(), method, u, nil)
	} else {
		req, err = http.NewRequestWithContext(t.Context(), method, u, body)
	}
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// Registration refuses what is not a bounded JSON registration with RFC 7591's error, takes a
// loopback redirect, and is limited per client address; the token and revoke endpoints want
// a form; a browser's preflight is answered.
func TestRegistrationAndForms(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		srv := serve(t, st)
		register := func(body string) (*http.Response, map[string]any) {
			req := mustReq(t, "POST", srv.URL+"/oauth/register", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set(tools.HeaderClientAddr, "203.0.113.9")
			return do(t, req)
		}
		if res, out := register("not json"); res.StatusCode != 400 || out["error"] != "invalid_client_metadata" {
			t.Fatalf("a body that is not JSON: %d %v", res.StatusCode, out)
		}
		if res, out := register(`{"redirect_uris":` + strings.Repeat("[", 200) + strings.Repeat("]", 200) + `}`); res.StatusCode != 400 || !strings.Contains(out["error_description"].(string), "nest") {
			t.Fatalf("a deeply nested body: %d %v", res.StatusCode, out)
		}
		res, out := register(`{"client_name":"host","redirect_uris":["http://127.0.0.1:33418/callback"]}`)
		if res.StatusCode != 201 || out["client_id"] == "" {
			t.Fatalf("a loopback registration: %d %v", res.StatusCode, out)
		}
		limited := false
		for range 25 {
			if res, _ := register(`{"client_name":"host","redirect_uris":["http://127.0.0.1:1/cb"]}`); res.StatusCode == 429 {
				limited = res.Header.Get("Retry-After") != ""
				break
			}
		}
		if !limited {
			t.Fatal("registrations from one address were never limited")
		}
		res, out = do(t, mustReq(t, "POST", srv.URL+"/oauth/token", strings.NewReader(url.Values{"grant_type": {"authorization_code"}, "code": {"nope"}}.Encode())))
		if res.StatusCode < 400 || out["error"] == nil {
			t.Fatalf("a token request with an unknown code: %d %v", res.StatusCode, out)
		}
		if res, out := do(t, mustReq(t, "POST", srv.URL+"/oauth/revoke", strings.NewReader(""))); res.StatusCode != 400 || out["error"] != "invalid_request" {
			t.Fatalf("a revocation without a token: %d %v", res.StatusCode, out)
		}
		res, _ = do(t, mustReq(t, "OPTIONS", srv.URL+"/oauth/token", nil))
		if res.StatusCode != 204 || !strings.Contains(res.Header.Get("Access-Control-Allow-Headers"), "Authorization") {
			t.Fatalf("a preflight: %d %v", res.StatusCode, res.Header)
		}
	})
}
