package tokens

import (
	"context"
	"sync"
	"time"

	"github.com/switchboard-hq/switchboard/store/learned"
)

// searchCache keeps learned-token searches for a short while: a ticker lookup is the hottest
// read there is, and the learned tokens change only when a list refresh or a lookup of an
// unknown address adds some (which clears this process's cache; another replica's sees them
// within searchFor).
type searchCache struct {
	mu      sync.Mutex
	entries map[string]searchEntry
}

type searchEntry struct {
	rows    []*learned.Token
	expires time.Time
}

const (
	searchFor = 30 * time.Second
	searchMax = 10_000
)

// searchTokens is store.SearchTokens through the cache.
func (s *Service) searchTokens(ctx context.Context, key, chain string, limit int) ([]*learned.Token, error) {
	id := chain + "\x00" + key
	now := s.now()
	s.searches.mu.Lock()
	e, ok := s.searches.entries[id]
	s.searches.mu.Unlock()
	if ok && now.Before(e.expires) {
		return e.rows, nil
	}
	rows, err := s.learned.SearchTokens(ctx, key, chain, limit)
	if err != nil {
		return nil, err
	}
	s.searches.mu.Lock()
	defer s.searches.mu.Unlock()
	if s.searches.entries == nil || len(s.searches.entries) >= searchMax {
		s.searches.entries = map[string]searchEntry{}
	}
	s.searches.entries[id] = searchEntry{rows: rows, expires: now.Add(searchFor)}
	return rows, nil
}

// forgetSearches drops cached searches after learned tokens changed.
func (s *Service) forgetSearches() {
	s.searches.mu.Lock()
	defer s.searches.mu.Unlock()
	s.searches.entries = nil
}
