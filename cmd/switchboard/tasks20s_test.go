//go:build tasks20s

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/signing"
	"github.com/switchboard-hq/switchboard/store/storetest"
)

// TestMeasure20s measures issue 50's case and asserts nothing (figures go to
// docs/performance.md, "MCP Tasks: the 20 s partner"): serve (its default
// SWITCHBOARD_TASK_AFTER, 30 s) and a partner that takes 20 s on an intent of timeoutMs
// 60000; a raw 2026-07-28 host that declares Tasks sends ten tools/call in a row and polls each
// task with tasks/get every second until it completes; then one host that does not declare
// Tasks waits for the ordinary answer. It logs the CreateTaskResult's and tasks/get's
// latencies, when the tasks completed, and the credit before and after.
//
//	go test -tags tasks20s -run TestMeasure20s -v ./cmd/switchboard/
func TestMeasure20s(t *testing.T) {
	bin := buildBinary(t)
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			dsn := storetest.DSN(t, dialect)
			dir := t.TempDir()
			keyFile := filepath.Join(dir, "signing-key.pem")
			key, _, _ := signing.LoadOrCreatePrivateKey(keyFile)
			work := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/report" { // 20 s for a call; the activation probe (no query) at once
					var env map[string]any
					if json.NewDecoder(r.Body).Decode(&env) == nil && fmt.Sprint(env["args"]) != "map[]" && fmt.Sprint(env["args"]) != "map[query:]" {
						time.Sleep(20 * time.Second)
					}
				}
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprint(w, `{"success":true,"result":{"report":"done"},"providerCostMicro":200}`)
			})
			partner, caFile := startPartner(t, signing.Middleware(serviceVerifier(key), work), dir)
			env := []string{"SWITCHBOARD_DATA_DIR=" + dir, "SWITCHBOARD_DATABASE_URL=" + dsn, "SWITCHBOARD_SIGNING_KEY_FILE=" + keyFile,
				"SWITCHBOARD_SMTP_URL=", "SWITCHBOARD_API_KEY=", "SWITCHBOARD_ALLOW_LOCAL_ENDPOINTS=true", "SWITCHBOARD_PARTNER_CA_FILE=" + caFile,
				"SWITCHBOARD_DEFAULT_RATE_LIMIT_PER_MINUTE=100000"}
			s := startServe(t, bin, freeAddr(t), env)
			apiKey := s.onboard("m20@example.com")
			st, out := s.do("POST", "/v1/partner/intents", apiKey, map[string]any{
				"publicIdentifier": "@report20", "name": "report", "description": "a 20 s report", "category": "QUERY",
				"toolEndpoint": partner.URL + "/report", "timeoutMs": 60000, "feeRate": 0.0005,
				"payoutAddresses": map[string]string{"evm": "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"}})
			if st != 201 {
				t.Fatal(out)
			}
			if st, out := s.do("POST", "/v1/partner/intents/"+out["id"].(string)+"/active", apiKey, map[string]any{"active": true}); st != 200 {
				t.Fatal(out)
			}
			rpc := func(method string, params map[string]any, declare bool) (map[string]any, time.Duration) {
				caps := map[string]any{}
				if declare {
					caps["extensions"] = map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}
				}
				params["_meta"] = map[string]any{"io.modelcontextprotocol/protocolVersion": "2026-07-28",
					"io.modelcontextprotocol/clientInfo": map[string]any{"name": "raw", "version": "1"}, "io.modelcontextprotocol/clientCapabilities": caps}
				raw, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
				req, _ := http.NewRequest("POST", s.url+"/mcp", bytes.NewReader(raw))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
				req.Header.Set("Mcp-Method", method)
				req.Header.Set("x-api-key", apiKey)
				if id, ok := params["taskId"].(string); ok {
					req.Header.Set("Mcp-Name", id)
				} else if name, ok := params["name"].(string); ok {
					req.Header.Set("Mcp-Name", name)
				}
				began := time.Now()
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				took := time.Since(began)
				var m map[string]any
				json.Unmarshal(body, &m)
				return m, took
			}
			call := map[string]any{"name": "invoke_partner_message", "arguments": map[string]any{"message": "@report20 quarterly", "args": map[string]any{"query": "quarterly"}}}
			credit := func() string { _, a := s.do("GET", "/v1/account", apiKey, nil); return fmt.Sprint(a["creditUsd"]) }
			c0 := credit()
			var created, gets, total []time.Duration
			var mu sync.Mutex
			var wg sync.WaitGroup
			for i := 0; i < 10; i++ {
				m, took := rpc("tools/call", map[string]any{"name": call["name"], "arguments": call["arguments"]}, true)
				res, _ := m["result"].(map[string]any)
				if res["resultType"] != "task" {
					t.Fatal(m)
				}
				created = append(created, took)
				id := res["taskId"].(string)
				start := time.Now().Add(-took)
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						m, took := rpc("tasks/get", map[string]any{"taskId": id}, true)
						mu.Lock()
						gets = append(gets, took)
						mu.Unlock()
						r := m["result"].(map[string]any)
						if r["status"] != "working" {
							mu.Lock()
							total = append(total, time.Since(start))
							mu.Unlock()
							return
						}
						time.Sleep(time.Second)
					}
				}()
			}
			wg.Wait()
			c1 := credit()
			_, plain := rpc("tools/call", map[string]any{"name": call["name"], "arguments": call["arguments"]}, false)
			c2 := credit()
			sort.Slice(created, func(i, j int) bool { return created[i] < created[j] })
			sort.Slice(gets, func(i, j int) bool { return gets[i] < gets[j] })
			sort.Slice(total, func(i, j int) bool { return total[i] < total[j] })
			t.Logf("%s: CreateTaskResult p50 %v max %v (n=%d); tasks/get p50 %v p99 %v max %v (n=%d); task done after p50 %v max %v; undeclared host answered in %v; credit %s -> %s (10 tasks) -> %s (1 plain)",
				dialect, created[len(created)/2], created[len(created)-1], len(created), gets[len(gets)/2], gets[len(gets)*99/100], gets[len(gets)-1], len(gets),
				total[len(total)/2], total[len(total)-1], plain, c0, c1, c2)
		})
	}
}
