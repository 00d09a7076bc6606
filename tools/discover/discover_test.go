package discover_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/switchboard-hq/switchboard/cmd/switchboard/app/apptest"
	"github.com/switchboard-hq/switchboard/store"
	partnerstore "github.com/switchboard-hq/switchboard/store/partners"
	"github.com/switchboard-hq/switchboard/store/storetest"
	"github.com/switchboard-hq/switchboard/tools/discover"
	"github.com/switchboard-hq/switchboard/tools/partners"
)

type fixtureIntent struct {
	Handle             string   `json:"handle"`
	Name               string   `json:"name"`
	Description        string   `json:"description"`
	Category           string   `json:"category"`
	SampleQueries      []string `json:"sampleQueries"`
	VerificationStatus string   `json:"verificationStatus"`
}

func load(t testing.TB, path string, v any) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatal(err)
	}
}

// seed publishes the fixture intents, active, for a publisher account.
func seed(t testing.TB, env *apptest.Env, accountID string, active bool, fx []fixtureIntent) {
	t.Helper()
	now := time.Now().UTC()
	var rows []*partnerstore.Intent
	for _, f := range fx {
		rows = append(rows, &partnerstore.Intent{
			ID: uuid.NewString(), PublicIdentifier: f.Handle, Name: f.Name, Description: f.Description,
			Category: f.Category, Capabilities: []string{}, BindingType: "REST", ToolEndpoint: "https://partner.example/" + f.Handle[1:],
			TimeoutMs: 30000, ParametersSchema: partners.DefaultParametersSchema, FeeRate: "0.01", FeeRateUnit: partners.FeeUSDPerCall,
			Tier: partners.TierOneShot, SampleQueries: f.SampleQueries, IsActive: active, VerificationStatus: f.VerificationStatus,
			Revision: 1, CreatedAt: now, UpdatedAt: now,
		})
	}
	if _, err := partnerstore.New(env.App.Store).Publish(context.Background(), accountID, rows, now); err != nil {
		t.Fatal(err)
	}
}

func search(t testing.TB, env *apptest.Env, key, query string, extra url.Values) []map[string]any {
	t.Helper()
	v := url.Values{"query": {query}}
	for k, vs := range extra {
		v[k] = vs
	}
	status, out := env.REST(t, "GET", "/v1/discover?"+v.Encode(), key, nil)
	if status != 200 {
		t.Fatalf("discover %q: %d %v", query, status, out)
	}
	var res []map[string]any
	for _, r := range out["results"].([]any) {
		res = append(res, r.(map[string]any))
	}
	return res
}

// TestRelevance: 52 fixture intents, 24 queries with the expected best match, on both databases.
func TestRelevance(t *testing.T) {
	var fx []fixtureIntent
	load(t, "../../testdata/discover/intents.json", &fx)
	var queries []struct{ Query, Top string }
	load(t, "../../testdata/discover/queries.json", &queries)
	if len(fx) < 50 || len(queries) < 20 {
		t.Fatalf("fixture too small: %d intents, %d queries", len(fx), len(queries))
	}
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			env := apptest.Start(t, apptest.Options{Dialect: dialect})
			pub := env.Onboard(t, "publisher@example.com")
			seed(t, env, pub["userId"].(string), true, fx)
			key := env.Onboard(t, "agent@example.com")["apiKey"].(string)
			for _, q := range queries {
				res := search(t, env, key, q.Query, nil)
				if len(res) == 0 || res[0]["handle"] != q.Top {
					var got []any
					for _, r := range res {
						got = append(got, r["handle"])
					}
					t.Errorf("%q: top %v, want %s", q.Query, got, q.Top)
				}
			}
		})
	}
}

func TestDiscoverShapeAndVisibility(t *testing.T) {
	env := apptest.Start(t, apptest.Options{})
	pub := env.Onboard(t, "publisher@example.com")
	pubKey := pub["apiKey"].(string)
	seed(t, env, pub["userId"].(string), true, []fixtureIntent{
		{Handle: "@weather-now", Name: "Weather now", Description: "Current weather for any city", Category: "QUERY", VerificationStatus: "VERIFIED"},
		{Handle: "@uniswap-router", Name: "Uniswap router", Description: "Swap tokens on uniswap", Category: "SWAP", VerificationStatus: "UNVERIFIED"},
	})
	seed(t, env, pub["userId"].(string), false, []fixtureIntent{
		{Handle: "@weather-draft", Name: "Weather draft", Description: "Weather, not yet active", Category: "QUERY", VerificationStatus: "UNVERIFIED"},
	})
	agent := env.Onboard(t, "agent@example.com")["apiKey"].(string)

	// Another account does not see the draft; its publisher does, marked.
	for _, r := range search(t, env, agent, "weather", nil) {
		if r["handle"] == "@weather-draft" {
			t.Fatal("someone else's inactive intent was listed")
		}
	}
	var draft map[string]any
	for _, r := range search(t, env, pubKey, "weather", nil) {
		if r["handle"] == "@weather-draft" {
			draft = r
		}
	}
	if draft == nil || draft["active"] != false || draft["own"] != true {
		t.Fatalf("publisher's own draft: %v", draft)
	}
	// Each result says how to invoke it, with its fee, its price in words ("up to": the partner
	// is paid what it reports, capped by the rate) and parametersSchema.
	res := search(t, env, agent, "weather now", url.Values{"limit": {"1"}})
	if len(res) != 1 || res[0]["handle"] != "@weather-now" || !strings.Contains(res[0]["invoke"].(string), `"@weather-now <your request>"`) ||
		res[0]["fee"].(map[string]any)["feeRate"] != "0.01" || res[0]["parametersSchema"].(map[string]any)["type"] != "object" ||
		!strings.HasPrefix(res[0]["price"].(string), "Up to 0.01 USD per call") {
		t.Fatalf("result shape: %v", res)
	}
	// Category filter, and write intents say they need confirmation.
	res = search(t, env, agent, "swap tokens", url.Values{"category": {"SWAP"}})
	if len(res) != 1 || !strings.Contains(res[0]["invoke"].(string), "CONFIRMATION_REQUIRED") {
		t.Fatalf("category filter: %v", res)
	}
	if res := search(t, env, agent, "weather", url.Values{"category": {"SWAP"}}); len(res) != 0 {
		t.Fatalf("category filter let through %v", res)
	}
	// A query of stop words only is refused with what to do.
	if status, out := env.REST(t, "GET", "/v1/discover?query=what+is+the", agent, nil); status != 400 {
		t.Fatalf("stop words only: %d %v", status, out)
	}
}

