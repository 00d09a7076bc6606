package dispatch

import (
	"reflect"
	"testing"
	"time"

	partnerstore "github.com/switchboard-hq/switchboard/store/partners"
	"github.com/switchboard-hq/switchboard/store/storetest"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/service"
)

// A call's way is chosen once from what the caller sent and the plan: an answer to an earlier
// quote continues it whatever the intent, a write or a flat fee is quoted first, a long intent's
// call for a caller that takes a task runs as one, and any other call is answered in its request.
func TestWayOfChoosesOnce(t *testing.T) {
	s := NewService(Config{TaskAfter: 5 * time.Second, UserID: func(a, p string) string { return a + p }},
		service.Deps{Store: storetest.Open(t, "sqlite")}, nil, nil, nil)
	intent := func(category, unit string, timeoutMs int) *partnerstore.Intent {
		return &partnerstore.Intent{ID: "i-" + category + unit, PartnerID: "p", PublicIdentifier: "@a", Category: category, TimeoutMs: timeoutMs,
			BindingType: "REST", ToolEndpoint: "https://partner.example/a", FeeRate: "0.01", FeeRateUnit: unit,
			ParametersSchema: `{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}`}
	}
	read, long := intent("QUERY", "usd_per_call", 2000), intent("QUERY", "usd_per_call", 20_000)
	swap, flat := intent("SWAP", "bps", 2000), intent("QUERY", "flat_usdc", 2000)
	plain, taking := &tools.Caller{}, &tools.Caller{AcceptsTask: true}
	for _, c := range []struct {
		name   string
		caller *tools.Caller
		intent *partnerstore.Intent
		in     InvokeInput
		want   way
	}{
		{"a read", plain, read, InvokeInput{}, answered{s}},
		{"a read for a caller that takes a task, short", taking, read, InvokeInput{}, answered{s}},
		{"a long read for a caller that takes none", plain, long, InvokeInput{}, answered{s}},
		{"a long read for a caller that takes a task", taking, long, InvokeInput{}, tasked{s}},
		{"a write", taking, swap, InvokeInput{}, quoting{s}},
		{"a flat fee", plain, flat, InvokeInput{}, quoting{s}},
		{"a confirmation of a write", plain, swap, InvokeInput{ConfirmRequestID: "r"}, continued{s}},
		{"an approved read, checked again", taking, long, InvokeInput{ConfirmRequestID: "r"}, continued{s}},
		{"a declined quote", plain, swap, InvokeInput{Decline: true}, continued{s}},
	} {
		if got := s.wayOf(c.caller, s.plan(c.intent, "acct"), c.in); got != c.want {
			t.Errorf("%s: way %s, want %s", c.name, reflect.TypeOf(got).Name(), reflect.TypeOf(c.want).Name())
		}
	}
}
