package dispatch_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/url"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/cmd/switchboard/app/apptest"
	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/invocations"
	"github.com/switchboard-hq/switchboard/store/storetest"
)

// A batch that PostgreSQL committed but whose answer the connection lost is sent again, and
// fails on the rows it wrote the first time. The call is recorded and charged once, and its
// caller gets the partner's answer from that record, never an error that the record
// contradicts; its webhook events, merged into that batch, land once.
func TestAnAnswerLostAfterTheCommitIsNotAFailure(t *testing.T) {
	if os.Getenv("TEST_DATABASE_URL") == "" {
		t.Skip("PostgreSQL only (TEST_DATABASE_URL): SQLite runs in the process, no answer of its is lost on the way")
	}
	dsn, err := url.Parse(storetest.DSN(t, "postgres"))
	if err != nil {
		t.Fatal(err)
	}
	proxy := startLossyProxy(t, dsn.Host)
	dsn.Host = proxy.addr
	w := newWorldOn(t, apptest.Options{Store: storetest.OpenURL(t, dsn.String())}, nil)
	w.publish(t, "@lost", "/cost", nil)
	w.listen(t)
	before := w.credit(t)

	// The next batch sent whole, BEGIN to COMMIT, reaches PostgreSQL; its answer does not.
	proxy.loseAnswerTo.Store(true)
	status, out := w.invoke(t, w.caller, map[string]any{"message": "@lost what is the answer"})
	if status != 200 || out["result"] == nil {
		t.Fatalf("invoke after a lost commit answer: %d %v", status, out)
	}
	if proxy.lost.Load() != 1 {
		t.Fatalf("the proxy lost %d answers, want 1: the batch did not go in one trip", proxy.lost.Load())
	}
	requestID := out["requestId"].(string)
	inv, err := invocations.New(w.settledStore(t)).Get(context.Background(), w.callerID, requestID)
	if err != nil || inv.State != store.InvSucceeded {
		t.Fatalf("the call's record: %+v %v", inv, err)
	}
	if hits := w.hits("/cost"); hits != 1 {
		t.Fatalf("the partner was called %d times, want 1", hits)
	}
	// Its events went in the merged write sent again: in the outbox once, for the caller and
	// for the partner.
	var evs []store.WebhookEvent
	if err := w.env.App.Store.DB().NewSelect().Model(&evs).Where("type = 'call.succeeded' AND body LIKE ?", "%"+requestID+"%").Scan(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(evs) != 2 || evs[0].AccountID == evs[1].AccountID {
		t.Fatalf("the call's events: %+v, want one for the caller and one for the partner", evs)
	}
	// Charged once: as much as a second call of the same intent, whose answer arrives.
	lost := before - w.credit(t)
	if status, out := w.invoke(t, w.caller, map[string]any{"message": "@lost and again"}); status != 200 {
		t.Fatalf("a second call: %d %v", status, out)
	}
	if again := before - lost - w.credit(t); lost <= 0 || lost != again {
		t.Fatalf("the call whose commit answer was lost cost %d µUSD, the next one %d", lost, again)
	}
	w.ledgerOK(t)
}

// lossyProxy forwards TCP to PostgreSQL; armed, it forwards the next simple query that ends
// with COMMIT, drops whatever the server answers, and closes that connection once the server
// has had time to run it.
type lossyProxy struct {
	addr         string
	loseAnswerTo atomic.Bool
	lost         atomic.Int32
}

func startLossyProxy(t *testing.T, target string) *lossyProxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &lossyProxy{addr: l.Addr().String()}
	var wg sync.WaitGroup
	t.Cleanup(func() { l.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			var dropping atomic.Bool
			wg.Go(func() { // the server's answers, unless this connection is losing them
				buf := make([]byte, 64<<10)
				for {
					n, err := s.Read(buf)
					if n > 0 && !dropping.Load() {
						if _, werr := c.Write(buf[:n]); werr != nil {
							return
						}
					}
					if err != nil {
						c.Close()
						return
					}
				}
			})
			wg.Go(func() { // the client's messages
				defer s.Close()
				buf := make([]byte, 64<<10)
				for {
					n, err := c.Read(buf)
					if n > 0 {
						chunk := buf[:n]
						// A simple query: 'Q', its length (4 bytes), its text, NUL.
						oneTrip := len(chunk) > 5 && chunk[0] == 'Q' && bytes.HasPrefix(chunk[5:], []byte("BEGIN;\n")) && bytes.HasSuffix(chunk, []byte(";\nCOMMIT\x00"))
						if oneTrip && p.loseAnswerTo.CompareAndSwap(true, false) {
							dropping.Store(true)
							s.Write(chunk)
							time.Sleep(300 * time.Millisecond) // PostgreSQL runs it, commit and all
							p.lost.Add(1)
							c.Close()
							return
						}
						if _, werr := s.Write(chunk); werr != nil {
							return
						}
					}
					if err != nil {
						if err != io.EOF {
							c.Close()
						}
						return
					}
				}
			})
		}
	})
	return p
}
