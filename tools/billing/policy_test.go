package billing

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/store/spending"
	"github.com/switchboard-hq/switchboard/tools"
)

func mustPolicy(t *testing.T, raw string) *Policy {
	t.Helper()
	p, err := ParsePolicy([]byte(raw))
	if err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	return p
}

// Malformed policies are refused saying what to fix, before anything is stored.
func TestPolicyCheck(t *testing.T) {
	for raw, says := range map[string]string{
		`{"caps":[{"window":"week","usd":"1"}]}`:                               "not a window",
		`{"caps":[{"window":"day","usd":"1"},{"window":"day","usd":"2"}]}`:     "twice",
		`{"caps":[{"window":"day","usd":"0"}]}`:                                "is 0",
		`{"caps":[{"window":"day","usd":"-1"}]}`:                               "decimal USD amount",
		`{"perCallMaxUsd":"1.0000001"}`:                                        "at most 6 decimals",
		`{"perCallMaxUsd":"99999999"}`:                                         "more than",
		`{"deny":{"handles":["acme"]}}`:                                        "not an @handle",
		`{"denyByDefault":true}`:                                               "refuse every call",
		`{"surprise":true}`:                                                    "unknown field",
		`{"caps":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}`: "nest",
	} {
		_, err := ParsePolicy([]byte(raw))
		var te *tools.Error
		if !errors.As(err, &te) || te.Code != tools.CodeBadInput || !strings.Contains(err.Error(), says) {
			t.Errorf("%s: %v (want BAD_INPUT saying %q)", raw, err, says)
		}
	}
	p := mustPolicy(t, `{"caps":[{"window":"30d","usd":"100"},{"window":"hour","usd":"5"}],"deny":{"handles":["@B","@a","@a"]}}`).Normalized()
	if p.Caps[0].Window != "hour" || strings.Join(p.Deny.Handles, ",") != "@a,@b" || p.Allow.Handles == nil {
		t.Fatalf("normalized: %+v", p)
	}
}

// A key may only narrow: each rule is compared with the one in force.
func TestPolicyNarrows(t *testing.T) {
	old := mustPolicy(t, `{"caps":[{"window":"day","usd":"5"}],"perCallMaxUsd":"1","deny":{"categories":["SEND"]},
		"denyByDefault":true,"allow":{"categories":["QUERY","PRICE"]},"approval":{"aboveUsd":"0.5","firstCallToPartner":true}}`)
	for raw, loosens := range map[string]string{
		`{"caps":[{"window":"day","usd":"6"}],"perCallMaxUsd":"1","deny":{"categories":["SEND"]},"denyByDefault":true,"allow":{"categories":["QUERY"]},"approval":{"aboveUsd":"0.5","firstCallToPartner":true}}`:        "caps.day",
		`{"perCallMaxUsd":"1","deny":{"categories":["SEND"]},"denyByDefault":true,"allow":{"categories":["QUERY"]},"approval":{"aboveUsd":"0.5","firstCallToPartner":true}}`:                                            "caps.day",
		`{"caps":[{"window":"day","usd":"5"}],"deny":{"categories":["SEND"]},"denyByDefault":true,"allow":{"categories":["QUERY"]},"approval":{"aboveUsd":"0.5","firstCallToPartner":true}}`:                            "perCallMaxUsd",
		`{"caps":[{"window":"day","usd":"5"}],"perCallMaxUsd":"1","denyByDefault":true,"allow":{"categories":["QUERY"]},"approval":{"aboveUsd":"0.5","firstCallToPartner":true}}`:                                       "deny.categories",
		`{"caps":[{"window":"day","usd":"5"}],"perCallMaxUsd":"1","deny":{"categories":["SEND"]},"allow":{"categories":["QUERY"]},"approval":{"aboveUsd":"0.5","firstCallToPartner":true}}`:                             "denyByDefault",
		`{"caps":[{"window":"day","usd":"5"}],"perCallMaxUsd":"1","deny":{"categories":["SEND"]},"denyByDefault":true,"allow":{"categories":["QUERY","SWAP"]},"approval":{"aboveUsd":"0.5","firstCallToPartner":true}}`: "allow",
		`{"caps":[{"window":"day","usd":"5"}],"perCallMaxUsd":"1","deny":{"categories":["SEND"]},"denyByDefault":true,"allow":{"categories":["QUERY"]},"approval":{"aboveUsd":"0.6","firstCallToPartner":true}}`:        "approval.aboveUsd",
		`{"caps":[{"window":"day","usd":"5"}],"perCallMaxUsd":"1","deny":{"categories":["SEND"]},"denyByDefault":true,"allow":{"categories":["QUERY"]},"approval":{"aboveUsd":"0.5"}}`:                                  "approval.firstCallToPartner",
	} {
		if ok, rule := mustPolicy(t, raw).Narrows(old); ok || rule != loosens {
			t.Errorf("%s: narrows %v, rule %q (want it to loosen %s)", raw, ok, rule, loosens)
		}
	}
	stricter := mustPolicy(t, `{"caps":[{"window":"day","usd":"4"},{"window":"hour","usd":"1"}],"perCallMaxUsd":"0.5","deny":{"categories":["SEND","SWAP"]},
		"denyByDefault":true,"allow":{"categories":["QUERY"]},"approval":{"aboveUsd":"0.1","categories":["PRICE"],"firstCallToPartner":true}}`)
	if ok, rule := stricter.Narrows(old); !ok {
		t.Fatalf("a stricter policy loosens %s", rule)
	}
	if ok, _ := stricter.Narrows(nil); !ok {
		t.Fatal("any policy narrows none")
	}
}

