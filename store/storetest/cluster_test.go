package storetest_test

import (
	"context"
	"testing"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/storetest"
)

// The private cluster starts, serves a migrated store, refuses while stopped and serves
// again after a restart, with the same store (no reconnect by hand).
func TestCluster(t *testing.T) {
	c := storetest.StartCluster(t)
	ctx := context.Background()
	s, err := store.Open(ctx, c.DSN(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	c.Stop()
	if err := s.Ping(ctx); err == nil {
		t.Fatal("ping succeeded with the cluster stopped")
	}
	c.Start()
	if err := s.Ping(ctx); err != nil {
		t.Fatalf("after restart: %v", err)
	}
}
