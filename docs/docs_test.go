package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// Every relative link in docs/*.md and the README, as GitHub renders them, points at a file
// that exists, and a #section at a heading of that file (GitHub's heading anchors).
func TestRelativeLinksResolve(t *testing.T) {
	files, _ := filepath.Glob("*.md")
	files = append(files, "../README.md")
	link := regexp.MustCompile(`\]\(([^)\s{}:]+?)(?:#([^)\s]*))?\)`)
	for _, file := range files {
		raw, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		text := regexp.MustCompile("(?s)```.*?```").ReplaceAllString(string(raw), "")
		for _, m := range link.FindAllStringSubmatch(text, -1) {
			target := filepath.Join(filepath.Dir(file), m[1])
			if _, err := os.Stat(target); err != nil {
				t.Errorf("%s links %s: %v", file, m[1], err)
				continue
			}
			if m[2] == "" {
				continue
			}
			body, _ := os.ReadFile(target)
			if !hasAnchor(string(body), m[2]) {
				t.Errorf("%s links %s#%s: no such heading", file, m[1], m[2])
			}
		}
	}
}

// hasAnchor reports whether a heading of the Markdown document gets the anchor GitHub gives
// it: lower case, punctuation dropped, spaces as hyphens.
func hasAnchor(doc, anchor string) bool {
	for _, line := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(line, "#") {
			continue
		}
		var b strings.Builder
		for _, r := range strings.ToLower(strings.TrimSpace(strings.TrimLeft(line, "#"))) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		if b.String() == anchor {
			return true
		}
	}
	return false
}
