package app

import (
	"bytes"
	"encoding/base64"
	"io"
	"log/slog"
	"os"
	"path/filepath"
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

// Generated secrets are written once (0600) and read back; a configured value wins.
func TestLoadKeys(t *testing.T) {
	dir := t.TempDir()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	path := filepath.Join(dir, "sub", "server-secret.key")
	first, err := loadKeys("SWITCHBOARD_SERVER_SECRET", "", path, "server secret", log)
	if err != nil || len(first) != 1 || len(first[0]) != 32 {
		t.Fatalf("generate: %v %v", first, err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("secret file mode: %v %v", fi, err)
	}
	again, err := loadKeys("SWITCHBOARD_SERVER_SECRET", "", path, "server secret", log)
	if err != nil || !bytes.Equal(again[0], first[0]) {
		t.Fatal("a second start generated a different secret")
	}
	set := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{9}, 32))
	got, err := loadKeys("SWITCHBOARD_SERVER_SECRET", set, path, "server secret", log)
	if err != nil || !bytes.Equal(got[0], bytes.Repeat([]byte{9}, 32)) {
		t.Fatalf("configured value: %v %v", got, err)
	}
	if _, err := loadKeys("SWITCHBOARD_SERVER_SECRET", "not base64!", path, "server secret", log); err == nil || !strings.Contains(err.Error(), "SWITCHBOARD_SERVER_SECRET") {
		t.Fatalf("bad value: %v", err)
	}
	// Derived secrets differ by purpose.
	if bytes.Equal(derive(first[0], "a"), derive(first[0], "b")) {
		t.Fatal("derive ignores the purpose")
	}
}
