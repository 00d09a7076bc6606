package policies

import (
	"strings"
	"testing"

	"github.com/switchboard-hq/switchboard/tools/billing"
)

// The effective policy is what combines as billing.Judge applies the policies: the lowest caps
// and maximum, every deny, every approval rule, deny-by-default when any says so. Allow lists
// are not combined (Judge lets a call through a policy when any of its lists names it): the
// effective allow stays empty, and policy_get shows each policy's (allowOnly).
func TestCombine(t *testing.T) {
	parse := func(raw string) *billing.Policy {
		p, err := billing.ParsePolicy([]byte(raw))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	e := combine([]*billing.Policy{
		parse(`{"caps":[{"window":"day","usd":"20"},{"window":"hour","usd":"5"}],"perCallMaxUsd":"1","deny":{"categories":["SEND"]},
			"denyByDefault":true,"allow":{"categories":["QUERY","PRICE"]},"approval":{"aboveUsd":"2"}}`),
		parse(`{"caps":[{"window":"day","usd":"3"}],"deny":{"handles":["@x"]},"denyByDefault":true,"allow":{"handles":["@y"]},
			"approval":{"aboveUsd":"0.5","firstCallToPartner":true}}`),
	})
	got := []string{e.Caps[0].Window + "=" + e.Caps[0].USD, e.Caps[1].Window + "=" + e.Caps[1].USD, e.PerCallMaxUsd,
		strings.Join(e.Deny.Categories, ","), strings.Join(e.Deny.Handles, ","), e.Approval.AboveUsd}
	want := []string{"hour=5", "day=3", "1", "SEND", "@x", "0.5"}
	if strings.Join(got, " ") != strings.Join(want, " ") || !e.DenyByDefault || !e.Approval.FirstCallToPartner {
		t.Fatalf("effective: %v %+v (want %v)", got, e, want)
	}
	if a := e.Allow; len(a.Handles)+len(a.Publishers)+len(a.Categories) != 0 {
		t.Fatalf("effective allow synthesized: %+v", a)
	}
	if none := combine(nil); len(none.Caps) != 0 || none.DenyByDefault {
		t.Fatalf("no policies: %+v", none)
	}
}
