package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/switchboard-hq/switchboard/cmd/switchboard/app"
	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/keys"
)

// handle is the intent the callers invoke, at the partner's /free behind the 20 ms proxy.
const handle = "@load"

// payout is the intent's payout address (nothing is paid out in a run).
const payout = "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"

// database is a PostgreSQL database of the run's own, created on the server of -db.
type database struct {
	admin *store.Store // connected to -db, to drop it again
	name  string
	dsn   string
}

// createDatabase creates a fresh database on the server base names and returns its DSN.
func createDatabase(ctx context.Context, base string) (*database, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return nil, fmt.Errorf("-db %q: want a postgres:// URL", base)
	}
	if err := loopbackOnly(u.Hostname()); err != nil {
		return nil, err
	}
	// CREATE and DROP DATABASE wait for a checkpoint, which on a busy server takes longer
	// than the driver's default read timeout (10 s).
	aq := u.Query()
	if aq.Get("read_timeout") == "" {
		aq.Set("read_timeout", "120s")
	}
	au := *u
	au.RawQuery = aq.Encode()
	admin, err := store.Open(ctx, au.String(), "")
	if err != nil {
		return nil, fmt.Errorf("connect -db: %w", err)
	}
	b := make([]byte, 5)
	rand.Read(b)
	name := "sbload_" + hex.EncodeToString(b)
	if _, err := admin.DB().ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		admin.Close()
		return nil, fmt.Errorf("create database %s: %w", name, err)
	}
	u.Path = "/" + name
	q := u.Query()
	q.Del("search_path")
	u.RawQuery = q.Encode()
	return &database{admin: admin, name: name, dsn: u.String()}, nil
}

// drop drops the database, whoever is still connected to it.
func (d *database) drop() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	defer d.admin.Close()
	_, err := d.admin.DB().ExecContext(ctx, "DROP DATABASE IF EXISTS "+d.name+" WITH (FORCE)")
	return err
}

// loopbackOnly refuses a host that is not a loopback address or localhost: the harness
// talks to nothing else.
func loopbackOnly(host string) error {
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("%q is not a loopback address: the harness runs on loopback only", host)
}

// serviceEnv is the configuration serve runs with (and the in-process app is built from):
// the development setting, trusting the loopback partner's certificate, no cap on
// connections from one address (as behind a proxy), limits that do not bind, every upstream
// of the token tools pointed at a closed loopback port.
func serviceEnv(dir, dsn, keyFile, caFile, addr, logLevel string) []string {
	env := []string{
		"SWITCHBOARD_ENV=test",
		"SWITCHBOARD_ADDR=" + addr,
		"SWITCHBOARD_BASE_URL=http://" + addr,
		"SWITCHBOARD_DATA_DIR=" + dir,
		"SWITCHBOARD_DATABASE_URL=" + dsn,
		"SWITCHBOARD_SIGNING_KEY_FILE=" + keyFile,
		"SWITCHBOARD_SMTP_URL=",
		"SWITCHBOARD_API_KEY=",
		"SWITCHBOARD_ALLOW_LOCAL_ENDPOINTS=true",
		"SWITCHBOARD_PARTNER_CA_FILE=" + caFile,
		"SWITCHBOARD_DEMO_PARTNER=false",
		"SWITCHBOARD_MAX_CONNS_PER_CLIENT=0",
		"SWITCHBOARD_DEFAULT_RATE_LIMIT_PER_MINUTE=1000000",
		"SWITCHBOARD_DEFAULT_SPEND_LIMIT_USD=1000000",
	}
	if logLevel != "" {
		env = append(env, "SWITCHBOARD_LOG_LEVEL="+logLevel)
	}
	for _, v := range []string{"RPC_ETHEREUM", "RPC_ARBITRUM", "RPC_BASE", "RPC_POLYGON", "RPC_OPTIMISM", "RPC_AVALANCHE",
		"RPC_BSC", "SOLANA_RPC_URL", "COINGECKO_URL", "DEFILLAMA_URL", "JUPITER_URL"} {
		env = append(env, "SWITCHBOARD_"+v+"=http://127.0.0.1:9")
	}
	return env
}

// configOf is the app's configuration from env, read as serve reads its environment.
func configOf(env []string) (app.Config, error) {
	vars := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	cfg, err := app.FromEnv(func(k string) string { return vars[k] })
	if err != nil {
		return cfg, err
	}
	return cfg, cfg.Validate()
}

// inProcess is the app built in the harness's own process on the run's database, served on a
// loopback listener: the provisioning goes through it, and -target inproc measures it.
type inProcess struct {
	app *app.App
	srv *http.Server
	url string
}

