package partners_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/signing"
	"github.com/switchboard-hq/switchboard/signing/partnerexample"
	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/storetest"
	"github.com/switchboard-hq/switchboard/tools/partners/partnertest"
	"github.com/switchboard-hq/switchboard/tools/webhooks"
)

// A partner that can change after activation: lax (serves unsigned and forged calls) or down
// (503 to everything).
type changing struct {
	lax, down atomic.Bool
	url       string
}

func changingPartner(t *testing.T, e *env) *changing {
	c := &changing{}
	verified := signing.Middleware(signing.NewVerifierFromKey(e.pub), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"success":true,"result":{"ok":true}}`))
	}))
	c.url = partnertest.Start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case c.down.Load():
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte(`{"success":false,"error":{"code":"UPSTREAM","message":"down"}}`))
		case c.lax.Load():
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"success":true,"result":{"ok":true}}`))
		default:
			verified.ServeHTTP(w, r)
		}
	})).URL
	return c
}

// The continuous re-probe, against real partner servers: one that turns lax after activation
// is deactivated at once with the reason on the intent and its publisher told; one that
// degrades loses health and is deactivated after 3 failures in a row; a healthy one stays.
// Probes are claimed, so two rounds at the same moment probe each intent once.
func TestReprobe(t *testing.T) {
	var mu sync.Mutex
	var told []string
	e := newEnv(t, envOptions{probe: 400 * time.Millisecond, notify: func(ctx context.Context, accountID, subject, text string) error {
		mu.Lock()
		defer mu.Unlock()
		told = append(told, subject+"\n"+text)
		return nil
	}})
	_, key := e.account(t)
	ctx := context.Background()
	lax, degrading, healthy := changingPartner(t, e), changingPartner(t, e), changingPartner(t, e)
	ids := map[string]string{}
	for handle, p := range map[string]*changing{"@turns-lax": lax, "@degrades": degrading, "@stays-healthy": healthy} {
		ids[handle] = e.publish(t, key, handle, p.url, "REST")
		e.ok(t, viaREST, key, "partner_set_active", map[string]any{"intentId": ids[handle], "active": true})
	}
	round := func() int {
		t.Helper()
		n, err := e.svc.Reprobe(ctx, time.Hour, 4)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := round(); n != 3 {
		t.Fatalf("first round probed %d, want all 3", n)
	}
	if n := round(); n != 0 {
		t.Fatalf("a second round at the same moment probed %d: claims must stop it", n)
	}
	intent := func(h string) map[string]any {
		t.Helper()
		out := e.ok(t, viaREST, key, "partner_list_intents", map[string]any{})
		for _, in := range out["intents"].([]any) {
			if m := in.(map[string]any); m["publicIdentifier"] == h {
				return m
			}
		}
		t.Fatalf("no %s", h)
		return nil
	}
	if h := intent("@stays-healthy")["health"].(map[string]any); h["lastProbeResult"] != "probe PASS, health OK" || h["probeFailures"] != 0.0 {
		t.Fatalf("healthy after a round: %v", h)
	}

	lax.lax.Store(true)
	degrading.down.Store(true)
	for i := 0; i < 3; i++ {
		e.clock.Advance(2 * time.Hour)
		round()
		if i == 0 {
			in := intent("@turns-lax")
			if in["isActive"] != false || !strings.Contains(in["health"].(map[string]any)["deactivatedReason"].(string), "served a call it must refuse") {
				t.Fatalf("a lax endpoint after one re-probe: %v", in)
			}
			if in := intent("@degrades"); in["isActive"] != true || in["health"].(map[string]any)["probeFailures"] != 1.0 {
				t.Fatalf("one failure only lowers health: %v", in)
			}
		}
	}
	if in := intent("@degrades"); in["isActive"] != false || !strings.Contains(in["health"].(map[string]any)["deactivatedReason"].(string), "3 re-probes in a row failed") {
		t.Fatalf("a degraded endpoint after 3 failures: %v", in)
	}
	if in := intent("@stays-healthy"); in["isActive"] != true {
		t.Fatalf("the healthy endpoint: %v", in)
	}
	mu.Lock()
	if len(told) != 2 || !strings.Contains(strings.Join(told, "\n"), "@turns-lax") || !strings.Contains(strings.Join(told, "\n"), "partner_set_active") {
		t.Fatalf("publishers told: %q", told)
	}
	mu.Unlock()

	// Reactivation goes through the probe-gated path and clears the record.
	degrading.down.Store(false)
	out := e.ok(t, viaREST, key, "partner_set_active", map[string]any{"intentId": ids["@degrades"], "active": true})
	if h := out["intent"].(map[string]any)["health"].(map[string]any); h["deactivatedReason"] != nil || h["probeFailures"] != 0.0 {
		t.Fatalf("reactivated: %v", h)
	}
	if _, err := e.call(t, viaREST, key, "partner_set_active", map[string]any{"intentId": ids["@turns-lax"], "active": true}); err == nil {
		t.Fatal("the lax endpoint was reactivated")
	}

	// Every change of activity is an event for the publisher's endpoints, written with it:
	// three activations by the owner, two deactivations by the re-probe (with their reasons),
	// one reactivation.
	var evs []*store.WebhookEvent
	if err := e.st.DB().NewSelect().Model(&evs).Where("type LIKE 'intent.%'").OrderExpr("created_at, id").Scan(ctx); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ev := range evs {
		var b struct {
			Data webhooks.IntentData `json:"data"`
		}
		if err := json.Unmarshal([]byte(ev.Body), &b); err != nil {
			t.Fatal(err)
		}
		got = append(got, ev.Type+" "+b.Data.Handle+" by "+b.Data.By)
		if ev.Type == webhooks.IntentDeactivated && !strings.HasPrefix(b.Data.Reason, "re-probe at ") {
			t.Errorf("deactivated without its reason: %s", ev.Body)
		}
	}
	slices.Sort(got[:3])
	want := []string{"intent.activated @degrades by owner", "intent.activated @stays-healthy by owner", "intent.activated @turns-lax by owner",
		"intent.deactivated @turns-lax by reprobe", "intent.deactivated @degrades by reprobe", "intent.activated @degrades by owner"}
	if !slices.Equal(got, want) {
		t.Fatalf("intent events:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// Moving an active intent to an endpoint that fails the negative-auth probe deactivates it
// and tells its publisher in the same write: intent.deactivated, by "update", with the
// reason. A move to a good endpoint keeps it active and tells nothing.
func TestAnUpdateFailingTheProbeTellsThePublisher(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			e := newEnv(t, envOptions{dialect: dialect})
			acct, key := e.account(t)
			good := partnertest.Example(t, e.pub, partnerexample.DefaultHandle)
			bad := partnertest.AcceptsUnsigned(t, e.pub)
			id := e.ok(t, viaREST, key, "partner_publish_intent", intent("@moves", good.URL+partnerexample.RESTPath))["id"].(string)
			e.ok(t, viaREST, key, "partner_set_active", map[string]any{"intentId": id, "active": true})
			e.ok(t, viaREST, key, "partner_update_intent", map[string]any{"intentId": id, "toolEndpoint": good.URL + partnerexample.RESTPath + "?v=2"})
			if out := e.ok(t, viaREST, key, "partner_update_intent", map[string]any{"intentId": id, "toolEndpoint": bad.URL}); out["deactivated"] != true {
				t.Fatalf("a move to a bad endpoint: %v", out)
			}
			var evs []*store.WebhookEvent
			if err := e.st.DB().NewSelect().Model(&evs).Where("type LIKE 'intent.%'").OrderExpr("created_at, id").Scan(context.Background()); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, ev := range evs {
				var b struct{ Data webhooks.IntentData }
				if err := json.Unmarshal([]byte(ev.Body), &b); err != nil {
					t.Fatal(err)
				}
				if ev.AccountID != acct || b.Data.IntentID != id || b.Data.Handle != "@moves" {
					t.Fatalf("an event for someone else: %+v", ev)
				}
				got = append(got, ev.Type+" by "+b.Data.By+": "+b.Data.Reason)
			}
			want := []string{"intent.activated by owner: ", "intent.deactivated by update: the new endpoint did not pass the negative-auth probe"}
			if !slices.Equal(got, want) {
				t.Fatalf("intent events:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}
