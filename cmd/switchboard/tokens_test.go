package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchboard-hq/switchboard/tools/tokens/tokenstest"
)

// `switchboard tokens refresh` against the local fakes: the lists land in the database and
// each source's outcome is printed.
func TestTokensRefreshCommand(t *testing.T) {
	up := tokenstest.Start(t, map[string]int64{})
	t.Setenv("SWITCHBOARD_DATA_DIR", t.TempDir())
	t.Setenv("SWITCHBOARD_DATABASE_URL", filepath.Join(t.TempDir(), "refresh.db"))
	t.Setenv("SWITCHBOARD_COINGECKO_URL", up.CoinGecko.URL+"/api/v3")
	t.Setenv("SWITCHBOARD_JUPITER_URL", up.Jupiter.URL)
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), []string{"tokens", "refresh"}, &stdout, &stderr); err != nil {
		t.Fatalf("refresh: %v\n%s", err, stderr.String())
	}
	out := stdout.String()
	for _, want := range []string{"coingecko token list base", "2 tokens", "coingecko token list ethereum", "failed: HTTP 404",
		"jupiter verified", "database now holds 4 learned tokens, 4 of them listed"} {
		if !strings.Contains(out, want) {
			t.Fatalf("output lacks %q:\n%s", want, out)
		}
	}
	if err := run(context.Background(), []string{"tokens", "frobnicate"}, &stdout, &stderr); err == nil {
		t.Fatal("an unknown tokens command succeeded")
	}
}
