package idempotency

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/storetest"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/service"
	"github.com/switchboard-hq/switchboard/tools/wallets"
)

type quoteOut struct {
	Request  string `json:"request"`
	Declined bool   `json:"declined"`
}

// quoteRig is a kernel with one keyed tool that asks first, as invoke does: without a
// decision it answers a quote (CONFIRMATION_REQUIRED with its continuation), with one it
// goes on with the quote named.
type quoteRig struct {
	kernel          *tools.Kernel
	quotes, decided atomic.Int64
}

func newQuoteRig(t *testing.T, st *store.Store) *quoteRig {
	t.Helper()
	r := &quoteRig{}
	c := &clock{now: time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)}
	sealer, err := wallets.NewSealer(masterA)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := NewService(Config{Sealer: sealer}, service.Deps{Store: st, Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	quote := tools.New(tools.Def{Name: "quoted_write", Title: "Quoted write", Description: "asks first", Access: tools.AnyKey,
		TakesIdempotencyKey: true, TakesDecision: true,
		Annotations: tools.Annotations{ReadOnly: tools.Bool(false), Destructive: tools.Bool(true), OpenWorld: tools.Bool(false)}},
		func(_ context.Context, caller *tools.Caller, in mintIn) (quoteOut, error) {
			if d := caller.Decision; d != nil {
				r.decided.Add(1)
				return quoteOut{Request: d.RequestID, Declined: d.Decline}, nil
			}
			n := r.quotes.Add(1)
			rid := caller.NewCallID()
			return quoteOut{}, tools.Errorf(tools.CodeConfirmationRequired, "confirm %s first", rid).WithDetails(map[string]any{"requestId": rid, "n": n}).
				WithContinue(&tools.Continuation{Kind: tools.ContinueConfirm, RequestID: rid, ExpiresAt: c.Now().Add(10 * time.Minute),
					Summary: []string{"@writer wants to write " + in.Name + ".", "", "At most 0.02 USD is charged."}})
		})
	wrapped, err := svc.Wrap([]*tools.Tool{quote})
	if err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	if r.kernel, err = tools.NewKernel(oneKey{}, tools.NewRateLimiter(c.Now), nil, quiet, c.Now, wrapped...); err != nil {
		t.Fatal(err)
	}
	return r
}

func (r *quoteRig) call(args string, d *tools.Decision) (quoteOut, *tools.Error) {
	out, e := r.kernel.Call(context.Background(), tools.Request{Tool: "quoted_write", Args: json.RawMessage(args), APIKey: "k", Decision: d})
	if e != nil {
		return quoteOut{}, e
	}
	return out.(quoteOut), nil
}

// TestAKeyedQuoteIsAskedAgainAndDecidedPastItsKey: a quote answered under an idempotency key
// is replayed with its continuation (sealed beside the error, whose wire shape leaves it out),
// so a door asks the same question again; the answer to it, sent with the same arguments and
// key, goes on with the quote (each time it is sent: the quote's record answers its outcome)
// instead of replaying the question, and the key still answers the question after it.
func TestAKeyedQuoteIsAskedAgainAndDecidedPastItsKey(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		r := newQuoteRig(t, st)
		const args = `{"name":"a","idempotencyKey":"quote-1"}`
		_, first := r.call(args, nil)
		if first == nil || first.Code != tools.CodeConfirmationRequired || first.Continue == nil {
			t.Fatalf("first call: %v; want CONFIRMATION_REQUIRED with its continuation", first)
		}
		_, again := r.call(args, nil)
		if again == nil || again.Message != first.Message || r.quotes.Load() != 1 {
			t.Fatalf("the same key again: %v, quoted %d times; want the first quote replayed", again, r.quotes.Load())
		}
		c, want := again.Continue, first.Continue
		if c == nil || c.Kind != want.Kind || c.RequestID != want.RequestID || !c.ExpiresAt.Equal(want.ExpiresAt) || !slices.Equal(c.Summary, want.Summary) {
			t.Fatalf("the replayed quote's continuation %+v, want %+v", c, want)
		}

		for i, d := range []tools.Decision{{RequestID: c.RequestID}, {RequestID: c.RequestID}, {RequestID: c.RequestID, Decline: true}} {
			out, e := r.call(args, &d)
			if e != nil || out.Request != c.RequestID || out.Declined != d.Decline || r.decided.Load() != int64(i+1) {
				t.Fatalf("decision %d %+v: %+v %v, decided %d times; want it to go on with the quote, not the key's replay", i, d, out, e, r.decided.Load())
			}
		}
		if _, e := r.call(args, nil); e == nil || e.Code != tools.CodeConfirmationRequired || e.Continue == nil || r.quotes.Load() != 1 {
			t.Fatalf("the key after the decisions: %v, quoted %d times; want the quote replayed, asked again", e, r.quotes.Load())
		}
	})
}
