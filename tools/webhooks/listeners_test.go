package webhooks_test

import (
	"context"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/outbox"
	"github.com/switchboard-hq/switchboard/store/storetest"
	"github.com/switchboard-hq/switchboard/tools/webhooks"
)

// An account with no endpoint (or only disabled ones) is known not to listen for a moment;
// an endpoint created here counts at once (Forget), one created elsewhere after ListenersTTL.
func TestListeners(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		storetest.Account(t, st, "a")
		now := time.Now().UTC()
		clock := func() time.Time { return now }
		l := webhooks.NewListeners(st, clock)
		if l.Any(ctx, "a") {
			t.Fatal("an account with no endpoint listens")
		}
		ep := &outbox.Endpoint{ID: "e1", AccountID: "a", URL: "https://a.example/hooks", SecretSalt: []byte("salt"), CreatedAt: now}
		if err := outbox.New(st).CreateWebhookEndpoint(ctx, ep, 10); err != nil {
			t.Fatal(err)
		}
		if l.Any(ctx, "a") {
			t.Fatal("the cached answer was not kept")
		}
		now = now.Add(webhooks.ListenersTTL)
		if !l.Any(ctx, "a") {
			t.Fatal("an endpoint created elsewhere did not count after ListenersTTL")
		}
		if _, err := st.DB().NewUpdate().Model((*outbox.Endpoint)(nil)).Set("disabled_at = ?", now).Where("id = ?", "e1").Exec(ctx); err != nil {
			t.Fatal(err)
		}
		l.Forget("a")
		if l.Any(ctx, "a") {
			t.Fatal("a disabled endpoint listens")
		}
		var none *webhooks.Listeners
		if !none.Any(ctx, "a") {
			t.Fatal("no Listeners must mean every event is written")
		}
	})
}
