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

func TestFromEnv(t *testing.T) {
	env := map[string]string{"SWITCHBOARD_ENV": "production", "SWITCHBOARD_DEFAULT_RATE_LIMIT_PER_MINUTE": "7", "SWITCHBOARD_ALLOW_LOCAL_ENDPOINTS": "true"}
	c, err := FromEnv(func(k string) string { return env[k] })
	if err != nil || c.Env != "production" || c.DefaultRateLimit != 7 || !c.AllowLocalEndpoints {
		t.Fatalf("FromEnv: %+v %v", c, err)
	}
	for k, v := range map[string]string{"SWITCHBOARD_ENV": "staging", "SWITCHBOARD_DEFAULT_RATE_LIMIT_PER_MINUTE": "x", "SWITCHBOARD_ALLOW_LOCAL_ENDPOINTS": "maybe", "SWITCHBOARD_METRICS_ADDR": "9090"} {
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

// Fee settings are parsed into typed values up front, and a bad one names itself.
func TestBillingConfig(t *testing.T) {
	c, err := billingConfig(Defaults())
	if err != nil || c.TierBps["standard"] != 30 || c.TierBps["pro"] != 15 || c.TierBps["enterprise"] != 5 || c.PlatformFloorMicro != 1000 || c.GasMarginBps != 5000 || c.DefaultTier != "standard" {
		t.Fatalf("defaults: %+v %v", c, err)
	}
	for _, tc := range []struct {
		tweak func(*Config)
		want  string
	}{
		{func(c *Config) { c.FeeTiers = "pro=15" }, `"standard"`},
		{func(c *Config) { c.FeeTiers = "standard=30,standard=20" }, "twice"},
		{func(c *Config) { c.FeeTiers = "standard=10001" }, "basis points"},
		{func(c *Config) { c.FeeTiers = "Standard=3" }, "lowercase"},
		{func(c *Config) { c.PlatformFloorUSD = "-1" }, "SWITCHBOARD_PLATFORM_FLOOR_USD"},
		{func(c *Config) { c.GasMarginBps = -1 }, "SWITCHBOARD_GAS_MARGIN_BPS"},
	} {
		cfg := Defaults()
		tc.tweak(&cfg)
		if _, err := billingConfig(cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an error naming %s", cfg.FeeTiers, err, tc.want)
		}
	}
}

// An empty SWITCHBOARD_DATA_DIR is one directory per user, whatever the working directory:
// $XDG_DATA_HOME/switchboard when that is absolute, else ~/.local/share/switchboard.
func TestDefaultDataDir(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"XDG_DATA_HOME": "/x/share", "HOME": "/home/u"}, "/x/share/switchboard"},
		{map[string]string{"XDG_DATA_HOME": "relative", "HOME": "/home/u"}, "/home/u/.local/share/switchboard"},
		{map[string]string{"HOME": "/home/u"}, "/home/u/.local/share/switchboard"},
		{map[string]string{"HOME": "/home/u", "SWITCHBOARD_DATA_DIR": "./mine"}, "./mine"},
	} {
		cfg, err := FromEnv(func(k string) string { return c.env[k] })
		if err != nil || cfg.DataDir != c.want {
			t.Errorf("%v: data dir %q (%v), want %q", c.env, cfg.DataDir, err, c.want)
		}
	}
}
