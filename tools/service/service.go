// Package service holds what every service of tools/<domain> shares (Deps), apart from the
// kernel, so that the kernel needs no store.
package service

import (
	"io"
	"log/slog"
	"time"

	"github.com/switchboard-hq/switchboard/store"
)

// Deps are what every service shares: the store, the clock and the logger. Every service's
// constructor takes its own Config (when it has settings), then Deps, then the other
// services it calls, by name:
//
//	func NewService(cfg Config, d service.Deps, bill *billing.Service) *Service
//
// A zero Now is time.Now and a nil Log discards; Store is required where the service keeps
// state.
type Deps struct {
	Store *store.Store
	Now   func() time.Time
	Log   *slog.Logger
}

// WithDefaults fills a zero clock and logger.
func (d Deps) WithDefaults() Deps {
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.Log == nil {
		d.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return d
}
