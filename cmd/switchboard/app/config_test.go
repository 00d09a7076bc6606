package app

import (
	"os"
	"strings"
	"testing"
)

// The README's configuration table must name every setting (it is the operator's reference).
func TestREADMEListsEverySetting(t *testing.T) {
	readme, err := os.ReadFile("../../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	c := Defaults()
	for _, s := range c.settings() {
		if !strings.Contains(string(readme), "`"+s.env+"`") {
			t.Errorf("README.md does not document %s", s.env)
		}
	}
}

func TestFromEnv(t *testing.T) {
	env := map[string]string{"SWITCHBOARD_ENV": "production", "SWITCHBOARD_DEFAULT_RATE_LIMIT_PER_MINUTE": "7", "SWITCHBOARD_ALLOW_LOCAL_ENDPOINTS": "true"}
	c, err := FromEnv(func(k string) string { return env[k] })
	if err != nil || c.Env != "production" || c.DefaultRateLimit != 7 || !c.AllowLocalEndpoints {
		t.Fatalf("FromEnv: %+v %v", c, err)
	}
	for k, v := range map[string]string{"SWITCHBOARD_ENV": "staging", "SWITCHBOARD_DEFAULT_RATE_LIMIT_PER_MINUTE": "x", "SWITCHBOARD_ALLOW_LOCAL_ENDPOINTS": "maybe"} {
		if _, err := FromEnv(func(key string) string {
			if key == k {
				return v
			}
			return ""
		}); err == nil || !strings.Contains(err.Error(), k) {
			t.Errorf("%s=%s: %v", k, v, err)
		}
	}
}
