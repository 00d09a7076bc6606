package app

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// DefaultDataDir is the root the default data directories live under when SWITCHBOARD_DATA_DIR
// is empty: one per user, not per working directory, so that `switchboard stdio` started by a
// desktop host (from its own folder) finds the database `switchboard serve` made.
// $XDG_DATA_HOME/switchboard when that is an absolute path (the XDG Base Directory rule), else
// ~/.local/share/switchboard. Each environment has a folder of its own under it
// (environmentDataDir).
func DefaultDataDir(getenv func(string) string) (string, error) {
	if x := getenv("XDG_DATA_HOME"); filepath.IsAbs(x) {
		return filepath.Join(x, "switchboard"), nil
	}
	home := getenv("HOME")
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	if home == "" {
		return "", errors.New("SWITCHBOARD_DATA_DIR is empty and there is no home directory to keep the data in ($HOME is unset): set SWITCHBOARD_DATA_DIR to a directory of yours")
	}
	return filepath.Join(home, ".local", "share", "switchboard"), nil
}

// legacyData are the names a data directory held at the root itself, before each environment
// had its own folder: the SQLite database, the generated secrets and the journal.
var legacyData = []string{"switchboard.db", "signing-key.pem", "master.key", "server-secret.key", "journal"}

// environmentDataDir is the default data directory of env under root: root/test or
// root/production, so that a production process on a machine where the test environment ran
// never opens the test environment's database, journal or generated secrets.
//
// Data written at the root itself by an earlier release stays where it is (a running process
// of that release may hold it open): while root/test does not exist the test environment keeps
// using the root, and says so (note); production refuses to start until the operator says whose
// it is, since it may be a production database the new folder would silently replace by an
// empty one (docs/decisions.md, "Production supplies its secrets; each environment has its data
// directory").
func environmentDataDir(root, env string) (dir, note string, err error) {
	dir = filepath.Join(root, env)
	if _, err := os.Stat(dir); err == nil {
		return dir, "", nil
	}
	held := legacyHeld(root)
	if len(held) == 0 {
		return dir, "", nil
	}
	move := fmt.Sprintf("mkdir %s && mv %s %s/", filepath.Join(root, "test"), strings.Join(globs(root, held), " "), filepath.Join(root, "test"))
	if env == "test" {
		return root, fmt.Sprintf("the test environment keeps using %s, which holds its data from before each environment had a folder of its own; "+
			"production never reads it. To move it where this release keeps it, stop serve and stdio and run: %s", root, move), nil
	}
	return "", "", fmt.Errorf("SWITCHBOARD_DATA_DIR is empty, so production would use %s, but %s holds data written before each environment had a folder of its own (%s): "+
		"a test environment's, or an earlier production's. Production neither reuses it nor starts beside it unasked. If it is the test environment's, "+
		"move it with `%s` (the test environment then finds it there) or start production with SWITCHBOARD_DATA_DIR=%s; "+
		"if it is this production's, start with SWITCHBOARD_DATA_DIR=%s and supply the secrets it generated there "+
		"(SWITCHBOARD_SIGNING_KEY_FILE=%s, SWITCHBOARD_MASTER_KEY and SWITCHBOARD_SERVER_SECRET set to the contents of %s and %s)",
		dir, root, strings.Join(held, ", "), move, dir, root,
		filepath.Join(root, "signing-key.pem"), filepath.Join(root, "master.key"), filepath.Join(root, "server-secret.key"))
}

// legacyHeld are the legacy names present at root.
func legacyHeld(root string) []string {
	var held []string
	for _, name := range legacyData {
		if _, err := os.Stat(filepath.Join(root, name)); err == nil {
			held = append(held, name)
		}
	}
	return held
}

// globs are the paths to move for the names held: the database with its -wal and -shm files.
func globs(root string, held []string) []string {
	var out []string
	for _, name := range held {
		p := filepath.Join(root, name)
		if name == "switchboard.db" {
			p += "*"
		}
		out = append(out, p)
	}
	return out
}
