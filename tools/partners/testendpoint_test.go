package partners_test

import (
	"context"
	"testing"

	"github.com/switchboard-hq/switchboard/signing/partnerexample"
	partnerstore "github.com/switchboard-hq/switchboard/store/partners"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/partners/partnertest"
)

func TestTestEndpoint(t *testing.T) {
	for _, d := range doors {
		t.Run(string(d), func(t *testing.T) {
			e := newEnv(t, envOptions{})
			acct, key := e.account(t)
			ex := partnertest.Example(t, e.pub, "@ticker-chart")
			args := intent("@ticker-chart", ex.URL+partnerexample.MCPPath)
			args["bindingType"] = "MCP_HTTP"
			args["parametersSchema"] = rawJSON(partnerexample.MCPParametersSchema)
			args["outputSchema"] = map[string]any{"type": "object", "required": []string{"ticker", "days"}}
			row := e.ok(t, d, key, "partner_publish_intent", args)
			id := row["id"].(string)
			before, _ := partnerstore.New(e.st).Intent(context.Background(), id)

			// An intent, with sample args made from its parametersSchema.
			out := e.ok(t, d, key, "partner_test_endpoint", map[string]any{"intentId": id})
			rt := out["roundTrip"].(map[string]any)
			if rt["verdict"] != "OK" || rt["status"] != float64(200) || rt["argsSource"] != "sample" || rt["args"].(map[string]any)["ticker"] == nil ||
				out["probe"].(map[string]any)["verdict"] != "PASS" || out["readyToActivate"] != true || len(rt["notes"].([]any)) != 0 {
				t.Fatalf("test of a correct MCP_HTTP intent: %v", out)
			}
			result := rt["response"].(map[string]any)["result"].(map[string]any)
			if result["requestId"] != rt["requestId"] || result["userId"] != e.svc.UserID(acct, row["partnerId"].(string)) {
				t.Fatalf("the partner saw %v", result)
			}
			// Given args are validated against parametersSchema first.
			o, er := e.call(t, d, key, "partner_test_endpoint", map[string]any{"intentId": id, "args": map[string]any{"days": 3}})
			mustErr(t, o, er, tools.CodeBadInput, "parametersSchema", "ticker")
			// ...and reach the partner as given; the partner's failure is reported as such.
			out = e.ok(t, d, key, "partner_test_endpoint", map[string]any{"intentId": id, "args": map[string]any{"ticker": "sol", "days": 30}})
			if r := out["roundTrip"].(map[string]any)["response"].(map[string]any)["result"].(map[string]any); r["ticker"] != "SOL" || r["days"] != float64(30) {
				t.Fatalf("given args: %v", out)
			}
			// It changes no state.
			after, _ := partnerstore.New(e.st).Intent(context.Background(), id)
			if after.Revision != before.Revision || after.IsActive || !after.UpdatedAt.Equal(before.UpdatedAt) {
				t.Fatalf("test_endpoint changed the row: %+v -> %+v", before, after)
			}

			// A URL before publishing: a REST partner answering 500 to everything.
			bad := partnertest.Fails500(t)
			out = e.ok(t, d, key, "partner_test_endpoint", map[string]any{"toolEndpoint": bad.URL})
			rt = out["roundTrip"].(map[string]any)
			if rt["verdict"] != "PARTNER_FAILURE" || rt["status"] != float64(500) || out["probe"].(map[string]any)["verdict"] != "FAIL" ||
				out["readyToActivate"] != false || out["target"].(map[string]any)["intentDefinitionId"] != "test" {
				t.Fatalf("test of a failing URL: %v", out)
			}
			// A URL answering something that is not an envelope.
			junk := partnertest.AcceptsForged(t) // answers a signed call with an echo, a valid envelope
			out = e.ok(t, d, key, "partner_test_endpoint", map[string]any{"toolEndpoint": junk.URL, "args": map[string]any{"query": "x"}})
			if out["roundTrip"].(map[string]any)["verdict"] != "OK" || out["probe"].(map[string]any)["verdict"] != "FAIL" {
				t.Fatalf("forged-accepting URL: %v", out)
			}
			// A hanging URL: no answer, probe inconclusive.
			hang := partnertest.Hangs(t)
			out = e.ok(t, d, key, "partner_test_endpoint", map[string]any{"toolEndpoint": hang.URL, "timeoutMs": 1000})
			if out["roundTrip"].(map[string]any)["verdict"] != "NO_ANSWER" || out["probe"].(map[string]any)["verdict"] != "INCONCLUSIVE" {
				t.Fatalf("hanging URL: %v", out)
			}
			// MCP_HTTP URLs need the tool name.
			o, er = e.call(t, d, key, "partner_test_endpoint", map[string]any{"toolEndpoint": ex.URL + partnerexample.MCPPath, "bindingType": "MCP_HTTP"})
			mustErr(t, o, er, tools.CodeBadInput, "publicIdentifier")
			o, er = e.call(t, d, key, "partner_test_endpoint", map[string]any{})
			mustErr(t, o, er, tools.CodeBadInput, "intentId", "toolEndpoint")
			o, er = e.call(t, d, key, "partner_test_endpoint", map[string]any{"intentId": id, "toolEndpoint": bad.URL})
			mustErr(t, o, er, tools.CodeBadInput, "not both")
		})
	}
}
