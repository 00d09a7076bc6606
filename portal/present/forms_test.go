package present_test

import (
	"slices"
	"testing"

	"github.com/switchboard-hq/switchboard/portal/present"
	"github.com/switchboard-hq/switchboard/tools/billing"
)

// Saving the policy form keeps every list the policy has: the on-chain lists set over the API
// (recipients, hosts, contracts) come back from the form as they went in.
func TestPolicyFormKeepsEveryList(t *testing.T) {
	pol := &billing.Policy{
		Deny: billing.Lists{Handles: []string{"@a", "@b"}, Publishers: []string{"p1"}, Categories: []string{"SEND"},
			Recipients: []string{"0xabc"}, Hosts: []string{"api.example.com", "x.example.org"}, Contracts: []string{"0xdef"}},
		Allow: billing.Lists{Hosts: []string{"ok.example.com"}, Recipients: []string{"0x123", "0x456"}},
	}
	form := present.PolicyForm(pol)
	deny, _ := form["deny_categories"].([]string)
	if got := present.ListsOf(form, "deny", deny); !sameLists(got, pol.Deny) {
		t.Errorf("deny lists after the form: %+v, want %+v", got, pol.Deny)
	}
	if got := present.ListsOf(form, "allow", nil); !sameLists(got, pol.Allow) {
		t.Errorf("allow lists after the form: %+v, want %+v", got, pol.Allow)
	}
	for _, f := range []string{"deny_recipients", "deny_hosts", "deny_contracts", "allow_recipients", "allow_hosts", "allow_contracts"} {
		if !slices.Contains(present.PolicyFields, f) {
			t.Errorf("%s is not a field of the form (its errors would show nowhere)", f)
		}
	}
}

// sameLists compares lists entry by entry (an empty list and none are the same policy).
func sameLists(a, b billing.Lists) bool {
	return slices.Equal(a.Handles, b.Handles) && slices.Equal(a.Publishers, b.Publishers) && slices.Equal(a.Categories, b.Categories) &&
		slices.Equal(a.Recipients, b.Recipients) && slices.Equal(a.Hosts, b.Hosts) && slices.Equal(a.Contracts, b.Contracts)
}
