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

// Each 402 code says what to do for its own cause: PAYMENT_REQUIRED (a flat-fee intent, paid
// on chain) is not solved by adding credit, so its row sends the caller to x402 instead.
func TestErrorsSayWhatToDoPerPaymentCode(t *testing.T) {
	raw, err := os.ReadFile("errors.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{}
	for _, line := range strings.Split(string(raw), "\n") {
		for _, code := range []string{"PAYMENT_REQUIRED", "SPEND_LIMIT", "INSUFFICIENT_CREDITS"} {
			if strings.HasPrefix(line, "| `"+code+"`") {
				rows[code] = line
			}
		}
	}
	if len(rows) != 3 {
		t.Fatalf("each 402 code needs its own row in errors.md: %v", rows)
	}
	if pr := rows["PAYMENT_REQUIRED"]; !strings.Contains(pr, "x402") || strings.Contains(pr, "| add credit") {
		t.Errorf("PAYMENT_REQUIRED: %s", pr)
	}
	if !strings.Contains(rows["SPEND_LIMIT"], "spendLimitUsd") || !strings.Contains(rows["INSUFFICIENT_CREDITS"], "credit") {
		t.Errorf("SPEND_LIMIT / INSUFFICIENT_CREDITS: %v", rows)
	}
}
