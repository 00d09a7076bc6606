package app_test

import (
	"strings"
	"testing"

	"github.com/switchboard-hq/switchboard/cmd/switchboard/app"
	"github.com/switchboard-hq/switchboard/cmd/switchboard/app/apptest"
)

// Issue 35 item 7: POST /v1/keys with an integrationId nobody has answers 404, and its
// OpenAPI operation lists that 404.
func TestAnUnknownIntegrationIsADocumented404(t *testing.T) {
	env := apptest.Start(t, apptest.Options{})
	key := env.Onboard(t, "integration@example.com")["apiKey"].(string)
	status, out := env.REST(t, "POST", "/v1/keys", key, map[string]any{"name": "for nobody", "scopes": []string{"read"}, "integrationId": "no-such-integration"})
	if status != 404 {
		t.Fatalf("unknown integrationId: %d %v", status, out)
	}
	_, _, doc := apptest.Do(t, "GET", env.URL+"/openapi.json", "", nil)
	op, _ := doc["paths"].(map[string]any)["/v1/keys"].(map[string]any)["post"].(map[string]any)
	if _, ok := op["responses"].(map[string]any)["404"]; !ok {
		t.Fatalf("POST /v1/keys answers 404 but its OpenAPI responses are %v", op["responses"])
	}
}

// Issue 35 item 7: a production process that serves (serve, stdio) does not start with
// SWITCHBOARD_ALLOW_LOCAL_ENDPOINTS (it turns the SSRF guard off), with an error naming the
// setting; the test environment still may.
func TestProductionRefusesLocalEndpoints(t *testing.T) {
	for _, env := range []string{"production", "test"} {
		cfg := app.Defaults()
		cfg.Env, cfg.AllowLocalEndpoints, cfg.BaseURL = env, true, "https://switchboard.example.com"
		err := cfg.CheckServe()
		switch {
		case env == "production" && (err == nil || !strings.Contains(err.Error(), "SWITCHBOARD_ALLOW_LOCAL_ENDPOINTS") || !strings.Contains(err.Error(), "unset it")):
			t.Fatalf("production with local endpoints allowed: %v", err)
		case env == "test" && err != nil:
			t.Fatalf("test environment with local endpoints allowed: %v", err)
		}
	}
}
