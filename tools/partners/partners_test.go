package partners_test

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/signing/partnerexample"
	"github.com/switchboard-hq/switchboard/store"
	partnerstore "github.com/switchboard-hq/switchboard/store/partners"
	"github.com/switchboard-hq/switchboard/store/storetest"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/partners"
	"github.com/switchboard-hq/switchboard/tools/partners/partnertest"
)

func TestPublishListArchive(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		for _, d := range doors {
			t.Run(dialect+"/"+string(d), func(t *testing.T) {
				e := newEnv(t, envOptions{dialect: dialect})
				acct, key := e.account(t)
				p := partnertest.Example(t, e.pub, partnerexample.DefaultHandle)

				out, err := e.call(t, d, key, "partner_list_intents", nil)
				out = mustOK(t, out, err)
				if out["partner"] != nil || len(out["intents"].([]any)) != 0 {
					t.Fatalf("before publishing: %v", out)
				}

				args := intent("@price-oracle", p.URL+partnerexample.RESTPath)
				args["parametersSchema"] = map[string]any{"type": "object", "properties": map[string]any{"query": map[string]any{"type": "string"}}, "required": []string{"query"}}
				args["outputSchema"] = map[string]any{"type": "object"}
				args["feeRate"] = 0.25
				args["payoutAddresses"] = map[string]any{"evm": "0x52908400098527886E0F7030069857D2E4169EE7", "svm": "4Nd1mBQtrMJVYVfKf2PJy9NZUZdTAsp7D4xWLs4gDB4T"}
				row := e.ok(t, d, key, "partner_publish_intent", args)
				if row["isActive"] != false || row["verificationStatus"] != "UNVERIFIED" || row["ownerId"] != acct ||
					row["bindingType"] != "REST" || row["timeoutMs"] != float64(30000) || row["tier"] != "one_shot" ||
					row["feeRate"] != 0.25 || row["feeRateUnit"] != "usd_per_call" || row["archivedAt"] != nil || row["isCoreIntent"] != false {
					t.Fatalf("published row %v", row)
				}
				id := row["id"].(string)

				out = e.ok(t, d, key, "partner_list_intents", nil)
				partner := out["partner"].(map[string]any)
				if partner["ownerId"] != acct || partner["id"] != row["partnerId"] {
					t.Fatalf("partner profile %v, row %v", partner, row)
				}
				if ls := out["intents"].([]any); len(ls) != 1 || ls[0].(map[string]any)["id"] != id {
					t.Fatalf("list %v", out)
				}

				arch := e.ok(t, d, key, "partner_archive_intent", map[string]any{"intentId": id})
				if arch["archivedAt"] == nil || arch["isActive"] != false {
					t.Fatalf("archived row %v", arch)
				}
				e.clock.Advance(time.Minute)
				again := e.ok(t, d, key, "partner_archive_intent", map[string]any{"intentId": id})
				if again["archivedAt"] != arch["archivedAt"] {
					t.Fatalf("archiving again moved archivedAt: %v -> %v", arch["archivedAt"], again["archivedAt"])
				}
				out = e.ok(t, d, key, "partner_list_intents", nil)
				if len(out["intents"].([]any)) != 0 {
					t.Fatalf("archived intent listed by default: %v", out)
				}
				out = e.ok(t, d, key, "partner_list_intents", map[string]any{"includeArchived": true})
				if len(out["intents"].([]any)) != 1 {
					t.Fatalf("archived intent not listed on request: %v", out)
				}
				// An archived intent cannot be activated or updated, and its handle stays taken.
				o, er := e.call(t, d, key, "partner_set_active", map[string]any{"intentId": id, "active": true})
				mustErr(t, o, er, tools.CodeConflict, "archived")
				o, er = e.call(t, d, key, "partner_update_intent", map[string]any{"intentId": id, "name": "New"})
				mustErr(t, o, er, tools.CodeConflict, "archived")
				o, er = e.call(t, d, key, "partner_publish_intent", intent("@price-oracle", p.URL+partnerexample.RESTPath))
				mustErr(t, o, er, tools.CodeConflict, "@price-oracle", "taken")
				if len(p.Hits()) != 0 {
					t.Fatalf("publishing or archiving contacted the partner: %d requests", len(p.Hits()))
				}
			})
		}
	}
}

