package commit_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/switchboard-hq/switchboard/store/commit"
)

// TestJournal: an entry is there whole after Put, replaced by a second Put, listed, and gone
// after Delete; bad ids are refused; nothing half-written is ever listed.
func TestJournal(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "journal")
	j, err := commit.OpenJournal(dir)
	if err != nil {
		t.Fatal(err)
	}
	type entry struct{ N int }
	if err := j.Put("b-2", entry{1}); err != nil {
		t.Fatal(err)
	}
	if err := j.Put("a-1", entry{2}); err != nil {
		t.Fatal(err)
	}
	if err := j.Put("b-2", entry{3}); err != nil {
		t.Fatal(err)
	}
	// A temporary file left by a crash in the middle of a Put is not an entry.
	if err := os.WriteFile(filepath.Join(dir, ".put-123"), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	ids, err := j.IDs()
	if err != nil || !slices.Equal(ids, []string{"a-1", "b-2"}) {
		t.Fatalf("ids %v %v", ids, err)
	}
	var got entry
	if err := j.Get("b-2", &got); err != nil || got.N != 3 || !j.Has("b-2") {
		t.Fatalf("b-2: %+v %v", got, err)
	}
	if err := j.Delete("b-2"); err != nil {
		t.Fatal(err)
	}
	if err := j.Delete("b-2"); err != nil {
		t.Fatalf("deleting twice: %v", err)
	}
	if err := j.Get("b-2", &got); !errors.Is(err, fs.ErrNotExist) || j.Has("b-2") {
		t.Fatalf("b-2 after delete: %v", err)
	}
	// An unreadable entry can be set aside: it is no longer listed.
	if err := os.WriteFile(filepath.Join(dir, "c-3.json"), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := j.Get("c-3", &got); err == nil {
		t.Fatal("a damaged entry decoded")
	}
	if err := j.SetAside("c-3"); err != nil {
		t.Fatal(err)
	}
	if ids, _ := j.IDs(); !slices.Equal(ids, []string{"a-1"}) {
		t.Fatalf("ids after setting c-3 aside: %v", ids)
	}
	for _, bad := range []string{"", "../x", "a/b", "a.json"} {
		if err := j.Put(bad, entry{}); err == nil {
			t.Fatalf("id %q accepted", bad)
		}
	}
}

// BenchmarkJournalPut is the durability cost a write pays before its commit: write, fsync,
// rename, fsync of the directory, and the removal after the commit.
func BenchmarkJournalPut(b *testing.B) {
	j, err := commit.OpenJournal(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	v := map[string]any{"requestId": "0192b3c4-aaaa-7bbb-8ccc-123456789abc", "answer": string(make([]byte, 1024))}
	for b.Loop() {
		if err := j.Put("entry", v); err != nil {
			b.Fatal(err)
		}
		if err := j.Delete("entry"); err != nil {
			b.Fatal(err)
		}
	}
}
