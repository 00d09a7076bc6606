package app_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/switchboard-hq/switchboard/cmd/switchboard/app/apptest"
	"github.com/switchboard-hq/switchboard/store/storetest"
	"github.com/switchboard-hq/switchboard/tools/keys"
	"github.com/switchboard-hq/switchboard/tools/service"
)

// benchEnv starts the service with a key whose rate limit does not get in the way.
func benchEnv(b *testing.B, dialect string) (*apptest.Env, string) {
	env := apptest.Start(b, apptest.Options{Dialect: dialect, Config: func(c *apptest.Config) { c.DefaultRateLimit = 1 << 30 }})
	doREST(b, "POST", env.URL+"/v1/agents/signup", "", map[string]any{"email": "bench@example.com"})
	_, _, acct := doREST(b, "POST", env.URL+"/v1/agents/verify", "", map[string]any{"email": "bench@example.com", "code": env.Inbox.Code(b, "bench@example.com", 1)})
	return env, acct["apiKey"].(string)
}

// BenchmarkAuthenticate: one key lookup by hash (the work every keyed call does first), from
// the database (no key watch: nothing is cached) and from the cache the watch keeps live.
func BenchmarkAuthenticate(b *testing.B) {
	for _, d := range storetest.Dialects() {
		for _, cached := range []bool{false, true} {
			b.Run(fmt.Sprintf("%s/cached=%v", d, cached), func(b *testing.B) {
				env, key := benchEnv(b, d)
				auth := keys.NewAuthenticator(service.Deps{Store: env.App.Store, Now: env.Clock.Now, Log: env.App.Log}, nil)
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				if cached {
					go auth.Watch(ctx, time.Minute)
					for !auth.Live() {
						time.Sleep(time.Millisecond)
					}
				}
				b.ResetTimer()
				for b.Loop() {
					if _, err := auth.Authenticate(ctx, key); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkMCPCall: api_key_list through the go-sdk client over Streamable HTTP on loopback.
func BenchmarkMCPCall(b *testing.B) {
	for _, d := range storetest.Dialects() {
		b.Run(d, func(b *testing.B) {
			env, key := benchEnv(b, d)
			cs := connect(b, env.URL, key)
			ctx := context.Background()
			b.ResetTimer()
			for b.Loop() {
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "api_key_list"})
				if err != nil || res.IsError {
					b.Fatalf("%v %v", err, res)
				}
			}
		})
	}
}

// BenchmarkRESTCall: GET /v1/keys on loopback.
func BenchmarkRESTCall(b *testing.B) {
	for _, d := range storetest.Dialects() {
		b.Run(d, func(b *testing.B) {
			env, key := benchEnv(b, d)
			req, _ := http.NewRequest("GET", env.URL+"/v1/keys", nil)
			req.Header.Set("x-api-key", key)
			b.ResetTimer()
			for b.Loop() {
				resp, err := http.DefaultClient.Do(req)
				if err != nil || resp.StatusCode != 200 {
					b.Fatalf("%v %v", err, resp)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
}
