package app_test

import (
	"os"
	"strings"
	"testing"

	"github.com/switchboard-hq/switchboard/cmd/switchboard/app"
)

const (
	configDoc      = "../../../docs/configuration.md"
	configDocBegin = "<!-- settings: generated from cmd/switchboard/app/config.go by TestConfigReference -update; do not edit -->\n"
	configDocEnd   = "<!-- end of settings -->\n"
)

// TestConfigReference keeps docs/configuration.md's table equal to what the settings generate:
// a setting added, removed or reworded in config.go fails it until
// `go test ./cmd/switchboard/app -run TestConfigReference -update` rewrites the table.
func TestConfigReference(t *testing.T) {
	raw, err := os.ReadFile(configDoc)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	i, j := strings.Index(doc, configDocBegin), strings.Index(doc, configDocEnd)
	if i < 0 || j < i {
		t.Fatalf("%s has no generated table between %q and %q", configDoc, configDocBegin, configDocEnd)
	}
	want := doc[:i+len(configDocBegin)] + "\n" + app.ConfigReference() + "\n" + doc[j:]
	if *update {
		if err := os.WriteFile(configDoc, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		doc = want
	} else if doc != want {
		t.Errorf("%s differs from the settings in config.go; run go test ./cmd/switchboard/app -run TestConfigReference -update and review the diff", configDoc)
	}
	// Every setting is in the operator's reference, by name.
	for _, env := range app.SettingNames() {
		if !strings.Contains(doc, "| `"+env+"` |") {
			t.Errorf("%s does not document %s", configDoc, env)
		}
	}
}
