package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/switchboard-hq/switchboard/signing"
	"github.com/switchboard-hq/switchboard/signing/partnerexample"
)

// `switchboard partner check` against real endpoints: the example partner (signing.Middleware,
// fetching the key from the address the check serves) passes every line; one that serves
// unsigned calls, and one that checks only a signature's length, fail with what to fix and
// a non-zero exit.
func TestPartnerCheck(t *testing.T) {
	keyAddr := freeAddr(t)
	good := httptest.NewServer(partnerexample.NewRESTHandler(signing.NewVerifierFromURL("http://" + keyAddr)))
	defer good.Close()
	lax := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"success": true, "result": map[string]any{"ok": true}})
	}))
	defer lax.Close()
	check := func(url string) (string, error) {
		var out, errOut bytes.Buffer
		err := runPartner(context.Background(), []string{"check", "-key-addr", keyAddr, url}, &out, &errOut)
		return out.String(), err
	}
	out, err := check(good.URL)
	if err != nil || !strings.Contains(out, "9 of 9 checks passed") {
		t.Fatalf("the example partner: %v\n%s", err, out)
	}
	out, err = check(lax.URL)
	if err == nil || !strings.Contains(out, "FAIL  unsigned request") || !strings.Contains(out, "fix: refuse a request without X-Service-Signature") ||
		!strings.Contains(out, "FAIL  timestamp 6 minutes old") {
		t.Fatalf("a lax partner: %v\n%s", err, out)
	}
}
