package app

import (
	"errors"
	"os"
	"path/filepath"
)

// DefaultDataDir is the data directory when SWITCHBOARD_DATA_DIR is empty: one per user, not
// per working directory, so that `switchboard stdio` started by a desktop host (from its own
// folder) finds the database `switchboard serve` made. $XDG_DATA_HOME/switchboard when that
// is an absolute path (the XDG Base Directory rule), else ~/.local/share/switchboard.
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