func TestActivationProbe(t *testing.T) {
	e := newEnv(t, envOptions{probe: 400 * time.Millisecond})
	_, key := e.account(t)
	// Each case's partner serves (for MCP_HTTP) one tool named as the case's handle.
	cases := []struct {
		name    string
		start   func(handle string) string // returns the endpoint
		binding string
		code    tools.Code // "" = activates
		message string
	}{
		{"correct REST partner", func(h string) string { return partnertest.Example(t, e.pub, h).URL + partnerexample.RESTPath }, "REST", "", ""},
		{"correct MCP_HTTP partner", func(h string) string { return partnertest.Example(t, e.pub, h).URL + partnerexample.MCPPath }, "MCP_HTTP", "", ""},
		{"accepts unsigned", func(string) string { return partnertest.AcceptsUnsigned(t, e.pub).URL }, "REST", tools.CodeConflict, "accepted an unsigned request"},
		{"accepts forged", func(string) string { return partnertest.AcceptsForged(t).URL }, "REST", tools.CodeConflict, "accepted a request with a forged signature"},
		{"unprotected MCP_HTTP", func(h string) string { return partnertest.MCP(t, e.pub, h, false).URL }, "MCP_HTTP", tools.CodeConflict, "accepted"},
		{"hangs", func(string) string { return partnertest.Hangs(t).URL }, "REST", tools.CodeUnavailable, "inconclusive, retry"},
		{"500 to everything", func(string) string { return partnertest.Fails500(t).URL }, "REST", tools.CodeConflict, "HTTP 500"},
	}
	for i, tc := range cases {
		handle := fmt.Sprintf("@probe-case-%d", i)
		id := e.publish(t, key, handle, tc.start(handle), tc.binding)
		for _, d := range doors {
			t.Run(tc.name+"/"+string(d), func(t *testing.T) {
				out, err := e.call(t, d, key, "partner_set_active", map[string]any{"intentId": id, "active": true})
				if tc.code == "" {
					out = mustOK(t, out, err)
					if out["intent"].(map[string]any)["isActive"] != true || out["probe"].(map[string]any)["verdict"] != "PASS" {
						t.Fatalf("activation: %v", out)
					}
					// Activating again is a no-op; deactivation always works.
					out = e.ok(t, d, key, "partner_set_active", map[string]any{"intentId": id, "active": true})
					if out["intent"].(map[string]any)["isActive"] != true || out["probe"] != nil {
						t.Fatalf("second activation: %v", out)
					}
					out = e.ok(t, d, key, "partner_set_active", map[string]any{"intentId": id, "active": false})
					if out["intent"].(map[string]any)["isActive"] != false || out["probe"] != nil {
						t.Fatalf("deactivate: %v", out)
					}
					return
				}
				er := mustErr(t, out, err, tc.code, tc.message)
				if er.Details["probe"] == nil {
					t.Fatalf("no probe report in details: %v", er.Details)
				}
				row, _ := partnerstore.New(e.st).Intent(context.Background(), id)
				if row.IsActive {
					t.Fatal("a refused activation left the intent active")
				}
				// Deactivation works whatever the endpoint does.
				e.ok(t, d, key, "partner_set_active", map[string]any{"intentId": id, "active": false})
			})
		}
	}
}

// publish publishes an intent through REST and returns its id.
func (e *env) publish(t *testing.T, key, handle, endpoint, binding string) string {
	t.Helper()
	args := intent(handle, endpoint)
	args["bindingType"] = binding
	if binding == "MCP_HTTP" {
		args["parametersSchema"] = rawJSON(partnerexample.MCPParametersSchema)
	}
	e.clock.Advance(13 * time.Minute) // stay under the publishing limit
	row := e.ok(t, viaREST, key, "partner_publish_intent", args)
	return row["id"].(string)
}

