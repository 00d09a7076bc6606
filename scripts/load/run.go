package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/switchboard-hq/switchboard/signing"
	"github.com/switchboard-hq/switchboard/store"
)

// harness is one run's world: its processes, database and files.
type harness struct {
	o        options
	log      io.Writer
	dir      string
	procs    procs
	db       *database
	keyFile  string
	caFile   string
	proxy    string
	inproc   *inProcess // the app in the harness's process: provisioning, and -target inproc
	serve    *child     // -target serve
	relay    *child
	partner  *child
	service  string   // Switchboard's URL
	keys     []string // the callers' accounts' keys
	relayURL string
}

// run provisions the world, measures and tears everything down again, whatever happens.
func run(ctx context.Context, o options, logw io.Writer) (res *result, err error) {
	h := &harness{o: o, log: logw}
	defer func() {
		if p := recover(); p != nil {
			h.teardown()
			panic(p)
		}
		if err != nil {
			h.showLogs()
		}
		if terr := h.teardown(); err == nil && terr != nil {
			err = terr
		}
	}()
	if err := h.setUp(ctx); err != nil {
		return nil, err
	}
	// A run that measured returns its figures, whatever fails after: the caller shows both.
	res, err = h.measure(ctx)
	if err != nil {
		return nil, err
	}
	return res, h.count(res)
}

// setUp starts the partner, creates the database, provisions it through the app built in
// this process, then starts Switchboard (serve, unless -target inproc) and the relay.
func (h *harness) setUp(ctx context.Context) error {
	dir, err := os.MkdirTemp("", "switchboard-load-")
	if err != nil {
		return err
	}
	h.dir = dir
	h.keyFile = filepath.Join(dir, "signing-key.pem")
	if _, _, err := signing.LoadOrCreatePrivateKey(h.keyFile); err != nil {
		return err
	}
	if err := h.startPartner(); err != nil {
		return err
	}
	if h.db, err = createDatabase(ctx, h.o.db); err != nil {
		return err
	}
	fmt.Fprintf(h.log, "load: database %s, partner behind a %s hold at %s\n", h.db.name, h.o.delay, h.proxy)
	if err := h.exec(ctx, benchCalls); err != nil {
		return err
	}
	addr, err := freeAddr()
	if err != nil {
		return err
	}
	env := serviceEnv(filepath.Join(dir, "data"), h.db.dsn, h.keyFile, h.caFile, addr, h.o.logLevel)
	if err := h.provision(ctx, env, addr); err != nil {
		return err
	}
	if h.o.target == "serve" {
		if err := h.startServe(ctx, env, addr); err != nil {
			return err
		}
	}
	return h.startRelay()
}

// provision builds the app in this process on the run's database and makes the accounts and
// the intent through it; with -target serve it is closed again before serve starts.
func (h *harness) provision(ctx context.Context, env []string, addr string) (err error) {
	logf, err := os.Create(filepath.Join(h.dir, "inproc.log"))
	if err != nil {
		return err
	}
	if h.inproc, err = buildInProcess(ctx, env, addr, logf); err != nil {
		return err
	}
	h.service = h.inproc.url
	if h.keys, err = provision(ctx, h.inproc, h.o.accounts, h.proxy); err != nil {
		return err
	}
	if h.o.target == "serve" {
		p := h.inproc
		h.inproc = nil
		return p.close()
	}
	return nil
}

func (h *harness) startPartner() error {
	c, out, err := h.role("partner", "-key", h.keyFile, "-delay", h.o.delay.String())
	if err != nil {
		return err
	}
	h.partner = c
	var ready partnerReady
	if err := announcement(out, &ready, 30*time.Second); err != nil {
		return fmt.Errorf("partner: %w", err)
	}
	h.proxy = ready.Proxy
	h.caFile = filepath.Join(h.dir, "partner-ca.pem")
	return os.WriteFile(h.caFile, []byte(ready.CAPEM), 0o600)
}