// A call is weighed against each rule in turn; a cap counts what its window spent; an
// approval rule is asked only of a call being asked for.
func TestJudge(t *testing.T) {
	p := &tools.Principal{AccountID: "a", KeyID: "k1", Method: tools.AuthAPIKey}
	v := &spending.View{
		Policies: []*spending.Policy{{AccountID: "a", KeyID: "k1", Body: `{"caps":[{"window":"hour","usd":"0.01"}],"perCallMaxUsd":"0.005",
		"deny":{"publishers":["p_bad"]},"denyByDefault":true,"allow":{"handles":["@ok"],"categories":["PRICE"]},
		"approval":{"aboveUsd":"0.002","categories":["SWAP"]}}`}},
		Spent: map[string][]int64{"k1": {6_000, 6_000, 6_000}},
	}
	call := Spend{Handle: "@ok", PublisherID: "p_good", Category: "QUERY", WorstMicro: 3_000}
	for _, c := range []struct {
		change func(*Spend)
		rule   string
	}{
		{func(s *Spend) { s.PublisherID = "p_bad" }, "deny.publishers"},
		{func(s *Spend) { s.Handle = "@other" }, "denyByDefault"},
		{func(s *Spend) { s.WorstMicro = 6_000 }, "perCallMaxUsd"},
		{func(s *Spend) { s.WorstMicro = 4_001 }, "caps.hour"},
	} {
		s := call
		c.change(&s)
		err := Judge(p, v, s, false)
		var te *tools.Error
		if !errors.As(err, &te) || te.Code != tools.CodePolicyDenied || te.Details["rule"] != c.rule || te.Details["keyId"] != "k1" {
			t.Errorf("%+v: %v (want %s)", s, err, c.rule)
		}
	}
	if err := Judge(p, v, call, false); err != nil {
		t.Fatalf("a held call within every rule: %v", err)
	}
	var ask *ErrApprovalRequired
	if err := Judge(p, v, call, true); !errors.As(err, &ask) || ask.Rule != "approval.aboveUsd" {
		t.Fatalf("asked for, above the approval amount: %v", err)
	}
	other := call
	other.Handle, other.Category, other.WorstMicro = "@other", "PRICE", 1_000 // allowed by its category
	if err := Judge(p, v, other, true); err != nil {
		t.Fatalf("a call allowed by its category: %v", err)
	}
	v.Policies[0].Body = `{"approval":{"categories":["SWAP"],"firstCallToPartner":true}}`
	swap := other
	swap.Category = "SWAP"
	if err := Judge(p, v, swap, true); !errors.As(err, &ask) || ask.Rule != "approval.categories" {
		t.Fatalf("an approval category: %v", err)
	}
	if err := Judge(p, v, other, true); !errors.As(err, &ask) || ask.Rule != "approval.firstCallToPartner" {
		t.Fatalf("a first call: %v", err)
	}
	v.CalledBefore = true
	if err := Judge(p, v, other, true); err != nil {
		t.Fatalf("a call of a partner called before: %v", err)
	}
}