func TestUpdate(t *testing.T) {
	for _, d := range doors {
		t.Run(string(d), func(t *testing.T) {
			e := newEnv(t, envOptions{})
			_, key := e.account(t)
			good := partnertest.Example(t, e.pub, partnerexample.DefaultHandle)
			bad := partnertest.AcceptsUnsigned(t, e.pub)
			args := intent("@upd", good.URL+partnerexample.RESTPath)
			row := e.ok(t, d, key, "partner_publish_intent", args)
			id := row["id"].(string)

			// Immutable fields are refused by name, and nothing changes.
			for field, value := range map[string]any{"category": "SWAP", "publicIdentifier": "@other", "feeRateUnit": "bps", "parametersSchema": map[string]any{"type": "object"}} {
				out, err := e.call(t, d, key, "partner_update_intent", map[string]any{"intentId": id, field: value, "name": "Changed"})
				er := mustErr(t, out, err, tools.CodeBadInput, field, "immutable")
				if names := er.Details["immutableFields"].([]any); len(names) != 1 || names[0] != field {
					t.Fatalf("details %v", er.Details)
				}
			}
			out, err := e.call(t, d, key, "partner_update_intent", map[string]any{"intentId": id, "isActive": true})
			mustErr(t, out, err, tools.CodeBadInput, "isActive", "partner_set_active")
			if r, _ := partnerstore.New(e.st).Intent(context.Background(), id); r.Name != "Price oracle" || r.Category != "PRICE" {
				t.Fatalf("a refused update changed the row: %+v", r)
			}
			out, err = e.call(t, d, key, "partner_update_intent", map[string]any{"intentId": id})
			mustErr(t, out, err, tools.CodeBadInput, "nothing to update")
			out, err = e.call(t, d, key, "partner_update_intent", map[string]any{"intentId": id, "feeRate": 1})
			mustErr(t, out, err, tools.CodeBadInput, "payoutAddresses")

			// Editable fields change.
			out = e.ok(t, d, key, "partner_update_intent", map[string]any{"intentId": id, "name": "  Oracle 2 ", "timeoutMs": 5000,
				"sampleQueries": []string{"eth price", "sol price"}, "description": "New text"})
			in := out["intent"].(map[string]any)
			if in["name"] != "Oracle 2" || in["timeoutMs"] != float64(5000) || len(in["sampleQueries"].([]any)) != 2 || out["probe"] != nil || out["deactivated"] != false {
				t.Fatalf("update %v", out)
			}

			// Moving an active intent to an endpoint that fails the probe deactivates it.
			e.ok(t, d, key, "partner_set_active", map[string]any{"intentId": id, "active": true})
			out = e.ok(t, d, key, "partner_update_intent", map[string]any{"intentId": id, "toolEndpoint": bad.URL})
			if out["deactivated"] != true || out["intent"].(map[string]any)["isActive"] != false || out["probe"].(map[string]any)["verdict"] != "FAIL" ||
				!strings.Contains(out["notice"].(string), "deactivated") {
				t.Fatalf("endpoint change to a bad partner: %v", out)
			}
			// Moving an active intent to a good endpoint keeps it active.
			e.ok(t, d, key, "partner_update_intent", map[string]any{"intentId": id, "toolEndpoint": good.URL + partnerexample.RESTPath})
			e.ok(t, d, key, "partner_set_active", map[string]any{"intentId": id, "active": true})
			out = e.ok(t, d, key, "partner_update_intent", map[string]any{"intentId": id, "toolEndpoint": good.URL + partnerexample.RESTPath + "?v=2"})
			if out["deactivated"] != false || out["intent"].(map[string]any)["isActive"] != true || out["probe"].(map[string]any)["verdict"] != "PASS" {
				t.Fatalf("endpoint change to a good partner: %v", out)
			}
		})
	}
}

