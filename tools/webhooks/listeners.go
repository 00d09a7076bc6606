package webhooks

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/outbox"
)

// Listeners knows, for a moment, which accounts have an endpoint that receives events: an
// event is fanned out only to the endpoints of its account that exist when it happens, so the
// event of an account with none would never reach anyone, and the hot paths (every call's
// call.* events) skip writing it. An endpoint created, enabled again or deleted on this
// replica counts at once (Forget); on another, within ListenersTTL.
type Listeners struct {
	outbox outbox.Outbox
	now    func() time.Time

	mu   sync.Mutex
	seen map[string]listening
}

type listening struct {
	at  time.Time
	any bool
}

// ListenersTTL is how long an account's answer is kept.
const ListenersTTL = 2 * time.Second

// NewListeners reads st's endpoints; now is the clock (nil: time.Now).
func NewListeners(st *store.Store, now func() time.Time) *Listeners {
	if now == nil {
		now = time.Now
	}
	return &Listeners{outbox: outbox.New(st), now: now, seen: map[string]listening{}}
}

// Any reports whether accountID has an endpoint that is not disabled. When its endpoints
// cannot be read, it says yes: an event written for nobody costs a row, a lost one a delivery.
func (l *Listeners) Any(ctx context.Context, accountID string) bool {
	if l == nil {
		return true
	}
	now := l.now()
	l.mu.Lock()
	s, ok := l.seen[accountID]
	l.mu.Unlock()
	if ok && now.Sub(s.at) < ListenersTTL && !now.Before(s.at) {
		return s.any
	}
	eps, err := l.outbox.WebhookEndpoints(ctx, accountID)
	if err != nil {
		return true
	}
	s = listening{at: now, any: slices.ContainsFunc(eps, func(ep *outbox.Endpoint) bool { return ep.DisabledAt == nil })}
	l.mu.Lock()
	if len(l.seen) > 100_000 {
		clear(l.seen)
	}
	l.seen[accountID] = s
	l.mu.Unlock()
	return s.any
}

// Forget drops what is known of accountID (its endpoints changed on this replica).
func (l *Listeners) Forget(accountID string) {
	if l == nil {
		return
	}
	l.mu.Lock()
	delete(l.seen, accountID)
	l.mu.Unlock()
}