func (h *harness) startRelay() error {
	c, out, err := h.role("relay", "-key", h.keyFile, "-target", h.proxy+"/free", "-ca", h.caFile, "-db", h.db.dsn)
	if err != nil {
		return err
	}
	h.relay = c
	var ready relayReady
	if err := announcement(out, &ready, 30*time.Second); err != nil {
		return fmt.Errorf("relay: %w", err)
	}
	h.relayURL = ready.URL
	return nil
}

// role starts the harness's own executable as one of its roles, its log to <role>.log.
func (h *harness) role(name string, args ...string) (*child, io.Reader, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, nil, err
	}
	logf, err := os.Create(filepath.Join(h.dir, name+".log"))
	if err != nil {
		return nil, nil, err
	}
	return h.procs.start(name, self, append([]string{"-role", name}, args...), nil, logf)
}

// startServe runs `switchboard serve`, built as it ships unless -bin names a binary, on the
// run's database, and waits until it is healthy.
func (h *harness) startServe(ctx context.Context, env []string, addr string) error {
	bin := h.o.bin
	if bin == "" {
		root, err := moduleRoot(ctx)
		if err != nil {
			return err
		}
		fmt.Fprintf(h.log, "load: go build ./cmd/switchboard (static, trimmed, as deploy/image/build ships it)\n")
		if bin, err = buildServe(ctx, root, h.dir); err != nil {
			return err
		}
	}
	logf, err := os.Create(filepath.Join(h.dir, "serve.log"))
	if err != nil {
		return err
	}
	c, out, err := h.procs.start("serve", bin, []string{"serve"}, env, logf)
	if err != nil {
		return err
	}
	go io.Copy(io.Discard, out)
	h.serve = c
	h.service = "http://" + addr
	return waitHealthy(ctx, h.service+"/healthz", c, 60*time.Second)
}

// exec runs a statement on the run's database.
func (h *harness) exec(ctx context.Context, stmt string) error {
	st, err := store.Open(ctx, h.db.dsn, "")
	if err != nil {
		return err
	}
	defer st.Close()
	_, err = st.DB().ExecContext(ctx, stmt)
	return err
}

// count lets Switchboard's records land (serve drains on SIGTERM; the in-process app is
// settled and closed), stops the relay, and counts the rows each side left.
func (h *harness) count(res *result) error {
	if h.serve != nil {
		h.serve.stop(2 * time.Minute)
	}
	if h.inproc != nil {
		if err := h.inproc.close(); err != nil {
			return err
		}
		h.inproc = nil
	}
	h.relay.stop(30 * time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := store.Open(ctx, h.db.dsn, "")
	if err != nil {
		return err
	}
	defer st.Close()
	if err := st.DB().NewRaw("SELECT count(*) FROM invocations WHERE handle = ?", handle).Scan(ctx, &res.Counts.InvocationRows); err != nil {
		return err
	}
	return st.DB().NewRaw("SELECT count(*) FROM bench_calls").Scan(ctx, &res.Counts.RelayRows)
}

// teardown ends every process, drops the database and removes the run's files.
func (h *harness) teardown() error {
	var errs []error
	if h.inproc != nil {
		errs = append(errs, h.inproc.close())
	}
	h.procs.killAll()
	if h.db != nil {
		if err := h.db.drop(); err != nil {
			errs = append(errs, fmt.Errorf("drop database %s: %w", h.db.name, err))
		}
	}
	if h.dir != "" {
		os.RemoveAll(h.dir)
	}
	return errors.Join(errs...)
}

// showLogs prints the end of every process's log, for a run that failed.
func (h *harness) showLogs() {
	logs, _ := filepath.Glob(filepath.Join(h.dir, "*.log"))
	for _, l := range logs {
		raw, _ := os.ReadFile(l)
		fmt.Fprintf(h.log, "--- %s (its last 2 KB)\n%s\n", filepath.Base(l), raw[max(0, len(raw)-2048):])
	}
}
