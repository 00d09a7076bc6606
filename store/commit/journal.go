package commit

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
)

// Journal is a durable local record of outcomes on their way to the database: one file per
// entry, fsynced (file and directory) before Put returns, removed once the database has it.
// It keeps an answer the partner gave from being lost when the database is away or the
// process dies before the commit; whoever starts next on the same data directory replays it.
type Journal struct {
	dir string
}

// OpenJournal opens (creating) the journal directory dir.
func OpenJournal(dir string) (*Journal, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	return &Journal{dir: dir}, nil
}

var journalID = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)

// Put writes v as entry id durably, replacing an entry of the same id.
func (j *Journal) Put(id string, v any) error {
	if !journalID.MatchString(id) {
		return fmt.Errorf("journal: bad entry id %q", id)
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	tmp, err := os.CreateTemp(j.dir, ".put-*")
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	defer os.Remove(tmp.Name()) // gone after the rename; left only by a failure
	if _, err := tmp.Write(raw); err != nil {
		tmp.Close()
		return fmt.Errorf("journal: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("journal: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	// The rename makes the entry appear whole or not at all; the directory's sync makes the
	// rename itself survive a crash.
	if err := os.Rename(tmp.Name(), filepath.Join(j.dir, id+".json")); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	return j.syncDir()
}

// Delete removes entry id (none is fine).
func (j *Journal) Delete(id string) error {
	if err := os.Remove(filepath.Join(j.dir, id+".json")); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("journal: %w", err)
	}
	return nil
}

// SetAside renames entry id out of the journal (to id.json.unreadable), for the operator.
func (j *Journal) SetAside(id string) error {
	path := filepath.Join(j.dir, id+".json")
	if err := os.Rename(path, path+".unreadable"); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("journal: %w", err)
	}
	return nil
}

// Has reports whether entry id is in the journal.
func (j *Journal) Has(id string) bool {
	_, err := os.Stat(filepath.Join(j.dir, id+".json"))
	return err == nil
}

// Get decodes entry id into v; fs.ErrNotExist when there is none.
func (j *Journal) Get(id string, v any) error {
	raw, err := os.ReadFile(filepath.Join(j.dir, id+".json"))
	if err != nil {
		return err
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("journal entry %s: %w", id, err)
	}
	return nil
}

// IDs lists the entries, oldest name first.
func (j *Journal) IDs() ([]string, error) {
	names, err := filepath.Glob(filepath.Join(j.dir, "*.json"))
	if err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(names))
	for _, n := range names {
		ids = append(ids, filepath.Base(n[:len(n)-len(".json")]))
	}
	sort.Strings(ids)
	return ids, nil
}

func (j *Journal) syncDir() error {
	d, err := os.Open(j.dir)
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	return nil
}
