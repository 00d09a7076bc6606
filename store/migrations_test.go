package store_test

import (
	"os"
	"strings"
	"testing"
)

// TestMigrationVersionsAreUnique: bun names a migration by its file's version prefix, so two
// files of one version (made on two branches at once) become one migration and one of them
// never runs.
func TestMigrationVersionsAreUnique(t *testing.T) {
	entries, err := os.ReadDir("migrations")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]string{}
	for _, e := range entries {
		version, _, ok := strings.Cut(e.Name(), "_")
		if !ok {
			t.Errorf("%s: no version prefix", e.Name())
			continue
		}
		if other, dup := seen[version]; dup {
			t.Errorf("%s and %s share version %s: give the later one the next version", other, e.Name(), version)
		}
		seen[version] = e.Name()
	}
	if len(seen) < 2 {
		t.Fatalf("read %d migrations", len(seen))
	}
}
