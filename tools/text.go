package tools

import (
	"strings"
	"unicode/utf8"
)

// Clip makes text from outside (a receiver's status line, a document's field) fit to be
// stored and shown: valid UTF-8 without NUL, each invalid byte sequence and each NUL replaced
// by U+FFFD (PostgreSQL takes neither in text, and the store's query builder refuses a NUL),
// and at most n characters, cut between characters, the last of them more when it was cut
// ("…", or "" to cut silently).
func Clip(s string, n int, more string) string {
	s = strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	keep := max(n-utf8.RuneCountInString(more), 0)
	return string([]rune(s)[:keep]) + more
}
