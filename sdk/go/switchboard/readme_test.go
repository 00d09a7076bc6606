package switchboard_test

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestReadmeQuickstartIsTheExample checks the README's quickstart is ExampleClient_Verify's
// body, so the code readers copy is the code `go test` runs.
func TestReadmeQuickstartIsTheExample(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)<!-- quickstart: go -->\\s*```go\\n(.*?)```").FindSubmatch(readme)
	if m == nil {
		t.Fatal("README has no go quickstart block")
	}
	src, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	body := regexp.MustCompile(`(?s)func ExampleClient_Verify\(\) \{\n(.*?)\t// Output:`).FindSubmatch(src)
	if body == nil {
		t.Fatal("no ExampleClient_Verify")
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimRight(string(body[1]), "\n"), "\n") {
		lines = append(lines, strings.TrimPrefix(l, "\t"))
	}
	if got, want := strings.TrimSpace(string(m[1])), strings.TrimSpace(strings.Join(lines, "\n")); got != want {
		t.Fatalf("README quickstart:\n%s\n\nExampleClient_Verify:\n%s", got, want)
	}
}
