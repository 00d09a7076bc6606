package app

import (
	"bytes"
	"encoding/base64"
	"flag"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchboard-hq/switchboard/tools/keys"
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

// An empty SWITCHBOARD_DATA_DIR is one directory per user and environment, whatever the
// working directory: $XDG_DATA_HOME/switchboard/<env> when that is absolute, else
// ~/.local/share/switchboard/<env>.
func TestDefaultDataDir(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"XDG_DATA_HOME": "/x/share", "HOME": "/home/u"}, "/x/share/switchboard/test"},
		{map[string]string{"XDG_DATA_HOME": "relative", "HOME": "/home/u"}, "/home/u/.local/share/switchboard/test"},
		{map[string]string{"HOME": "/home/u"}, "/home/u/.local/share/switchboard/test"},
		{map[string]string{"HOME": "/home/u", "SWITCHBOARD_ENV": "production"}, "/home/u/.local/share/switchboard/production"},
		{map[string]string{"HOME": "/home/u", "SWITCHBOARD_DATA_DIR": "./mine"}, "./mine"},
		{map[string]string{"HOME": "/home/u", "SWITCHBOARD_DATA_DIR": "./mine", "SWITCHBOARD_ENV": "production"}, "./mine"},
	} {
		cfg, err := FromEnv(func(k string) string { return c.env[k] })
		if err == nil {
			err = cfg.Validate()
		}
		if err != nil || cfg.DataDir != c.want {
			t.Errorf("%v: data dir %q (%v), want %q", c.env, cfg.DataDir, err, c.want)
		}
	}
}

// Issue 46 item 2: the environment chosen by a flag (after FromEnv) chooses the default data
// directory too, and a data directory named by a flag wins.
func TestDataDirFollowsTheEnvFlag(t *testing.T) {
	root := t.TempDir()
	env := map[string]string{"XDG_DATA_HOME": root}
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, filepath.Join(root, "switchboard", "test")},
		{[]string{"-env", "production"}, filepath.Join(root, "switchboard", "production")},
		{[]string{"-env", "production", "-data-dir", "/elsewhere"}, "/elsewhere"},
	} {
		cfg, err := FromEnv(func(k string) string { return env[k] })
		if err != nil {
			t.Fatal(err)
		}
		if err := cfg.Validate(); err != nil { // as FromEnv's callers may, before the flags
			t.Fatal(err)
		}
		fs := flag.NewFlagSet("serve", flag.ContinueOnError)
		cfg.RegisterFlags(fs, true)
		if err := fs.Parse(c.args); err != nil {
			t.Fatal(err)
		}
		if err := cfg.Validate(); err != nil || cfg.DataDir != c.want {
			t.Errorf("%v: data dir %q (%v), want %q", c.args, cfg.DataDir, err, c.want)
		}
	}
}

// Issue 46 item 2: data an earlier release wrote at the root of the default directory (no
// folder per environment) stays readable by the test environment, which says so, while
// production refuses to start on the default until the operator says whose it is, naming the
// directory, how to move it and the setting that decides. Once a folder of the environment's
// own exists, it is used.
func TestLegacyDataDir(t *testing.T) {
	root := t.TempDir()
	base := filepath.Join(root, "switchboard")
	os.MkdirAll(filepath.Join(base, "journal"), 0o700)
	os.WriteFile(filepath.Join(base, "switchboard.db"), []byte("db"), 0o600)
	os.WriteFile(filepath.Join(base, "master.key"), []byte("k"), 0o600)
	choose := func(env string) (Config, error) {
		cfg, err := FromEnv(func(k string) string { return map[string]string{"XDG_DATA_HOME": root, "SWITCHBOARD_ENV": env}[k] })
		if err != nil {
			t.Fatal(err)
		}
		return cfg, cfg.Validate()
	}
	cfg, err := choose("test")
	if err != nil || cfg.DataDir != base || !strings.Contains(cfg.DataDirNote(), "mkdir "+filepath.Join(base, "test")) {
		t.Fatalf("test env on legacy data: %q %q %v", cfg.DataDir, cfg.DataDirNote(), err)
	}
	_, err = choose("production")
	for _, want := range []string{filepath.Join(base, "production"), "switchboard.db, master.key, journal", "SWITCHBOARD_DATA_DIR=" + filepath.Join(base, "production"), "SWITCHBOARD_DATA_DIR=" + base + " "} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("production on legacy data: %v, want it to name %q", err, want)
		}
	}
	if _, err := os.Stat(filepath.Join(base, "production")); !os.IsNotExist(err) {
		t.Fatalf("the refusal made the production folder: %v", err)
	}
	for _, env := range []string{"test", "production"} {
		os.MkdirAll(filepath.Join(base, env), 0o700)
		if cfg, err := choose(env); err != nil || cfg.DataDir != filepath.Join(base, env) || cfg.DataDirNote() != "" {
			t.Errorf("%s with its own folder: %q %q %v", env, cfg.DataDir, cfg.DataDirNote(), err)
		}
	}
}

// Issue 46 item 7: the default rate limit serve accepts is bounded as admin key issue bounds
// a key's (keys.MaxRatePerMinute).
func TestDefaultRateLimitBound(t *testing.T) {
	for n, ok := range map[int]bool{0: false, 1: true, keys.MaxRatePerMinute: true, keys.MaxRatePerMinute + 1: false, 10 * keys.MaxRatePerMinute: false} {
		cfg := Defaults()
		cfg.DefaultRateLimit = n
		err := cfg.Validate()
		if ok != (err == nil) || (err != nil && !strings.Contains(err.Error(), "SWITCHBOARD_DEFAULT_RATE_LIMIT_PER_MINUTE")) {
			t.Errorf("default rate limit %d: %v", n, err)
		}
	}
}

// Issue 46 item 7: the portal's stdio snippet names the data directory only where a pasted
// stdio entry shares this server's data: the test environment, SQLite in the data directory,
// reached on a loopback address.
func TestLocalStdioDataDir(t *testing.T) {
	for _, c := range []struct {
		tweak    func(*Config)
		postgres bool
		want     bool
	}{
		{func(c *Config) {}, false, true},
		{func(c *Config) { c.BaseURL = "http://127.0.0.1:8080" }, false, true},
		{func(c *Config) { c.BaseURL = "http://[::1]:8080" }, false, true},
		{func(c *Config) { c.BaseURL = "https://sandbox.switchboard.example.com" }, false, false},
		{func(c *Config) {}, true, false},
		{func(c *Config) { c.DatabaseURL = "/var/lib/other.db" }, false, false},
		{func(c *Config) { c.Env = "production" }, false, false},
	} {
		cfg := Defaults()
		cfg.Addr, cfg.DataDir = "127.0.0.1:8080", "/home/u/.local/share/switchboard/test"
		c.tweak(&cfg)
		if got := cfg.LocalStdioDataDir(c.postgres); (got == cfg.DataDir) != c.want || (!c.want && got != "") {
			t.Errorf("%+v postgres=%v: %q", cfg.BaseURL+" "+cfg.Env+" "+cfg.DatabaseURL, c.postgres, got)
		}
	}
}
