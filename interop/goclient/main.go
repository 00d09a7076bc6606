// Command goclient is the go-sdk MCP client pinned to one protocol revision, for the interop
// checks (interop/revision.test.mjs): it connects to a Switchboard /mcp with an API key,
// lists the tools, calls one tool, answers any elicitation with -decision, and prints what it
// saw as one JSON object on stdout.
//
//	goclient -url http://127.0.0.1:8080/mcp -key sb_... -revision 2026-07-28 -tool invoke_partner_message -args '{"message":"@x do it"}' -decision approve
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type keyHeader struct{ key string }

func (k keyHeader) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("x-api-key", k.key)
	return http.DefaultTransport.RoundTrip(r)
}

// report is what the client saw.
type report struct {
	ProtocolVersion string              `json:"protocolVersion"`
	TTLMs           int                 `json:"ttlMs"`
	CacheScope      string              `json:"cacheScope"`
	Tools           int                 `json:"tools"`
	ToolsWithIcons  int                 `json:"toolsWithIcons"`
	Elicitations    []*mcp.ElicitParams `json:"elicitations"`
	Result          *mcp.CallToolResult `json:"result,omitempty"`
}

func main() {
	endpoint := flag.String("url", "", "the server's /mcp URL")
	key := flag.String("key", "", "API key (x-api-key)")
	revision := flag.String("revision", "2026-07-28", "the protocol revision to speak")
	tool := flag.String("tool", "", "a tool to call after tools/list")
	args := flag.String("args", "{}", "its arguments (JSON)")
	decision := flag.String("decision", "", "the answer to an elicitation: approve, decline (the form's choice), or reject (the host's decline button); empty: declare no elicitation capability")
	flag.Parse()
	if err := run(*endpoint, *key, *revision, *tool, *args, *decision); err != nil {
		fmt.Fprintln(os.Stderr, "goclient:", err)
		os.Exit(1)
	}
}

func run(endpoint, key, revision, tool, args, decision string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var rep report
	opts := &mcp.ClientOptions{}
	if decision != "" {
		opts.ElicitationHandler = func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			rep.Elicitations = append(rep.Elicitations, req.Params)
			if decision == "reject" {
				return &mcp.ElicitResult{Action: "decline"}, nil
			}
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": decision}}, nil
		}
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "switchboard-interop-goclient", Version: "1"}, opts).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: &http.Client{Transport: keyHeader{key}}, DisableStandaloneSSE: true},
		&mcp.ClientSessionOptions{ProtocolVersion: revision})
	if err != nil {
		return fmt.Errorf("connect on %s: %w", revision, err)
	}
	defer cs.Close()
	rep.ProtocolVersion = cs.InitializeResult().ProtocolVersion
	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		return fmt.Errorf("tools/list: %w", err)
	}
	rep.TTLMs, rep.CacheScope, rep.Tools = list.TTLMs, list.CacheScope, len(list.Tools)
	for _, t := range list.Tools {
		if len(t.Icons) > 0 {
			rep.ToolsWithIcons++
		}
	}
	if tool != "" {
		var a map[string]any
		if err := json.Unmarshal([]byte(args), &a); err != nil {
			return fmt.Errorf("-args: %w", err)
		}
		if rep.Result, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: a}); err != nil {
			return fmt.Errorf("tools/call %s: %w", tool, err)
		}
	}
	return json.NewEncoder(os.Stdout).Encode(rep)
}
