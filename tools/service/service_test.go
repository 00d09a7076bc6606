package service_test

import (
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/tools/service"
)

// A zero clock becomes the real one and a nil logger one that discards; what is given stays.
func TestWithDefaults(t *testing.T) {
	d := service.Deps{}.WithDefaults()
	if d.Now == nil || d.Log == nil || time.Since(d.Now()) > time.Minute {
		t.Fatalf("defaults: %+v", d)
	}
	d.Log.Info("discarded") // must not panic
	fixed := time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)
	if got := (service.Deps{Now: func() time.Time { return fixed }}).WithDefaults().Now(); !got.Equal(fixed) {
		t.Fatalf("a given clock was replaced: %v", got)
	}
}
