package oauth

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/tools/partners/outbound"
)

// docServer serves client metadata documents over TLS: path -> (headers, body). It counts
// fetches.
type docServer struct {
	*httptest.Server
	hits atomic.Int32
}

func serveDocs(t *testing.T, h func(w http.ResponseWriter, r *http.Request, base string)) *docServer {
	d := &docServer{}
	d.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d.hits.Add(1)
		h(w, r, d.URL)
	}))
	t.Cleanup(d.Close)
	return d
}

func guardedClient(t *testing.T, srv *httptest.Server, allowLocal bool) *http.Client {
	t.Helper()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	c, err := outbound.New(outbound.Options{AllowLocal: allowLocal, ExtraCAPEM: ca})
	if err != nil {
		t.Fatal(err)
	}
	return c.HTTPClient()
}

func doc(id string, extra map[string]any) []byte {
	m := map[string]any{"client_id": id, "client_name": "Example Host", "redirect_uris": []string{"http://127.0.0.1:3000/callback"},
		"grant_types": []string{"authorization_code"}, "response_types": []string{"code"}, "token_endpoint_auth_method": "none"}
	for k, v := range extra {
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
	}
	b, _ := json.Marshal(m)
	return b
}

func TestMetadataDocumentChecks(t *testing.T) {
	srv := serveDocs(t, func(w http.ResponseWriter, r *http.Request, base string) {
		id := base + r.URL.Path
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/ok.json":
			w.Write(doc(id, nil))
		case "/other-id.json":
			w.Write(doc(base+"/ok.json", nil))
		case "/secret.json":
			w.Write(doc(id, map[string]any{"token_endpoint_auth_method": "client_secret_basic"}))
		case "/noname.json":
			w.Write(doc(id, map[string]any{"client_name": nil}))
		case "/badredirect.json":
			w.Write(doc(id, map[string]any{"redirect_uris": []string{"http://evil.example/cb"}}))
		case "/huge.json":
			w.Write(doc(id, map[string]any{"client_uri": "https://x.example/" + strings.Repeat("a", MaxMetadataBytes)}))
		case "/deep.json":
			w.Write([]byte(`{"client_id":"` + id + `","x":` + strings.Repeat("[", 5_000) + strings.Repeat("]", 5_000) + `}`))
		case "/html":
			w.Header().Set("Content-Type", "text/html")
			w.Write(doc(id, nil))
		case "/moved.json":
			http.Redirect(w, r, base+"/ok.json", http.StatusFound)
		case "/slow.json":
			select {
			case <-r.Context().Done():
			case <-time.After(10 * time.Second):
			}
		default:
			http.NotFound(w, r)
		}
	})
	m := newMetadataClients(guardedClient(t, srv.Server, true), time.Now)
	m.timeout = 300 * time.Millisecond
	c, oe := m.resolve(context.Background(), srv.URL+"/ok.json")
	if oe != nil || c.ID != srv.URL+"/ok.json" || c.Name != "Example Host" || len(c.RedirectURIs) != 1 {
		t.Fatalf("a good document: %+v %v", c, oe)
	}
	for path, want := range map[string]string{
		"/other-id.json":     "is not its URL",
		"/secret.json":       "shared secret",
		"/noname.json":       "client_name is required",
		"/badredirect.json":  "loopback",
		"/huge.json":         "larger than",
		"/deep.json":         "nested deeper than 64 levels",
		"/html":              "not application/json",
		"/moved.json":        "HTTP 302",
		"/missing.json":      "HTTP 404",
		"/slow.json":         "could not be fetched",
		"/":                  "no path",
		"/a/../ok.json":      "path segment",
		"/ok.json#fragment":  "fragment",
		"/ok.json?x=1#frag2": "fragment",
	} {
		if _, oe := m.resolve(context.Background(), srv.URL+path); oe == nil || oe.Code != "invalid_client" || !strings.Contains(oe.Description, want) {
			t.Errorf("%s: %v, want invalid_client saying %q", path, oe, want)
		}
	}
	if _, oe := m.resolve(context.Background(), "http://app.example/client.json"); oe == nil || !strings.Contains(oe.Description, "https") {
		t.Errorf("an http client_id: %v", oe)
	}

	// Through the guard as production runs it: a document on a loopback address is never
	// fetched.
	hits := srv.hits.Load()
	guarded := newMetadataClients(guardedClient(t, srv.Server, false), time.Now)
	if _, oe := guarded.resolve(context.Background(), srv.URL+"/ok.json"); oe == nil || !strings.Contains(oe.Description, "loopback") || srv.hits.Load() != hits {
		t.Fatalf("a loopback document through the SSRF guard: %v (hits %d -> %d)", oe, hits, srv.hits.Load())
	}
}

func TestMetadataDocumentsAreCachedPerHTTPHeaders(t *testing.T) {
	srv := serveDocs(t, func(w http.ResponseWriter, r *http.Request, base string) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/maxage.json":
			w.Header().Set("Cache-Control", "public, max-age=60")
		case "/nostore.json":
			w.Header().Set("Cache-Control", "no-store")
		case "/expires.json":
			w.Header().Set("Date", "Tue, 24 Nov 2026 10:00:00 GMT")
			w.Header().Set("Expires", "Tue, 24 Nov 2026 10:02:00 GMT")
		}
		w.Write(doc(base+r.URL.Path, nil))
	})
	now := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	m := newMetadataClients(guardedClient(t, srv.Server, true), func() time.Time { return now })
	fetches := func(path string, resolves int) int32 {
		before := srv.hits.Load()
		for range resolves {
			if _, oe := m.resolve(context.Background(), srv.URL+path); oe != nil {
				t.Fatalf("%s: %v", path, oe)
			}
		}
		return srv.hits.Load() - before
	}
	for _, c := range []struct {
		path  string
		fresh time.Duration
	}{{"/maxage.json", 60 * time.Second}, {"/expires.json", 2 * time.Minute}} {
		if n := fetches(c.path, 3); n != 1 {
			t.Errorf("%s: %d fetches for 3 resolves while fresh, want 1", c.path, n)
		}
		now = now.Add(c.fresh + time.Second)
		if n := fetches(c.path, 1); n != 1 {
			t.Errorf("%s: %d fetches once stale, want 1", c.path, n)
		}
	}
	for _, path := range []string{"/nostore.json", "/none.json"} {
		if n := fetches(path, 3); n != 3 {
			t.Errorf("%s: %d fetches for 3 resolves, want 3 (nothing may be kept)", path, n)
		}
	}
	if got := freshness(http.Header{"Cache-Control": {"max-age=9999999"}}, now); got != maxMetadataCacheTT {
		t.Errorf("a long max-age is kept %v, want the %v cap", got, maxMetadataCacheTT)
	}
}
