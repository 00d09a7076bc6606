package app_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/switchboard-hq/switchboard/cmd/switchboard/app/apptest"
	"github.com/switchboard-hq/switchboard/tools"
)

// agentListBudget is what an agent key's tools/list may weigh (issue 37): an MCP host puts
// every listed definition into its model's context.
const agentListBudget = 40_000

// TestToolListFitsTheCaller lists the tools through the go-sdk client over Streamable HTTP
// for a keyless host and for keys of different scopes, and checks that each is shown only
// what it may call and that an agent key's list stays under its budget. The sizes (bytes
// of the result's JSON) are logged: docs/performance.md records them.
func TestToolListFitsTheCaller(t *testing.T) {
	env := apptest.Start(t, apptest.Options{})
	root := env.Onboard(t, "lists@example.com")["apiKey"].(string)
	mint := func(scopes ...string) string {
		t.Helper()
		st, out := env.REST(t, "POST", "/v1/keys", root, map[string]any{"name": "list", "scopes": scopes})
		if st != 200 && st != 201 {
			t.Fatalf("mint %v: %d %v", scopes, st, out)
		}
		return out["secret"].(string)
	}
	for _, tc := range []struct {
		name   string
		key    string
		scopes []string // nil: keyless
	}{
		{"keyless", "", nil},
		{"agent (read, partner)", mint("read", "partner"), []string{"read", "partner"}},
		{"publishing (publish)", mint("publish"), []string{"publish"}},
		{"read only", mint("read"), []string{"read"}},
		{"first key (every scope)", root, tools.ScopeNames()},
	} {
		res, err := connect(t, env.URL, tc.key).ListTools(context.Background(), nil)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		raw, _ := json.Marshal(res)
		var listed []string
		for _, lt := range res.Tools {
			listed = append(listed, lt.Name)
			kt := env.App.Kernel.Tool(lt.Name)
			switch {
			case kt == nil:
				t.Errorf("%s: listed %s, which the kernel does not have", tc.name, lt.Name)
			case kt.Toolset() == tools.ToolsetOwner:
				t.Errorf("%s: listed %s of the owner toolset without being asked", tc.name, lt.Name)
			case tc.scopes == nil && kt.Toolset() == tools.ToolsetPartner:
				t.Errorf("%s: listed %s of the partner toolset without being asked", tc.name, lt.Name)
			case tc.scopes != nil && !kt.Access.NeedsKey():
				t.Errorf("%s: listed the onboarding tool %s to a key", tc.name, lt.Name)
			case tc.scopes != nil && kt.Access.Scope() != "" && !slices.Contains(tc.scopes, string(kt.Access.Scope())):
				t.Errorf("%s: listed %s, which needs scope %s", tc.name, lt.Name, kt.Access.Scope())
			}
		}
		// Nothing it may call is left out.
		for _, kt := range env.App.Kernel.Tools() {
			may := kt.Toolset() != tools.ToolsetPartner
			if tc.scopes != nil {
				may = kt.Access.NeedsKey() && (kt.Access.Scope() == "" || slices.Contains(tc.scopes, string(kt.Access.Scope())))
			}
			may = may && kt.Toolset() != tools.ToolsetOwner // listed only when asked for
			if may != slices.Contains(listed, kt.Name) {
				t.Errorf("%s: %s listed %v, want %v", tc.name, kt.Name, !may, may)
			}
		}
		var desc, in, out, icons int
		for _, lt := range res.Tools {
			i, _ := json.Marshal(lt.InputSchema)
			o, _ := json.Marshal(lt.OutputSchema)
			ic, _ := json.Marshal(lt.Icons)
			desc, in, out, icons = desc+len(lt.Description), in+len(i), out+len(o), icons+len(ic)
		}
		t.Logf("%s: %d tools, %d bytes (descriptions %d, input schemas %d, output schemas %d, icons %d)", tc.name, len(res.Tools), len(raw), desc, in, out, icons)
		if tc.name == "agent (read, partner)" && len(raw) >= agentListBudget {
			t.Errorf("an agent key's tools/list is %d bytes, over its budget of %d: trim descriptions or output schemas (docs/performance.md)", len(raw), agentListBudget)
		}
	}

	// A tool a key is not shown still answers FORBIDDEN naming the scope, and one a keyless
	// host is not shown the 401 challenge saying how to get a key.
	if _, e := callTool(t, connect(t, env.URL, mint("read")), "partner_list_intents", nil); e == nil || e.Code != tools.CodeForbidden {
		t.Errorf("partner_list_intents with a read key: %+v, want FORBIDDEN", e)
	}
	if st, _, body := apptest.KeylessMCPCall(t, env.URL, "partner_list_intents"); st != 401 || body["error"].(map[string]any)["code"] != "UNAUTHENTICATED" {
		t.Errorf("partner_list_intents without a key: %d %v", st, body)
	}
}
