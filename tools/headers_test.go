package tools_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/switchboard-hq/switchboard/tools"
)

func TestKeyFromHeader(t *testing.T) {
	cases := []struct {
		name    string
		headers [][2]string
		key     string
		refused bool
	}{
		{"none", nil, "", false},
		{"x-api-key", [][2]string{{"x-api-key", " sb_test_a "}}, "sb_test_a", false},
		{"Bearer", [][2]string{{"Authorization", "bearer sb_test_a"}}, "sb_test_a", false},
		{"both, the same", [][2]string{{"x-api-key", "sb_test_a"}, {"Authorization", "Bearer sb_test_a"}}, "sb_test_a", false},
		{"x-api-key twice, the same", [][2]string{{"x-api-key", "sb_test_a"}, {"x-api-key", "sb_test_a"}}, "sb_test_a", false},
		{"empty x-api-key beside Bearer", [][2]string{{"x-api-key", ""}, {"Authorization", "Bearer sb_test_b"}}, "sb_test_b", false},
		{"Basic beside x-api-key", [][2]string{{"x-api-key", "sb_test_a"}, {"Authorization", "Basic dTpw"}}, "sb_test_a", false},
		{"x-api-key and Bearer differ", [][2]string{{"x-api-key", "sb_test_a"}, {"Authorization", "Bearer sb_test_b"}}, "", true},
		{"x-api-key twice, different", [][2]string{{"x-api-key", "sb_test_a"}, {"x-api-key", "sb_test_b"}}, "", true},
		{"Bearer twice, different", [][2]string{{"Authorization", "Bearer sb_test_a"}, {"Authorization", "Bearer sbat_b"}}, "", true},
		{"a third, different, after two the same", [][2]string{{"x-api-key", "sb_test_a"}, {"Authorization", "Bearer sb_test_a"}, {"Authorization", "Bearer sb_test_c"}}, "", true},
	}
	for _, c := range cases {
		h := http.Header{}
		for _, kv := range c.headers {
			h.Add(kv[0], kv[1])
		}
		key, e := tools.KeyFromHeader(h)
		switch {
		case c.refused && (e == nil || e.Code != tools.CodeBadInput || !strings.Contains(e.Message, "two different credentials") || key != ""):
			t.Errorf("%s: %q %v, want BAD_INPUT", c.name, key, e)
		case !c.refused && (e != nil || key != c.key):
			t.Errorf("%s: %q %v, want %q", c.name, key, e, c.key)
		}
	}
}
