package outbound_test

import (
	"context"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/tools/partners/outbound"
)

// TestABurstKeepsItsConnections: 256 calls in flight at once to one partner, then 256 more.
// The second burst reuses the first's connections: the client keeps as many idle per host
// as a burst opened, so neither Switchboard nor the partner pays a TLS handshake again
// (with 128 kept, half of them were closed and opened again).
func TestABurstKeepsItsConnections(t *testing.T) {
	const burst = 256
	s := newSetup(t, true, nil)
	var inFlight atomic.Int32
	var mu sync.Mutex
	release := make(chan struct{})
	partner := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		ch := release
		mu.Unlock()
		if inFlight.Add(1) == burst {
			close(ch) // every call of the burst holds a connection of its own now
		}
		select {
		case <-ch:
		case <-time.After(20 * time.Second):
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"success":true,"result":{}}`)
	}))
	var opened atomic.Int32
	partner.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			opened.Add(1)
		}
	}
	partner.Config.ErrorLog = log.New(io.Discard, "", 0)
	partner.StartTLS()
	t.Cleanup(partner.Close)

	fire := func() {
		inFlight.Store(0)
		var wg sync.WaitGroup
		for range burst {
			wg.Go(func() {
				res, err := s.client.Call(context.Background(), outbound.Target{Endpoint: partner.URL, Timeout: 30 * time.Second}, fields())
				if err != nil || !res.OK() {
					t.Errorf("call: %v %+v", err, res)
				}
			})
		}
		wg.Wait()
	}
	fire()
	if n := opened.Load(); n != burst {
		t.Fatalf("the first burst opened %d connections, want %d (one per call in flight)", n, burst)
	}
	mu.Lock()
	release = make(chan struct{})
	mu.Unlock()
	fire()
	if n := opened.Load() - burst; n != 0 {
		t.Fatalf("the second burst opened %d new connections, want 0: the first burst's were not kept", n)
	}
}
