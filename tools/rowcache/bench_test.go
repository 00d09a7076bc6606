package rowcache_test

import (
	"context"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/store/accounts"
	"github.com/switchboard-hq/switchboard/store/partners"
	"github.com/switchboard-hq/switchboard/store/storetest"
	"github.com/switchboard-hq/switchboard/tools/rowcache"
	"github.com/switchboard-hq/switchboard/tools/service"
)

// BenchmarkLookups: the two reads every invocation makes before anything else (the intent by
// handle, the caller's account for its tier), as dispatch and billing made them before this
// cache (store) and from the cache a live watch keeps.
func BenchmarkLookups(b *testing.B) {
	for _, d := range storetest.Dialects() {
		b.Run(d, func(b *testing.B) {
			st := storetest.Open(b, d)
			ctx := context.Background()
			acct, handle := account(b, st), unique("@bench")
			publish(b, st, acct, handle)
			b.Run("store", func(b *testing.B) {
				for b.Loop() {
					if _, err := partners.New(st).IntentByHandle(ctx, handle); err != nil {
						b.Fatal(err)
					}
					if _, err := accounts.New(st).ByID(ctx, acct); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("cache", func(b *testing.B) {
				cache := rowcache.New(service.Deps{Store: st, Now: time.Now})
				wctx, cancel := context.WithCancel(ctx)
				done := make(chan struct{})
				go func() { defer close(done); cache.Watch(wctx) }()
				defer func() { cancel(); <-done }()
				for !cache.Live() {
					time.Sleep(time.Millisecond)
				}
				for b.Loop() {
					if _, err := cache.Intent(ctx, handle); err != nil {
						b.Fatal(err)
					}
					if _, err := cache.Tier(ctx, acct); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}
