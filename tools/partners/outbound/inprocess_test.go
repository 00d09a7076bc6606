package outbound_test

import (
	"context"
	"net"
	"testing"

	"github.com/switchboard-hq/switchboard/tools/partners/outbound"
)

// A host served in-process (the demo partner) is let through by name alone: loopback, private
// addresses, other unresolvable names and the same name on another port stay refused.
func TestInProcessHostOpensNothingElse(t *testing.T) {
	dialed := 0
	g := &outbound.Guard{InProcess: map[string]func(context.Context) (net.Conn, error){
		"demo.switchboard.invalid": func(context.Context) (net.Conn, error) {
			dialed++
			c, s := net.Pipe()
			s.Close()
			return c, nil
		}}}
	ctx := context.Background()
	if _, err := g.CheckURL(ctx, "https://demo.switchboard.invalid/rest"); err != nil {
		t.Fatalf("the in-process host at publish: %v", err)
	}
	conn, err := g.DialContext(ctx, "tcp", "demo.switchboard.invalid:443")
	if err != nil || dialed != 1 {
		t.Fatalf("dial the in-process host: %v (dialed %d)", err, dialed)
	}
	conn.Close()
	for _, u := range []string{"https://127.0.0.1/rest", "https://10.0.0.1/rest", "https://localhost/rest", "https://other.switchboard.invalid/rest", "http://demo.switchboard.invalid/rest", "https://demo.switchboard.invalid:8443/rest"} {
		if _, err := g.CheckURL(ctx, u); err == nil {
			t.Errorf("CheckURL(%s) passed beside an in-process host", u)
		}
	}
	for _, a := range []string{"127.0.0.1:443", "demo.switchboard.invalid:8443", "localhost:443"} {
		if c, err := g.DialContext(ctx, "tcp", a); err == nil {
			c.Close()
			t.Errorf("dial %s passed beside an in-process host", a)
		}
	}
	if dialed != 1 {
		t.Errorf("the in-process dialer ran %d times, want once", dialed)
	}
}