func TestUpdateHostResetsVerification(t *testing.T) {
	e := newEnv(t, envOptions{})
	acct, key := e.account(t)
	p := partnertest.Example(t, e.pub, partnerexample.DefaultHandle)
	row, err := e.svc.Publish(context.Background(), acct, []partners.IntentInput{input("@verified", p.URL+partnerexample.RESTPath)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.SetVerificationStatus(context.Background(), "@verified", partners.StatusVerified); err != nil {
		t.Fatal(err)
	}
	// Same host: stays verified.
	out := e.ok(t, viaREST, key, "partner_update_intent", map[string]any{"intentId": row[0].ID, "toolEndpoint": p.URL + "/other"})
	if out["intent"].(map[string]any)["verificationStatus"] != "VERIFIED" {
		t.Fatalf("same-host change reset verification: %v", out)
	}
	out = e.ok(t, viaREST, key, "partner_update_intent", map[string]any{"intentId": row[0].ID, "toolEndpoint": "https://localhost:1/x"})
	if out["intent"].(map[string]any)["verificationStatus"] != "UNVERIFIED" || !strings.Contains(out["notice"].(string), "UNVERIFIED") {
		t.Fatalf("host change kept verification: %v", out)
	}
}

func TestRateLimit(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		for _, d := range doors {
			t.Run(dialect+"/"+string(d), func(t *testing.T) {
				e := newEnv(t, envOptions{dialect: dialect})
				acct, key := e.account(t)
				endpoint := "https://partner.example/tool"
				start := e.clock.Now()
				for i := range 5 {
					e.ok(t, d, key, "partner_publish_intent", intent(fmt.Sprintf("@rl-%d", i), endpoint))
					e.clock.Advance(10 * time.Minute)
				}
				// 50 minutes in: the 6th row in the hour is refused until the first
				// row's hour is over.
				out, err := e.call(t, d, key, "partner_publish_intent", intent("@rl-5", endpoint))
				er := mustErr(t, out, err, tools.CodeRateLimited, "5 intents per hour", start.Add(time.Hour).Format(time.RFC3339), "in 600 s")
				if d == viaREST && er.Details["retryAfterHeader"] != "600" {
					t.Fatalf("Retry-After %v", er.Details["retryAfterHeader"])
				}
				// A bundle that does not fit is refused whole, even when part of it would.
				e.clock.Advance(10*time.Minute + time.Second) // the first slot is free again
				bundle := map[string]any{"intents": []any{intent("@rl-b1", endpoint), intent("@rl-b2", endpoint)}}
				out, err = e.call(t, d, key, "partner_publish_intent_bundle", bundle)
				mustErr(t, out, err, tools.CodeRateLimited, "nothing was published")
				for _, h := range []string{"@rl-b1", "@rl-b2"} {
					if _, err := partnerstore.New(e.st).IntentByHandle(context.Background(), h); !errors.Is(err, store.ErrNotFound) {
						t.Fatalf("%s written by a refused bundle: %v", h, err)
					}
				}
				// The single free slot takes one row; the limit holds for the other door
				// and the service's own entry point (the portal's) alike.
				e.ok(t, d, key, "partner_publish_intent", intent("@rl-b1", endpoint))
				_, perr := e.svc.Publish(context.Background(), acct, []partners.IntentInput{input("@rl-x", endpoint)})
				if te := tools.Translate(perr); te == nil || te.Code != tools.CodeRateLimited {
					t.Fatalf("service publish over the limit: %v", perr)
				}
				rows, _ := partnerstore.New(e.st).IntentsByOwner(context.Background(), acct, true)
				if len(rows) != 6 {
					t.Fatalf("%d rows, want 6", len(rows))
				}
			})
		}
	}
}

func TestBundleAtomicity(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		for _, d := range doors {
			t.Run(dialect+"/"+string(d), func(t *testing.T) {
				e := newEnv(t, envOptions{dialect: dialect})
				acct, key := e.account(t)
				endpoint := "https://partner.example/tool"
				rows := []any{intent("@b-one", endpoint), intent("@b-two", endpoint), intent("@b-three", endpoint), intent("@b-four", endpoint)}
				rows[2].(map[string]any)["capabilities"] = []string{"MUTATES_USER_FUNDS"} // with category PRICE: capability mismatch
				out, err := e.call(t, d, key, "partner_publish_intent_bundle", map[string]any{"intents": rows})
				er := mustErr(t, out, err, tools.CodeBadInput, "intents[2]", "@b-three", "MUTATES_USER_FUNDS needs a write category", "nothing was published")
				if er.Details["index"] != float64(2) {
					t.Fatalf("details %v", er.Details)
				}
				if got, _ := partnerstore.New(e.st).IntentsByOwner(context.Background(), acct, true); len(got) != 0 {
					t.Fatalf("%d rows written by a failed bundle", len(got))
				}
				if _, err := partnerstore.New(e.st).ByAccount(context.Background(), acct); !errors.Is(err, store.ErrNotFound) {
					t.Fatalf("a failed bundle created the Partner: %v", err)
				}
				// A taken handle in row 4 also leaves nothing.
				e.ok(t, d, key, "partner_publish_intent", intent("@b-taken", endpoint))
				rows[2].(map[string]any)["category"] = "EXECUTE"
				rows[3] = intent("@b-taken", endpoint)
				out, err = e.call(t, d, key, "partner_publish_intent_bundle", map[string]any{"intents": rows})
				mustErr(t, out, err, tools.CodeConflict, "@b-taken", "nothing was published")
				if got, _ := partnerstore.New(e.st).IntentsByOwner(context.Background(), acct, true); len(got) != 1 {
					t.Fatalf("%d rows after a conflicting bundle, want 1", len(got))
				}
				// Fixed, the bundle lands whole, in order.
				rows[3] = intent("@b-four", endpoint)
				out = e.ok(t, d, key, "partner_publish_intent_bundle", map[string]any{"intents": rows})
				got := out["intents"].([]any)
				if len(got) != 4 || got[2].(map[string]any)["publicIdentifier"] != "@b-three" || got[2].(map[string]any)["category"] != "EXECUTE" {
					t.Fatalf("bundle %v", out)
				}
				// Duplicate handles inside one bundle.
				out, err = e.call(t, d, key, "partner_publish_intent_bundle", map[string]any{"intents": []any{intent("@b-dup", endpoint), intent("@b-dup", endpoint)}})
				mustErr(t, out, err, tools.CodeBadInput, "intents[1]", "repeats the handle of intents[0]")
			})
		}
	}
}

