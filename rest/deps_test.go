package rest_test

import (
	"os/exec"
	"strings"
	"testing"
)

// The doors translate: neither rest nor mcpserver reaches the store (not even through a tool
// package) nor imports x402, which cmd gives them as a wrap.
func TestDoorsImportNoStoreNorX402(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".", "../mcpserver").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if strings.Contains(pkg, "switchboard/store") || strings.HasSuffix(pkg, "/x402") {
			t.Errorf("a door depends on %s", pkg)
		}
	}
}