// buildInProcess builds the app from env (its store on the run's database, migrated) and
// serves its front on addr, its log lines to logw.
func buildInProcess(ctx context.Context, env []string, addr string, logw io.Writer) (*inProcess, error) {
	cfg, err := configOf(env)
	if err != nil {
		return nil, fmt.Errorf("configuration: %w", err)
	}
	a, err := app.Build(ctx, cfg, app.Deps{Log: slog.New(slog.NewJSONHandler(logw, nil))})
	if err != nil {
		return nil, fmt.Errorf("build the app: %w", err)
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		a.Stop()
		a.Close()
		return nil, err
	}
	p := &inProcess{app: a, srv: &http.Server{Handler: a.Handler(), ReadHeaderTimeout: 10 * time.Second}, url: "http://" + addr}
	go p.srv.Serve(l)
	return p, nil
}

// close stops serving, lets the records land and closes the app.
func (p *inProcess) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p.srv.Shutdown(ctx)
	err := p.app.Settled(ctx)
	p.app.Stop()
	if cerr := p.app.Close(); err == nil {
		err = cerr
	}
	return err
}

// provision makes the run's accounts through the app's operator facade, as `switchboard
// admin` does (an account, a root key with every scope, credit), and publishes and activates
// the intent at the proxy through the REST door, as a publisher does. It returns the
// callers' keys.
func provision(ctx context.Context, p *inProcess, accounts int, proxy string) ([]string, error) {
	adm := p.app.Admin()
	scopes := tools.ScopeNames()
	key := func(email string) (string, error) {
		id, err := adm.AccountForEmail(ctx, email)
		if err != nil {
			return "", fmt.Errorf("account %s: %w", email, err)
		}
		if _, err := adm.Credit(ctx, id, 1_000_000*1_000_000); err != nil { // a million USD, in micro-USD
			return "", fmt.Errorf("credit %s: %w", email, err)
		}
		out, err := adm.IssueKey(ctx, keys.IssueInput{AccountID: id, Name: "load", Scopes: scopes})
		if err != nil {
			return "", fmt.Errorf("key for %s: %w", email, err)
		}
		return out.Secret, nil
	}
	publisher, err := key("publisher@load.example")
	if err != nil {
		return nil, err
	}
	st, out := rest(ctx, p.url, "POST", "/v1/partner/intents", publisher, map[string]any{
		"publicIdentifier": handle, "name": "load", "description": "the load harness's partner at /free behind a 20 ms hold",
		"category": "QUERY", "toolEndpoint": proxy + "/free", "timeoutMs": 10000,
		"feeRate": 0.001, "payoutAddresses": map[string]string{"evm": payout}})
	if st != 201 {
		return nil, fmt.Errorf("publish %s: %d %v", handle, st, out)
	}
	id, _ := out["id"].(string)
	if st, out := rest(ctx, p.url, "POST", "/v1/partner/intents/"+id+"/active", publisher, map[string]any{"active": true}); st != 200 {
		return nil, fmt.Errorf("activate %s: %d %v", handle, st, out)
	}
	callers := make([]string, accounts)
	for i := range callers {
		if callers[i], err = key(fmt.Sprintf("caller%d@load.example", i)); err != nil {
			return nil, err
		}
	}
	return callers, nil
}

// rest calls the REST door once and decodes its JSON answer.
func rest(ctx context.Context, base, method, path, key string, body any) (int, map[string]any) {
	raw, _ := json.Marshal(body)
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, method, base+path, bytes.NewReader(raw))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-api-key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, map[string]any{"transport": err.Error()}
	}
	defer resp.Body.Close()
	var out map[string]any
	json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// freeAddr is a free loopback address to listen on.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// buildServe builds switchboard as deploy/image/build ships it (static, no cgo, paths
// trimmed, symbols stripped) from the module at root into dir.
func buildServe(ctx context.Context, root, dir string) (string, error) {
	bin := filepath.Join(dir, "switchboard")
	cmd := execCommand(ctx, "go", "build", "-trimpath", "-ldflags", "-s -w", "-o", bin, "./cmd/switchboard")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/switchboard: %w\n%s", err, out)
	}
	return bin, nil
}

// moduleRoot is the directory of the module the harness belongs to (go env GOMOD).
func moduleRoot(ctx context.Context) (string, error) {
	out, err := execCommand(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", fmt.Errorf("run the harness inside the switchboard module")
	}
	return filepath.Dir(mod), nil
}
