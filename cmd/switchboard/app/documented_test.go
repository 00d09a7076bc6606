package app_test

import (
	"testing"

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