func TestCrossAccount(t *testing.T) {
	for _, d := range doors {
		t.Run(string(d), func(t *testing.T) {
			e := newEnv(t, envOptions{})
			_, keyA := e.account(t)
			_, keyB := e.account(t)
			p := partnertest.Example(t, e.pub, partnerexample.DefaultHandle)
			row := e.ok(t, d, keyA, "partner_publish_intent", intent("@mine", p.URL+partnerexample.RESTPath))
			id := row["id"].(string)
			for tool, args := range map[string]map[string]any{
				"partner_update_intent":  {"intentId": id, "name": "stolen"},
				"partner_set_active":     {"intentId": id, "active": true},
				"partner_archive_intent": {"intentId": id},
				"partner_test_endpoint":  {"intentId": id},
			} {
				out, err := e.call(t, d, keyB, tool, args)
				mustErr(t, out, err, tools.CodeNotFound)
			}
			out := e.ok(t, d, keyB, "partner_list_intents", map[string]any{"includeArchived": true})
			if len(out["intents"].([]any)) != 0 {
				t.Fatalf("B sees A's intents: %v", out)
			}
			r, _ := partnerstore.New(e.st).Intent(context.Background(), id)
			if r.Name != "Price oracle" || r.IsActive || r.ArchivedAt != nil {
				t.Fatalf("B changed A's intent: %+v", r)
			}
			if len(p.Hits()) != 0 {
				t.Fatal("B's calls reached A's endpoint")
			}
			// Scope: a key without publish is refused.
			_, keyC := e.account(t, "read")
			o, er := e.call(t, d, keyC, "partner_list_intents", nil)
			mustErr(t, o, er, tools.CodeForbidden, "publish")
		})
	}
}

func TestProductionRefusesPublishing(t *testing.T) {
	for _, d := range doors {
		t.Run(string(d), func(t *testing.T) {
			e := newEnv(t, envOptions{production: true})
			acct, key := e.account(t)
			out, err := e.call(t, d, key, "partner_publish_intent", intent("@prod", "https://partner.example/x"))
			mustErr(t, out, err, tools.CodeForbidden, "live on the test environment")
			out, err = e.call(t, d, key, "partner_publish_intent_bundle", map[string]any{"intents": []any{intent("@prod", "https://partner.example/x")}})
			mustErr(t, out, err, tools.CodeForbidden, "live on the test environment")
			out, err = e.call(t, d, key, "partner_test_endpoint", map[string]any{"toolEndpoint": "https://partner.example/x"})
			mustErr(t, out, err, tools.CodeForbidden, "intentId")
			// The operator's insertion works, and the partner can then manage the row.
			p := partnertest.Example(t, e.pub, partnerexample.DefaultHandle)
			in, ierr := e.svc.Insert(context.Background(), acct, input("@prod", p.URL+partnerexample.RESTPath), partners.StatusVerified, false)
			if ierr != nil {
				t.Fatal(ierr)
			}
			if in.VerificationStatus != "VERIFIED" || in.IsActive {
				t.Fatalf("inserted %+v", in)
			}
			out = e.ok(t, d, key, "partner_set_active", map[string]any{"intentId": in.ID, "active": true})
			if out["intent"].(map[string]any)["isActive"] != true {
				t.Fatalf("activate inserted listing: %v", out)
			}
		})
	}
}