func TestWords(t *testing.T) {
	got := strings.Join(discover.Words("What is the PRICE of $SOL, please? price!"), " ")
	if got != "price sol" {
		t.Fatalf("Words = %q", got)
	}
}

type trafficSpec struct {
	Calls, Succeeded, ProbeFailures int
}

// TestQualityRanking: pairs of equally relevant intents (same text, different handles), one
// healthy and one not (failing calls, failing re-probes, or both): the healthy one ranks first
// in every case, on both databases, and each result carries its quality record.
func TestQualityRanking(t *testing.T) {
	var cases []struct {
		Query, Name, Description, VerificationStatus string
		Healthy, Unhealthy                           trafficSpec
	}
	load(t, "../../testdata/discover/quality.json", &cases)
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			env := apptest.Start(t, apptest.Options{Dialect: dialect})
			pub := env.Onboard(t, "publisher@example.com")
			pubID := pub["userId"].(string)
			key := env.Onboard(t, "agent@example.com")["apiKey"].(string)
			for i, c := range cases {
				vs := c.VerificationStatus
				if vs == "" {
					vs = partners.StatusUnverified
				}
				h, u := fmt.Sprintf("@qa%d-a", i), fmt.Sprintf("@qa%d-b", i)
				seed(t, env, pubID, true, []fixtureIntent{
					{Handle: h, Name: c.Name, Description: c.Description, Category: "QUERY", SampleQueries: []string{c.Query}, VerificationStatus: vs},
					{Handle: u, Name: c.Name, Description: c.Description, Category: "QUERY", SampleQueries: []string{c.Query}, VerificationStatus: vs},
				})
				// Alternate which handle is the unhealthy one, so name order cannot decide.
				if i%2 == 1 {
					h, u = u, h
				}
				for handle, spec := range map[string]trafficSpec{h: c.Healthy, u: c.Unhealthy} {
					traffic(t, env, pubID, handle, spec)
				}
				res := search(t, env, key, c.Query, url.Values{"limit": {"2"}})
				if len(res) != 2 || res[0]["handle"] != h {
					t.Errorf("%q: %v first, want the healthy %s", c.Query, res[0]["handle"], h)
				}
				q := res[1]["quality"].(map[string]any)
				if q["calls"] != float64(c.Unhealthy.Calls) || q["probeFailures"] != float64(c.Unhealthy.ProbeFailures) {
					t.Errorf("%q: quality of the unhealthy one %v", c.Query, q)
				}
				if c.Unhealthy.Calls > 0 && (q["successRate"] == nil || q["p50LatencyMs"] == nil) {
					t.Errorf("%q: no success rate or latency: %v", c.Query, q)
				}
			}
		})
	}
}

// traffic records finished calls of an intent (succeeded or failed, 40 ms and 400 ms) and its
// re-probe failures.
func traffic(t *testing.T, env *apptest.Env, accountID, handle string, spec trafficSpec) {
	t.Helper()
	ctx := context.Background()
	in, err := partnerstore.New(env.App.Store).IntentByHandle(ctx, handle)
	if err != nil {
		t.Fatal(err)
	}
	now := env.Clock.Now().UTC()
	err = env.App.Store.InTx(ctx, func(ctx context.Context, q *store.Q) error {
		for i := range spec.Calls {
			state, ms := store.InvSucceeded, 40
			if i >= spec.Succeeded {
				state, ms = store.InvFailed, 400
			}
			if err := q.InsertInvocation(ctx, &store.Invocation{RequestID: uuid.NewString(), AccountID: accountID, KeyID: "k", IntentID: in.ID,
				Handle: handle, Category: in.Category, IntentRevision: 1, Args: "{}",
				CreatedAt: now, Outcome: store.Outcome{State: state, LatencyMs: &ms, FinishedAt: &now}}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if spec.ProbeFailures > 0 {
		if err := partnerstore.New(env.App.Store).RecordProbe(ctx, in.ID, "probe INCONCLUSIVE", spec.ProbeFailures, now); err != nil {
			t.Fatal(err)
		}
	}
}
