package tools_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/switchboard-hq/switchboard/tools"
)

// Clip gives valid UTF-8 without NUL of at most n characters, cut between characters, never
// inside one.
func TestClip(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		more string
		want string
	}{
		{"short", 10, "…", "short"},
		{"exactly10!", 10, "…", "exactly10!"},
		{"eleven chars", 10, "…", "eleven ch…"},
		{"eleven chars", 10, "", "eleven cha"},
		{"héllo wörld", 5, "...", "hé..."},
		{"日本語のテキスト", 4, "", "日本語の"},
		{"599 \xff\xfe oops", 100, "…", "599 \uFFFD oops"},
		{"a\xffb", 2, "", "a\uFFFD"},
		{"500 \x00nul", 20, "…", "500 \uFFFDnul"},
		{"abc", 1, "…", "…"},
	} {
		got := tools.Clip(tc.in, tc.n, tc.more)
		if got != tc.want || !utf8.ValidString(got) || strings.ContainsRune(got, 0) || utf8.RuneCountInString(got) > tc.n {
			t.Errorf("Clip(%q, %d, %q) = %q, want %q", tc.in, tc.n, tc.more, got, tc.want)
		}
	}
}
