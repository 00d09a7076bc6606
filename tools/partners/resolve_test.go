package partners_test

import (
	"strings"
	"testing"

	"github.com/switchboard-hq/switchboard/tools"
)

// Issue 46 item 5: publishing or testing an endpoint whose host does not resolve (a .invalid
// name, looked up by this machine's own resolver) says "<host> does not resolve" and what to
// do, on both doors, and never names the deployment's resolver ("lookup x on 10.0.0.2:53").
func TestAnEndpointThatDoesNotResolveNamesNoResolver(t *testing.T) {
	const endpoint = "https://partner.example.invalid/tool"
	for _, d := range doors {
		t.Run(string(d), func(t *testing.T) {
			e := newEnv(t, envOptions{strict: true})
			_, key := e.account(t)
			for _, call := range []struct {
				tool string
				args map[string]any
			}{
				{"partner_publish_intent", intent("@nowhere", endpoint)},
				{"partner_test_endpoint", map[string]any{"toolEndpoint": endpoint}},
			} {
				out, err := e.call(t, d, key, call.tool, call.args)
				te := mustErr(t, out, err, tools.CodeBadInput, "partner.example.invalid does not resolve", "public DNS records")
				if strings.Contains(te.Message, "lookup") || strings.Contains(te.Message, ":53") {
					t.Fatalf("%s: %q names the resolver", call.tool, te.Message)
				}
			}
		})
	}
}