// A policy's check sums only the windows it caps: the others start at now, and a policy
// without caps reads no history at all.
func TestWindowsOfReadOnlyWhatAPolicyCaps(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	of := windowsOf(now)
	row := func(body string) *spending.Policy { return &spending.Policy{Body: body} }
	got := of(row(`{"caps":[{"window":"hour","usd":"1"},{"window":"30d","usd":"9"}]}`))
	want := []time.Time{now.Add(-time.Hour), now, now.Add(-30 * 24 * time.Hour)}
	if !slices.Equal(got, want) {
		t.Fatalf("hour and 30d caps: %v, want %v", got, want)
	}
	if got := of(row(`{"perCallMaxUsd":"1","deny":{"categories":["SWAP"]}}`)); got != nil {
		t.Fatalf("no caps: %v, want nothing summed", got)
	}
	if got := of(row(`{"caps":`)); !slices.Equal(got, windowsSince(now)) {
		t.Fatalf("a body that does not parse: %v, want every window", got)
	}
}

// The lists of on-chain movements: hosts and EVM addresses are kept lowercased, a key may not
// drop an entry, and a movement is refused or let through by them like a call by its handle.
func TestMovementLists(t *testing.T) {
	p := mustPolicy(t, `{"deny":{"hosts":["API.Example.com"],"recipients":["0xABCDEF0123456789ABCDEF0123456789ABCDEF01"]},"denyByDefault":true,"allow":{"hosts":["ok.example"]}}`).Normalized()
	if p.Deny.Hosts[0] != "api.example.com" || p.Deny.Recipients[0] != "0xabcdef0123456789abcdef0123456789abcdef01" {
		t.Fatalf("normalized: %+v", p.Deny)
	}
	loose := mustPolicy(t, `{"deny":{"recipients":["0xabcdef0123456789abcdef0123456789abcdef01"]},"denyByDefault":true,"allow":{"hosts":["ok.example"]}}`)
	if ok, rule := loose.Narrows(&p); ok || rule != "deny.hosts" {
		t.Fatalf("dropping a denied host: %v %s", ok, rule)
	}
	sp := scoped{Policy: &p}
	for host, want := range map[string]string{"Api.Example.com": "deny.hosts", "other.example": "denyByDefault", "OK.example": ""} {
		err := sp.allows(Spend{Category: CategoryX402, Host: host, Recipient: "0x1111111111111111111111111111111111111111"})
		var te *tools.Error
		if got := ""; errors.As(err, &te) {
			got, _ = te.Details["rule"].(string)
			if got != want {
				t.Errorf("%s: %v; want %q", host, err, want)
			}
		} else if want != "" {
			t.Errorf("%s: %v; want %q", host, err, want)
		}
	}
	if err := sp.allows(Spend{Host: "ok.example", Recipient: "0xAbCdEf0123456789aBcDeF0123456789abcdef01"}); err == nil {
		t.Fatal("a denied recipient in another case was let through")
	}
}

// A movement without a USD value (a token with no price) is refused by a policy that bounds
// spending in USD (caps, perCallMaxUsd, approval.aboveUsd), naming rule "unpriced", and judged
// as usual by one of lists and categories alone; a denied recipient is still told as denied.
func TestUnpricedMovements(t *testing.T) {
	unpriced := Spend{Category: CategorySend, Recipient: "0x1111111111111111111111111111111111111111", Unpriced: true}
	for body, want := range map[string]string{
		`{"caps":[{"window":"day","usd":"5"}]}`: "unpriced",
		`{"perCallMaxUsd":"1"}`:                 "unpriced",
		`{"approval":{"aboveUsd":"1"}}`:         "unpriced",
		`{"deny":{"recipients":["0x1111111111111111111111111111111111111111"]},"caps":[{"window":"day","usd":"5"}]}`: "deny.recipients",
		`{"approval":{"categories":["SEND"]}}`: "",
		`{"deny":{"categories":["X402"]}}`:     "",
	} {
		p := mustPolicy(t, body)
		err := scoped{Policy: p}.allows(unpriced)
		var te *tools.Error
		got := ""
		if errors.As(err, &te) {
			got, _ = te.Details["rule"].(string)
		}
		if got != want {
			t.Errorf("%s: %v; want rule %q", body, err, want)
		}
	}
	p := mustPolicy(t, `{"caps":[{"window":"day","usd":"5"}]}`)
	priced := unpriced
	priced.Unpriced = false
	if err := (scoped{Policy: p}).allows(priced); err != nil {
		t.Fatalf("a priced movement under the same policy: %v", err)
	}
}
