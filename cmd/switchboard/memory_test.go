package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/signing"
	"github.com/switchboard-hq/switchboard/store/storetest"
)

// TestServeMemory holds serve, built as it ships, to its memory budget (issue 28): at most 60 MB
// resident (VmRSS: its own memory and the binary's pages it touched) when idle after start, at
// most 150 MB resident at its peak while 256 callers (the broker benchmark's load, issue 36)
// invoke a partner intent as fast as they can (reads on budget leases, the batch writer
// merging their records), on each database. The figures are logged for docs/performance.md.
func TestServeMemory(t *testing.T) {
	const idleMax, loadMax = 60 << 10, 150 << 10 // kB
	const callers = 256
	bin := buildBinary(t)
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			dir := t.TempDir()
			keyFile := filepath.Join(dir, "signing-key.pem")
			key, _, err := signing.LoadOrCreatePrivateKey(keyFile)
			if err != nil {
				t.Fatal(err)
			}
			work := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprint(w, `{"success":true,"result":{"done":true},"providerCostMicro":0}`)
			})
			partner, caFile := startPartner(t, signing.Middleware(serviceVerifier(key), work), dir)
			env := []string{"SWITCHBOARD_DATA_DIR=" + dir, "SWITCHBOARD_DATABASE_URL=" + storetest.DSN(t, dialect), "SWITCHBOARD_SIGNING_KEY_FILE=" + keyFile,
				"SWITCHBOARD_SMTP_URL=", "SWITCHBOARD_API_KEY=", "SWITCHBOARD_ALLOW_LOCAL_ENDPOINTS=true", "SWITCHBOARD_PARTNER_CA_FILE=" + caFile,
				"SWITCHBOARD_DEFAULT_RATE_LIMIT_PER_MINUTE=1000000", "SWITCHBOARD_DEFAULT_SPEND_LIMIT_USD=100",
				// Every caller connects from 127.0.0.1: the per-client connection cap (64) would
				// refuse most of them.
				"SWITCHBOARD_MAX_CONNS_PER_CLIENT=0"}
			s := startServe(t, bin, freeAddr(t), env)
			apiKey := s.onboard("memory@example.com")
			st, out := s.do("POST", "/v1/partner/intents", apiKey, map[string]any{
				"publicIdentifier": "@memq", "name": "memq", "description": "memory test", "category": "QUERY",
				"toolEndpoint": partner.URL + "/q", "timeoutMs": 5000, "feeRate": 0.000001,
				"payoutAddresses": map[string]string{"evm": "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"}})
			if st != 201 {
				t.Fatalf("publish: %d %v", st, out)
			}
			if st, out := s.do("POST", "/v1/partner/intents/"+out["id"].(string)+"/active", apiKey, map[string]any{"active": true}); st != 200 {
				t.Fatalf("activate: %d %v", st, out)
			}
			grant := exec.Command(bin, "admin", "credit", "memory@example.com", "100")
			grant.Env = append(os.Environ(), env...)
			if out, err := grant.CombinedOutput(); err != nil {
				t.Fatalf("admin credit: %v\n%s", err, out)
			}
			time.Sleep(2 * time.Second)
			idle, idleAnon := procStatus(t, s.cmd.Process.Pid, "VmRSS"), procStatus(t, s.cmd.Process.Pid, "RssAnon")

			client := &http.Client{Transport: &http.Transport{MaxIdleConns: 2 * callers, MaxIdleConnsPerHost: 2 * callers}, Timeout: 10 * time.Second}
			body := []byte(`{"message":"@memq hello"}`)
			var ok, failed atomic.Int64
			var firstErr sync.Once
			end := time.Now().Add(5 * time.Second)
			var wg sync.WaitGroup
			for range callers {
				wg.Go(func() {
					for time.Now().Before(end) {
						req, _ := http.NewRequest("POST", s.url+"/v1/invoke", bytes.NewReader(body))
						req.Header.Set("Authorization", "Bearer "+apiKey)
						req.Header.Set("Content-Type", "application/json")
						resp, err := client.Do(req)
						if err == nil && resp.StatusCode == 200 {
							ok.Add(1)
						} else {
							failed.Add(1)
							firstErr.Do(func() { t.Logf("a failed call: %v %v", err, resp) })
						}
						if resp != nil {
							// Read to the end, as a client that reuses its connections does: one
							// closed unread is dropped, and a new connection for every call measures
							// connection churn, not the replica.
							io.Copy(io.Discard, resp.Body)
							resp.Body.Close()
						}
					}
				})
			}
			wg.Wait()
			peak := procStatus(t, s.cmd.Process.Pid, "VmHWM")
			t.Logf("serve on %s: %d kB resident idle (%d kB its own, the rest the binary's pages), %d kB at its peak under %d invokes in 5 s from %d callers (%d failed)",
				dialect, idle, idleAnon, peak, ok.Load(), callers, failed.Load())
			if failed.Load() > 0 || ok.Load() == 0 {
				t.Fatalf("%d of %d calls failed", failed.Load(), ok.Load()+failed.Load())
			}
			if idle > idleMax || peak > loadMax {
				t.Fatalf("serve was %d kB resident idle (at most %d) and %d kB at its peak under load (at most %d)", idle, idleMax, peak, loadMax)
			}
		})
	}
}

// procStatus reads a kB figure (VmRSS, VmHWM) of process pid from /proc.
func procStatus(t *testing.T, pid int, field string) int64 {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, found := strings.CutPrefix(sc.Text(), field+":"); found {
			n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}