// With the development setting off, endpoints on loopback, private, link-local/metadata,
// ULA addresses, or names resolving to them, are refused at publish.
func TestSSRFAtPublish(t *testing.T) {
	dns := fakeDNS{"loopback.example": {netip.MustParseAddr("127.0.0.1")}, "partner.example": {netip.MustParseAddr("93.184.216.34")}}
	for _, d := range doors {
		t.Run(string(d), func(t *testing.T) {
			e := newEnv(t, envOptions{strict: true, resolver: dns})
			_, key := e.account(t)
			// Issue 46 item 7: an address on the partner's own machine or network is told how to
			// develop against it (its own server with SWITCHBOARD_ALLOW_LOCAL_ENDPOINTS, development
			// only); a metadata service, a documentation address and plain http are not.
			const hint = "SWITCHBOARD_ALLOW_LOCAL_ENDPOINTS=true: development only"
			for i, tc := range []struct {
				endpoint string
				hinted   bool
			}{
				{"https://127.0.0.1/tool", true}, {"https://10.1.2.3/tool", true}, {"https://192.168.1.20:8443/tool", true},
				{"https://[fd00::1]/tool", true}, {"https://[::1]/tool", true}, {"https://loopback.example/tool", true},
				{"https://169.254.169.254/latest/meta-data", false}, {"https://192.0.2.1/tool", false}, {"http://partner.example/tool", false},
			} {
				for _, tool := range []string{"partner_publish_intent", "partner_test_endpoint"} {
					args := map[string]any{"toolEndpoint": tc.endpoint}
					if tool == "partner_publish_intent" {
						args = intent(fmt.Sprintf("@ssrf-%d", i), tc.endpoint)
					}
					out, err := e.call(t, d, key, tool, args)
					if err := mustErr(t, out, err, tools.CodeBadInput, "toolEndpoint"); strings.Contains(err.Message, hint) != tc.hinted {
						t.Errorf("%s %s: %q; want the development hint: %v", tool, tc.endpoint, err.Message, tc.hinted)
					}
				}
			}
			e.ok(t, d, key, "partner_publish_intent", intent("@ssrf-ok", "https://partner.example/tool"))
		})
	}
}

type fakeDNS map[string][]netip.Addr

func (f fakeDNS) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := f[host]; ok {
		return a, nil
	}
	return nil, errors.New("no such host")
}

// Concurrent publishes of one Partner never exceed the quota together: the Partner's row is
// locked before the window is counted.
func TestPublishQuotaConcurrent(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			e := newEnv(t, envOptions{dialect: dialect})
			acct, _ := e.account(t)
			errs := make([]error, 8)
			var wg sync.WaitGroup
			for i := range errs {
				wg.Go(func() {
					_, errs[i] = e.svc.Publish(context.Background(), acct, []partners.IntentInput{input(fmt.Sprintf("@cc-%d", i), "https://partner.example/tool")})
				})
			}
			wg.Wait()
			ok, limited := 0, 0
			for _, err := range errs {
				switch te := tools.Translate(err); {
				case err == nil:
					ok++
				case te != nil && te.Code == tools.CodeRateLimited:
					limited++
				default:
					t.Errorf("unexpected error: %v", err)
				}
			}
			rows, _ := partnerstore.New(e.st).IntentsByOwner(context.Background(), acct, true)
			if ok != 5 || limited != 3 || len(rows) != 5 {
				t.Fatalf("%d published, %d limited, %d rows; want 5, 3 and 5", ok, limited, len(rows))
			}
		})
	}
}
