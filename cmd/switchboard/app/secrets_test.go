package app_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchboard-hq/switchboard/cmd/switchboard/app"
	"github.com/switchboard-hq/switchboard/cmd/switchboard/app/apptest"
	"github.com/switchboard-hq/switchboard/signing"
	"github.com/switchboard-hq/switchboard/tools/keys"
)

// productionConfig is a production configuration on a fresh data directory, offline, with the
// secrets named in supplied set as an operator sets them.
func productionConfig(t *testing.T, supplied ...string) app.Config {
	t.Helper()
	cfg := app.Defaults()
	cfg.Env, cfg.BaseURL, cfg.DataDir = "production", "https://switchboard.example.com", filepath.Join(t.TempDir(), "data")
	for _, u := range []*string{&cfg.Tokens.RPCEthereum, &cfg.Tokens.RPCArbitrum, &cfg.Tokens.RPCBase, &cfg.Tokens.RPCPolygon,
		&cfg.Tokens.RPCOptimism, &cfg.Tokens.RPCAvalanche, &cfg.Tokens.RPCBSC, &cfg.Tokens.SolanaRPC,
		&cfg.Tokens.CoinGeckoURL, &cfg.Tokens.DefiLlamaURL, &cfg.Tokens.JupiterURL} {
		*u = "http://127.0.0.1:9"
	}
	for _, s := range supplied {
		switch s {
		case "SWITCHBOARD_SIGNING_KEY_FILE":
			_, priv, _ := ed25519.GenerateKey(rand.Reader)
			pemBytes, _ := signing.MarshalPrivateKeyPEM(priv)
			cfg.SigningKeyFile = filepath.Join(t.TempDir(), "signing.pem")
			if err := os.WriteFile(cfg.SigningKeyFile, pemBytes, 0o600); err != nil {
				t.Fatal(err)
			}
		case "SWITCHBOARD_MASTER_KEY":
			cfg.MasterKey = randomKey()
		case "SWITCHBOARD_SERVER_SECRET":
			cfg.ServerSecret = randomKey()
		}
	}
	return cfg
}

func randomKey() string {
	k := make([]byte, 32)
	rand.Read(k)
	return base64.StdEncoding.EncodeToString(k)
}

var secretNames = []string{"SWITCHBOARD_SIGNING_KEY_FILE", "SWITCHBOARD_MASTER_KEY", "SWITCHBOARD_SERVER_SECRET"}

// Issue 46 item 2: production builds (serve, stdio, admin all build through app.Build) only
// with its signing key, master key and server secret supplied. Without any of them it stops
// before it opens anything, naming every one missing with the command that makes it, and
// leaves no file behind; with all three it starts and writes no secret file.
func TestProductionBuildNeedsItsSecrets(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	commands := map[string]string{"SWITCHBOARD_SIGNING_KEY_FILE": "openssl genpkey -algorithm ed25519", "SWITCHBOARD_MASTER_KEY": "openssl rand -base64 32", "SWITCHBOARD_SERVER_SECRET": "openssl rand -base64 32"}
	for mask := 0; mask < 7; mask++ { // every subset short of all three
		var supplied, missing []string
		for i, name := range secretNames {
			if mask&(1<<i) != 0 {
				supplied = append(supplied, name)
			} else {
				missing = append(missing, name)
			}
		}
		cfg := productionConfig(t, supplied...)
		a, err := app.Build(context.Background(), cfg, app.Deps{Log: log})
		if err == nil {
			a.Close()
			t.Fatalf("production built with only %v", supplied)
		}
		for _, name := range missing {
			if !strings.Contains(err.Error(), name+": ") || !strings.Contains(err.Error(), commands[name]) {
				t.Errorf("supplied %v: the error does not name %s and how to make it: %v", supplied, name, err)
			}
		}
		for _, name := range supplied {
			if strings.Contains(err.Error(), name+": ") {
				t.Errorf("supplied %v: the error names %s, which is set: %v", supplied, name, err)
			}
		}
		if _, err := os.Stat(cfg.DataDir); !os.IsNotExist(err) {
			t.Errorf("supplied %v: the refused start made its data directory (%v)", supplied, err)
		}
		if err := cfg.CheckServe(); err == nil || !strings.Contains(err.Error(), missing[0]) {
			t.Errorf("supplied %v: serve's checks pass: %v", supplied, err)
		}
	}

	cfg := productionConfig(t, secretNames...)
	if err := cfg.CheckServe(); err != nil {
		t.Fatal(err)
	}
	a, err := app.Build(context.Background(), cfg, app.Deps{Log: log})
	if err != nil {
		t.Fatalf("production with its secrets: %v", err)
	}
	a.Close()
	for _, name := range []string{"signing-key.pem", "master.key", "server-secret.key"} {
		if _, err := os.Stat(filepath.Join(cfg.DataDir, name)); !os.IsNotExist(err) {
			t.Errorf("production wrote %s in its data directory (%v)", name, err)
		}
	}

	// A signing key file that is not there is not generated either.
	cfg.SigningKeyFile = filepath.Join(t.TempDir(), "absent.pem")
	if a, err := app.Build(context.Background(), cfg, app.Deps{Log: log}); err == nil || !strings.Contains(err.Error(), "SWITCHBOARD_SIGNING_KEY_FILE") {
		if a != nil {
			a.Close()
		}
		t.Fatalf("absent signing key file: %v", err)
	}
	if _, err := os.Stat(cfg.SigningKeyFile); !os.IsNotExist(err) {
		t.Fatalf("production generated the signing key file it was pointed at: %v", err)
	}

	// The test environment still generates its own on first start.
	dev := productionConfig(t)
	dev.Env = "test"
	a, err = app.Build(context.Background(), dev, app.Deps{Log: log})
	if err != nil {
		t.Fatal(err)
	}
	a.Close()
	for _, name := range []string{"signing-key.pem", "master.key", "server-secret.key"} {
		if _, err := os.Stat(filepath.Join(dev.DataDir, name)); err != nil {
			t.Errorf("the test environment did not generate %s: %v", name, err)
		}
	}
}

// Issue 46 item 7: a default rate limit serve accepts is one `admin key issue` issues a key
// with: the highest accepted is keys.MaxRatePerMinute, and a key issued on it has it.
func TestTheHighestDefaultRateLimitIssues(t *testing.T) {
	env := apptest.Start(t, apptest.Options{Config: func(c *apptest.Config) { c.DefaultRateLimit = keys.MaxRatePerMinute }})
	if err := env.App.Config.Validate(); err != nil {
		t.Fatalf("serve refuses the highest default: %v", err)
	}
	adm := env.App.Admin()
	acct, err := adm.AccountForEmail(context.Background(), "bound@example.com")
	if err != nil {
		t.Fatal(err)
	}
	out, err := adm.IssueKey(context.Background(), keys.IssueInput{AccountID: acct, Scopes: []string{"read"}})
	if err != nil || out.Meta.RateLimitPerMinute != keys.MaxRatePerMinute {
		t.Fatalf("admin key issue on the highest default: %+v %v", out.Meta, err)
	}
	over := env.App.Config
	over.DefaultRateLimit = keys.MaxRatePerMinute + 1
	if err := over.Validate(); err == nil {
		t.Fatal("serve accepts a default admin key issue refuses")
	}
}
