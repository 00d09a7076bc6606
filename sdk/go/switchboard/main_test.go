package switchboard

// The package's tests run against a live `switchboard serve` (SQLite, the development mailer,
// every upstream pointed at a closed port) and the example partner (cmd/example-partner),
// both built from this repository and started once by TestMain.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// Live is the running service and partner of this test binary (exported for the external
// test package and the examples).
var Live struct {
	URL        string // the service's base URL
	PartnerURL string // the example partner's base URL (REST at /rest)
	log        *syncBuffer
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestMain(m *testing.M) {
	code, err := runLive(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, "live service:", err)
		os.Exit(1)
	}
	os.Exit(code)
}

// FreeAddr returns a loopback address nobody listens on.
func FreeAddr() string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// BuildBinary builds a command of this module (e.g. "cmd/switchboard") into dir.
func BuildBinary(dir, pkg string) (string, error) {
	bin := filepath.Join(dir, filepath.Base(pkg))
	out, err := exec.Command("go", "build", "-o", bin, "github.com/switchboard-hq/switchboard/"+pkg).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build %s: %v\n%s", pkg, err, out)
	}
	return bin, nil
}

// StartPartner runs the example partner against the live service on a free address and
// returns its base URL and a stop function.
func StartPartner(bin string) (string, func(), error) {
	addr := FreeAddr()
	cmd := exec.Command(bin, "-service-url", Live.URL, "-addr", addr)
	cmd.Stderr = new(syncBuffer)
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	stop := func() { cmd.Process.Kill(); cmd.Wait() }
	url := "http://" + addr
	if err := waitUp(url+"/rest", func(st int) bool { return st != 0 }); err != nil {
		stop()
		return "", nil, fmt.Errorf("example partner: %w\n%s", err, cmd.Stderr)
	}
	return url, stop, nil
}

// PartnerBin is the built example partner, for tests that start their own.
var PartnerBin string

func waitUp(url string, ok func(status int) bool) error {
	for i := 0; i < 300; i++ {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if ok(resp.StatusCode) {
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("%s did not come up", url)
}

func runLive(m *testing.M) (int, error) {
	dir, err := os.MkdirTemp("", "switchboard-go-client-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	bin, err := BuildBinary(dir, "cmd/switchboard")
	if err != nil {
		return 0, err
	}
	if PartnerBin, err = BuildBinary(dir, "cmd/example-partner"); err != nil {
		return 0, err
	}
	addr := FreeAddr()
	Live.URL = "http://" + addr
	Live.log = new(syncBuffer)
	cmd := exec.Command(bin, "serve")
	cmd.Env = append(os.Environ(),
		"SWITCHBOARD_DATA_DIR="+filepath.Join(dir, "data"), "SWITCHBOARD_DATABASE_URL=", "SWITCHBOARD_SMTP_URL=",
		"SWITCHBOARD_API_KEY=", "SWITCHBOARD_ENV=test", "SWITCHBOARD_ALLOW_LOCAL_ENDPOINTS=true",
		"SWITCHBOARD_ADDR="+addr, "SWITCHBOARD_BASE_URL="+Live.URL)
	// Nothing reaches the internet: every upstream is a closed port.
	for _, c := range []string{"ETHEREUM", "ARBITRUM", "BASE", "POLYGON", "OPTIMISM", "AVALANCHE", "BSC"} {
		cmd.Env = append(cmd.Env, "SWITCHBOARD_RPC_"+c+"=http://127.0.0.1:9")
	}
	for _, v := range []string{"SOLANA_RPC_URL", "COINGECKO_URL", "DEFILLAMA_URL", "JUPITER_URL"} {
		cmd.Env = append(cmd.Env, "SWITCHBOARD_"+v+"=http://127.0.0.1:9")
	}
	cmd.Stderr = Live.log
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	if err := waitUp(Live.URL+"/healthz", func(st int) bool { return st == 200 }); err != nil {
		return 0, fmt.Errorf("%w\n%s", err, Live.log)
	}
	url, stop, err := StartPartner(PartnerBin)
	if err != nil {
		return 0, err
	}
	defer stop()
	Live.PartnerURL = url
	return m.Run(), nil
}

var codeRe = regexp.MustCompile(`\b(\d{8})\b`)

// MailedCode returns the newest one-time code the development mailer logged for email
// (as an operator reads it from the log).
func MailedCode(email string) (string, error) {
	for i := 0; i < 200; i++ {
		var code string
		sc := bufio.NewScanner(strings.NewReader(Live.log.String()))
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if !strings.Contains(line, "DEVELOPMENT MAILER") {
				continue
			}
			var rec struct{ To, Text string }
			if json.Unmarshal([]byte(line), &rec) == nil && strings.EqualFold(rec.To, email) {
				if m := codeRe.FindStringSubmatch(rec.Text); m != nil {
					code = m[1]
				}
			}
		}
		if code != "" {
			return code, nil
		}
		time.Sleep(25 * time.Millisecond)
	}
	return "", fmt.Errorf("no code logged for %s", email)
}

// OperationIDs lists the operationIds of the client's route table.
func OperationIDs() []string { return keys(operations) }
