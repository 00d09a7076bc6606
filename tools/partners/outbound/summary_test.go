package outbound_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"
	"testing"

	"github.com/switchboard-hq/switchboard/signing"
	"github.com/switchboard-hq/switchboard/tools/partners/outbound"
)

// Issue 46 item 5: an error shown to a caller named the deployment's DNS resolver ("lookup x
// on 10.0.0.2:53: no such host"). A name that does not resolve, looked up by this machine's
// own resolver (a .invalid name: reserved, it never has an address), is "<host> does not
// resolve" at publish (CheckURL), at a call (the message dispatch shows) and at the MCP door,
// while the resolver's own error stays reachable for logs.
func TestAHostThatDoesNotResolveNamesNoResolver(t *testing.T) {
	const host = "partner.example.invalid"
	shown := func(what, msg string) {
		t.Helper()
		if !strings.Contains(msg, host+" does not resolve") {
			t.Errorf("%s: %q; want it to say %q", what, msg, host+" does not resolve")
		}
		for _, leak := range []string{"lookup", ":53", " on "} {
			if strings.Contains(msg, leak) {
				t.Errorf("%s: %q names the resolver (%q)", what, msg, leak)
			}
		}
	}
	s := newSetup(t, false, nil) // the guard on, with the system resolver
	_, err := s.client.Guard().CheckURL(context.Background(), "https://"+host+"/tool")
	if err == nil {
		t.Fatal("a name that does not resolve passed the check")
	}
	shown("CheckURL", err.Error())
	shown("Summary", outbound.Summary(err))
	var dns *net.DNSError
	if !errors.As(err, &dns) || dns.Name != host {
		t.Fatalf("the resolver's error is not kept for logs: %#v", err)
	}
	for _, binding := range []signing.Binding{signing.BindingREST, signing.BindingMCPHTTP} {
		_, err = s.client.Call(context.Background(), outbound.Target{Endpoint: "https://" + host + "/tool", Binding: binding, ToolName: "@x"}, fields())
		if err == nil || outbound.Classify(nil, err) != outbound.OutcomeNoAnswer {
			t.Fatalf("%s call to a name that does not resolve: %v", binding, err)
		}
		shown(string(binding)+" call", fmt.Sprintf("could not be reached (%v)", err))
	}
}

// A socket error names the endpoint's address and the cause, never this side's address.
func TestSummaryDropsThisSidesAddress(t *testing.T) {
	err := &net.OpError{Op: "read", Net: "tcp", Source: &net.TCPAddr{IP: net.ParseIP("10.0.0.7"), Port: 43210},
		Addr: &net.TCPAddr{IP: net.ParseIP("93.184.216.34"), Port: 443}, Err: &net.AddrError{Err: syscall.ECONNRESET.Error()}}
	if !strings.Contains(err.Error(), "10.0.0.7") {
		t.Fatalf("the test's error does not name the local address: %v", err)
	}
	got := outbound.Summary(fmt.Errorf("post: %w", err))
	if strings.Contains(got, "10.0.0.7") || !strings.Contains(got, "93.184.216.34:443") || !strings.Contains(got, "connection reset by peer") {
		t.Fatalf("Summary = %q; want the endpoint's address and the cause, not 10.0.0.7", got)
	}
}
