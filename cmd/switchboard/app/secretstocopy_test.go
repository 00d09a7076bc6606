package app_test

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchboard-hq/switchboard/cmd/switchboard/app"
	"github.com/switchboard-hq/switchboard/cmd/switchboard/app/apptest"
	"github.com/switchboard-hq/switchboard/store/storetest"
)

// A second replica started on the first one's database without its secrets says what to copy
// (which settings, or which files of which data directory), not only that a master key id is
// missing; with the first one's master key it starts.
func TestSecondReplicaWithoutTheFirstOnesKeysSaysWhatToCopy(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			dsn := storetest.DSN(t, dialect)
			apptest.Start(t, apptest.Options{Store: storetest.OpenURL(t, dsn), Config: func(c *app.Config) {
				c.MasterKey, c.ServerSecret = sharedSecret, sharedSecret
			}})
			cfg := app.Defaults()
			cfg.DataDir, cfg.DatabaseURL = t.TempDir(), dsn
			build := func(cfg app.Config) error {
				a, err := app.Build(context.Background(), cfg, app.Deps{Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
				if err == nil {
					a.Close()
				}
				return err
			}
			err := build(cfg)
			if err == nil {
				t.Fatal("a replica with a master key of its own opened the first one's service key")
			}
			for _, want := range []string{"is not configured", "SWITCHBOARD_MASTER_KEY", "SWITCHBOARD_SERVER_SECRET", "master.key",
				filepath.Join(cfg.DataDir, "master.key"), "first replica"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("the error should name %q:\n%v", want, err)
				}
			}
			cfg.MasterKey, cfg.ServerSecret = sharedSecret, sharedSecret
			if err := build(cfg); err != nil {
				t.Fatalf("with the first replica's secrets: %v", err)
			}
		})
	}
}
